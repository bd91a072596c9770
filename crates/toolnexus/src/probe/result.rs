//! What a probe is and what it finds: the four probes, their verdicts and
//! one question's result, with the tolerances and cut-offs the verdicts use.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use crate::classifier::Question;

/// The smallest tolerance for a shift or a noise floor (order, polarity, repeat).
pub const TOLERANCE: f64 = 0.05;
/// The tolerance is this many times a question's noise floor, when larger.
pub const NOISE_FACTOR: f64 = 2.0;
/// A mean shift (or noise floor) from which a probe's verdict is `broken`.
pub const BROKEN_SHIFT: f64 = 0.3;
/// Shuffle: a follow share this far below the repeat agreement is still `ok`.
pub const FOLLOW_SLACK: f64 = 0.1;
/// Shuffle: a follow share below this is `broken`.
pub const FOLLOW_BROKEN: f64 = 0.5;
/// Bootstrap resamples for a mean's 95% range.
pub const BOOTSTRAP_RESAMPLES: usize = 1000;
/// The prefix of a negated noul's instructions (the polarity probe).
pub const NEGATION_PREFIX: &str = "Is the following false? ";

/// One probe.
///
/// ```
/// use toolnexus::probe::Probe;
///
/// assert_eq!("order".parse::<Probe>(), Ok(Probe::Order));
/// assert_eq!(Probe::Polarity.as_str(), "polarity");
/// assert!("sideways".parse::<Probe>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Probe {
    /// Descriptions moved across option ids: does the pick follow the description?
    Shuffle,
    /// Options reversed and rotated: how far does the distribution move?
    Order,
    /// A noul and its negation: p + p(negation) ≈ 1?
    Polarity,
    /// The same request again: the noise floor.
    Repeat,
}

impl Probe {
    /// Every probe, in the order they are reported.
    pub const ALL: [Probe; 4] = [Probe::Shuffle, Probe::Order, Probe::Polarity, Probe::Repeat];

    /// The probe's name: `shuffle`, `order`, `polarity` or `repeat`.
    ///
    /// ```
    /// assert_eq!(toolnexus::probe::Probe::Shuffle.as_str(), "shuffle");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Probe::Shuffle => "shuffle",
            Probe::Order => "order",
            Probe::Polarity => "polarity",
            Probe::Repeat => "repeat",
        }
    }

    /// What the figure is, in a few words.
    ///
    /// ```
    /// assert_eq!(toolnexus::probe::Probe::Polarity.figure_name(), "mean |p + p_neg - 1|");
    /// ```
    pub fn figure_name(self) -> &'static str {
        match self {
            Probe::Shuffle => "share following the description",
            Probe::Order => "mean shift (TV distance)",
            Probe::Polarity => "mean |p + p_neg - 1|",
            Probe::Repeat => "noise floor (mean shift)",
        }
    }

    pub(super) fn applies_to(self, q: &Question) -> bool {
        matches!(
            (self, q),
            (Probe::Shuffle | Probe::Order, Question::Choice(_))
                | (Probe::Polarity, Question::Noul(_))
                | (
                    Probe::Repeat,
                    Question::Noul(_) | Question::Choice(_) | Question::Score(_)
                )
        )
    }
}

impl fmt::Display for Probe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Probe {
    type Err = String;
    fn from_str(s: &str) -> Result<Probe, String> {
        Probe::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!("unknown probe {s:?} (probes: shuffle, order, polarity, repeat)")
            })
    }
}

/// A probe's plain verdict on one question.
///
/// ```
/// use toolnexus::probe::Verdict;
/// assert_eq!(Verdict::Sensitive.as_str(), "sensitive");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the tolerance: the encoding is read as meant.
    Ok,
    /// Beyond the tolerance, short of broken: worth a look.
    Sensitive,
    /// The encoding is not read as meant (see the module docs for the cuts).
    Broken,
    /// No state could be measured: every call it needed failed.
    Unmeasured,
}

impl Verdict {
    /// `ok`, `sensitive`, `broken` or `unmeasured`.
    ///
    /// ```
    /// assert_eq!(toolnexus::probe::Verdict::Broken.as_str(), "broken");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Sensitive => "sensitive",
            Verdict::Broken => "broken",
            Verdict::Unmeasured => "unmeasured",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One probe's figure on one question.
///
/// ```
/// use toolnexus::probe::{Probe, ProbeResult, Verdict};
///
/// let r = ProbeResult {
///     question: "desk".into(), probe: Probe::Order, figure: Some(0.02), range: Some((0.0, 0.05)),
///     states: 20, failed: 0, verdict: Verdict::Ok, line: "the order does not move the answer".into(),
/// };
/// assert_eq!(r.to_value()["verdict"], "ok");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeResult {
    /// The question's key.
    pub question: String,
    /// The probe.
    pub probe: Probe,
    /// The figure ([`Probe::figure_name`]); `None` when no state was measured.
    pub figure: Option<f64>,
    /// Its 95% range (Wilson for the shuffle's share, bootstrap otherwise).
    pub range: Option<(f64, f64)>,
    /// States measured.
    pub states: usize,
    /// States left out because a call they needed failed (or, for the
    /// shuffle, the original answer was missing).
    pub failed: usize,
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict in plain words, one line.
    pub line: String,
}

impl ProbeResult {
    /// The result as JSON: `question`, `probe`, `figure`, `range` (`[lo, hi]`
    /// or null), `states`, `failed`, `verdict`, `line`.
    ///
    /// ```
    /// # use toolnexus::probe::{Probe, ProbeResult, Verdict};
    /// # let r = ProbeResult { question: "q".into(), probe: Probe::Repeat, figure: None, range: None,
    /// #     states: 0, failed: 3, verdict: Verdict::Unmeasured, line: "no state answered".into() };
    /// assert!(r.to_value()["figure"].is_null());
    /// ```
    pub fn to_value(&self) -> Value {
        json!({
            "question": self.question,
            "probe": self.probe.as_str(),
            "figure": self.figure,
            "range": self.range.map(|(lo, hi)| json!([lo, hi])),
            "states": self.states,
            "failed": self.failed,
            "verdict": self.verdict.as_str(),
            "line": self.line,
        })
    }
}

/// One request sent per state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Variant {
    Original,
    Shuffled,
    Reversed,
    Rotated,
    Negated,
    Repeat(usize),
}
