//! Gates and policies: first-match rules over banded answers that either decide
//! or escalate. Pure: no I/O apart from [`Policy::ask`], which evaluates once.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

use super::bands::{Asked, Banded, Bands, Verdict, ask, band_keyed};
use super::thresholds::Thresholds;
use crate::classifier::{Classifier, ClassifierError, Decision, EvalContext, Questions};

/// What a [`Rule`] tests about the answer under its key.
///
/// ```
/// use toolnexus::judge::{Condition, Rule};
/// let r = Rule::below("risk", 0.3, "allow");
/// assert_eq!(r.condition, Condition::Below(0.3));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Condition {
    /// A noul's probability, or a score's expected level, is strictly below this.
    Below(f64),
    /// A noul's probability, or a score's expected level, is at least this.
    AtLeast(f64),
    /// A choice picked this option id; or a noul's verdict is `"yes"` / `"no"`.
    Is(String),
}

/// One gate rule: a key, a condition, and the caller-named outcome it decides.
///
/// Which answers a condition fits: `below` and `at_least` fit noul and score
/// answers; `is` fits a choice (compared with the picked id) and a noul (compared
/// with the verdict, `"yes"` or `"no"`). Any other pairing is a *misfit* and
/// escalates rather than guessing.
///
/// The outcome is any value you name: a string label, or your own enum of actions.
///
/// ```
/// use toolnexus::judge::Rule;
///
/// #[derive(Debug, Clone, PartialEq)]
/// enum Action { Allow, Review, Route(&'static str) }
///
/// let rules = vec![
///     Rule::at_least("risk", 0.7, Action::Review),
///     Rule::below("risk", 0.3, Action::Allow),
///     Rule::is("desk", "billing", Action::Route("billing")),
/// ];
/// assert_eq!(rules[2].to_string(), "desk is \"billing\"");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Rule<O> {
    /// The question key whose answer is tested.
    pub key: String,
    /// The test.
    pub condition: Condition,
    /// What the rule decides when it fires.
    pub outcome: O,
}

impl<O> Rule<O> {
    /// Fires when the noul probability or score level under `key` is below `threshold`.
    ///
    /// ```
    /// let r = toolnexus::judge::Rule::below("risk", 0.3, "allow");
    /// assert_eq!(r.to_string(), "risk below 0.3");
    /// ```
    pub fn below(key: impl Into<String>, threshold: f64, outcome: O) -> Rule<O> {
        Rule {
            key: key.into(),
            condition: Condition::Below(threshold),
            outcome,
        }
    }

    /// Fires when the noul probability or score level under `key` is at least `threshold`.
    ///
    /// ```
    /// let r = toolnexus::judge::Rule::at_least("urgency", 2.0, "page on-call");
    /// assert_eq!(r.to_string(), "urgency at_least 2");
    /// ```
    pub fn at_least(key: impl Into<String>, threshold: f64, outcome: O) -> Rule<O> {
        Rule {
            key: key.into(),
            condition: Condition::AtLeast(threshold),
            outcome,
        }
    }

    /// Fires when the choice under `key` picked `value` (or a noul's verdict is
    /// `value`, `"yes"` or `"no"`).
    ///
    /// ```
    /// let r = toolnexus::judge::Rule::is("refund_requested", "yes", "refund queue");
    /// assert_eq!(r.key, "refund_requested");
    /// ```
    pub fn is(key: impl Into<String>, value: impl Into<String>, outcome: O) -> Rule<O> {
        Rule {
            key: key.into(),
            condition: Condition::Is(value.into()),
            outcome,
        }
    }
}

impl<O> fmt::Display for Rule<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.condition {
            Condition::Below(t) => write!(f, "{} below {t}", self.key),
            Condition::AtLeast(t) => write!(f, "{} at_least {t}", self.key),
            Condition::Is(v) => write!(f, "{} is {v:?}", self.key),
        }
    }
}

/// Why a gate asked for input instead of deciding.
///
/// ```
/// use toolnexus::judge::Escalation;
/// assert_eq!(Escalation::NoRuleFired.as_str(), "no rule fired");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Escalation {
    /// The decision has no answer under the rule's key.
    Missing,
    /// The answer under the rule's key is not sure under the bands.
    Uncertain,
    /// The rule's condition does not fit the answer's type.
    Misfit,
    /// No rule fired and there is no default.
    NoRuleFired,
}

impl Escalation {
    /// `"missing answer"`, `"uncertain answer"`, `"rule does not fit the answer"`
    /// or `"no rule fired"`.
    ///
    /// ```
    /// assert_eq!(toolnexus::judge::Escalation::Missing.as_str(), "missing answer");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Escalation::Missing => "missing answer",
            Escalation::Uncertain => "uncertain answer",
            Escalation::Misfit => "rule does not fit the answer",
            Escalation::NoRuleFired => "no rule fired",
        }
    }
}

impl fmt::Display for Escalation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request for input: the gate would not decide, and says why and where.
///
/// `Display` gives one line, e.g.
/// `needs input: rule 0 (risk below 0.3): uncertain answer: noul 0.5 is not below 0.3 nor above 0.7`
/// or `needs input: no rule fired`.
///
/// ```
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Asked, Bands, Escalation, Rule, gate};
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{"risk":{"type":"noul","noul":0.5}}}"#)?;
/// let r = gate(&Asked::new(d, Bands::default()), &[Rule::below("risk", 0.3, "allow")]);
/// let req = r.needs_input().expect("0.5 is uncertain");
/// assert_eq!(req.reason, Escalation::Uncertain);
/// assert_eq!(req.rule, Some(0));
/// assert_eq!(req.rule_text.as_deref(), Some("risk below 0.3"));
/// assert_eq!(req.key.as_deref(), Some("risk"));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct InputRequest {
    /// Why.
    pub reason: Escalation,
    /// The index of the rule that escalated (`None` for [`Escalation::NoRuleFired`]).
    pub rule: Option<usize>,
    /// The rule as text, e.g. `risk below 0.3`.
    pub rule_text: Option<String>,
    /// The question key involved.
    pub key: Option<String>,
    /// What was found, in words (empty for [`Escalation::NoRuleFired`]).
    pub detail: String,
}

impl InputRequest {
    /// A request naming no rule and no key (for fakes and tests; the gate fills both).
    ///
    /// ```
    /// use toolnexus::judge::{Escalation, InputRequest};
    /// let q = InputRequest::new(Escalation::NoRuleFired, "");
    /// assert_eq!(q.to_string(), "needs input: no rule fired");
    /// ```
    pub fn new(reason: Escalation, detail: impl Into<String>) -> InputRequest {
        InputRequest {
            reason,
            rule: None,
            rule_text: None,
            key: None,
            detail: detail.into(),
        }
    }
}

impl fmt::Display for InputRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("needs input: ")?;
        if let (Some(i), Some(t)) = (self.rule, &self.rule_text) {
            write!(f, "rule {i} ({t}): ")?;
        }
        f.write_str(self.reason.as_str())?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// What a gate or policy concluded: an outcome, or a request for input.
///
/// ```
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Asked, Bands, Rule, Ruling, gate};
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{"risk":{"type":"noul","noul":0.1}}}"#)?;
/// let r = gate(&Asked::new(d, Bands::default()), &[Rule::below("risk", 0.3, "allow")]);
/// assert_eq!(r, Ruling::Decided { outcome: "allow", rule: Some(0) });
/// assert_eq!(r.outcome(), Some(&"allow"));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Ruling<O> {
    /// A rule fired (`rule: Some(index)`) or the policy's default applied (`rule: None`).
    Decided {
        /// The outcome decided.
        outcome: O,
        /// The index of the rule that fired; `None` when the default applied.
        rule: Option<usize>,
    },
    /// The gate would not decide: a person or more context must.
    NeedsInput(InputRequest),
}

impl<O> Ruling<O> {
    /// Whether an outcome was decided.
    ///
    /// ```
    /// use toolnexus::judge::Ruling;
    /// assert!(Ruling::Decided { outcome: "ok", rule: None }.is_decided());
    /// ```
    pub fn is_decided(&self) -> bool {
        matches!(self, Ruling::Decided { .. })
    }

    /// The outcome, when one was decided.
    ///
    /// ```
    /// use toolnexus::judge::Ruling;
    /// assert_eq!(Ruling::Decided { outcome: 7, rule: Some(1) }.outcome(), Some(&7));
    /// ```
    pub fn outcome(&self) -> Option<&O> {
        match self {
            Ruling::Decided { outcome, .. } => Some(outcome),
            Ruling::NeedsInput(_) => None,
        }
    }

    /// The request for input, when the gate escalated.
    ///
    /// ```
    /// use toolnexus::judge::{Escalation, InputRequest, Ruling};
    /// let r: Ruling<()> = Ruling::NeedsInput(InputRequest::new(Escalation::NoRuleFired, ""));
    /// assert_eq!(r.needs_input().map(|q| q.to_string()).as_deref(), Some("needs input: no rule fired"));
    /// ```
    pub fn needs_input(&self) -> Option<&InputRequest> {
        match self {
            Ruling::NeedsInput(r) => Some(r),
            Ruling::Decided { .. } => None,
        }
    }
}

/// Applies `rules` to the banded answers of `asked`, first match wins.
///
/// For each rule in order: a missing answer escalates ([`Escalation::Missing`]); a
/// condition that does not fit the answer's type escalates ([`Escalation::Misfit`]);
/// an answer that is not sure under the bands escalates ([`Escalation::Uncertain`]);
/// otherwise the condition is tested and, if it holds, the rule's outcome is
/// decided. When no rule fires the gate escalates with `no rule fired`; use a
/// [`Policy`] to declare a default instead.
///
/// ```
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Asked, Bands, Rule, gate};
///
/// let d = Decision::from_slice(br#"{"model":"m","answers":{
///     "desk":{"type":"choice","choice":"billing","probabilities":{"billing":0.93,"shipping":0.07},"confidence":0.93}}}"#)?;
/// let asked = Asked::new(d, Bands::default());
/// let rules = [Rule::is("desk", "shipping", "warehouse"), Rule::is("desk", "billing", "finance")];
/// assert_eq!(gate(&asked, &rules).outcome(), Some(&"finance"));
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn gate<O: Clone>(asked: &Asked, rules: &[Rule<O>]) -> Ruling<O> {
    run(
        &asked.answers,
        &asked.bands,
        &asked.key_bands,
        rules,
        None,
        false,
    )
}

/// Rules with a declared fall-through: the bands to read answers with, a
/// `default` outcome when no rule fires, and whether an uncertain answer skips
/// its rule (`skip_uncertain: true`) instead of escalating.
///
/// A missing answer and a misfit rule always escalate. With no default, a
/// policy where no rule fires escalates with reason `no rule fired`.
///
/// ```
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{Policy, Rule};
///
/// let policy = Policy {
///     rules: vec![Rule::at_least("risk", 0.7, "block"), Rule::below("risk", 0.3, "allow")],
///     default: Some("review"),
///     skip_uncertain: true,
///     ..Default::default()
/// };
/// let d = Decision::from_slice(br#"{"model":"m","answers":{"risk":{"type":"noul","noul":0.5}}}"#)?;
/// let r = policy.decide(&d);
/// assert_eq!(r.outcome(), Some(&"review"), "uncertain skipped, default applied");
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Policy<O> {
    /// The rules, tried in order.
    pub rules: Vec<Rule<O>>,
    /// The outcome when no rule fires; `None` escalates instead.
    pub default: Option<O>,
    /// How answers are read.
    pub bands: Bands,
    /// An uncertain answer skips its rule instead of escalating.
    pub skip_uncertain: bool,
    /// Per-question bands that replace `bands` for their keys
    /// (see [`Policy::with_thresholds`]).
    pub key_bands: BTreeMap<String, Bands>,
}

impl<O> Default for Policy<O> {
    fn default() -> Self {
        Policy {
            rules: Vec::new(),
            default: None,
            bands: Bands::default(),
            skip_uncertain: false,
            key_bands: BTreeMap::new(),
        }
    }
}

impl<O> Policy<O> {
    /// The same policy reading each question through the bands of a thresholds
    /// file (keys the file does not name keep `bands`).
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Policy, Rule, Thresholds};
    ///
    /// let t = Thresholds::from_json(r#"{"format":"toolnexus.thresholds","version":1,
    ///     "bands":{"spam":{"low":0.05,"high":0.95}}}"#)?;
    /// let policy = Policy { rules: vec![Rule::is("spam", "yes", "drop")], default: Some("keep"), ..Default::default() }
    ///     .with_thresholds(&t);
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.9}}}"#)?;
    /// assert!(policy.decide(&d).needs_input().is_some(), "0.9 is not above this question's 0.95");
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn with_thresholds(mut self, thresholds: &Thresholds) -> Policy<O> {
        self.key_bands.extend(Bands::from_thresholds(thresholds));
        self
    }
}

impl<O: Clone> Policy<O> {
    /// Applies the policy to a decision, reading it through `self.bands`.
    ///
    /// ```
    /// use toolnexus::classifier::Decision;
    /// use toolnexus::judge::{Policy, Rule};
    ///
    /// let policy: Policy<&str> = Policy { rules: vec![Rule::is("spam", "yes", "drop")], ..Default::default() };
    /// let d = Decision::from_slice(br#"{"model":"m","answers":{"spam":{"type":"noul","noul":0.01}}}"#)?;
    /// assert_eq!(policy.decide(&d).needs_input().map(|r| r.to_string()).as_deref(), Some("needs input: no rule fired"));
    /// # Ok::<(), toolnexus::classifier::ClassifierError>(())
    /// ```
    pub fn decide(&self, decision: &Decision) -> Ruling<O> {
        let answers = band_keyed(&self.bands, &self.key_bands, decision);
        run(
            &answers,
            &self.bands,
            &self.key_bands,
            &self.rules,
            self.default.as_ref(),
            self.skip_uncertain,
        )
    }

    /// Evaluates once (through [`ask`] with `self.bands`) and applies the policy,
    /// returning the banded answers beside the ruling. Fails only when the
    /// evaluation fails; an unsure answer is a [`Ruling::NeedsInput`], not an error.
    /// Dropping the future abandons the call.
    ///
    /// Dropping the future abandons the evaluation (see `Classifier::evaluate_ctx`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use serde_json::json;
    /// use toolnexus::classifier::*;
    /// use toolnexus::judge::{Policy, Rule, questions, score};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let judge = create_classifier(ClassifierOptions {
    ///     style: ClassifierStyle::Custom,
    ///     evaluate: Some(Arc::new(|_ctx, _state, _qs| Box::pin(async {
    ///         Decision::from_value(&json!({"model": "rule", "answers": {
    ///             "urgency": {"type": "score", "score": 3.0, "confidence": 0.9}}}))
    ///             .map_err(|e| e.to_string())
    ///     }))),
    ///     ..Default::default()
    /// })?;
    /// let qs = questions(&[score("urgency", "How urgent?", ["low", "normal", "high", "critical"])])?;
    /// let policy = Policy { rules: vec![Rule::at_least("urgency", 2.5, "page")], default: Some("queue"), ..Default::default() };
    /// let (asked, ruling) = policy.ask(&judge, EvalContext::new(), json!("site down"), &qs).await?;
    /// assert_eq!(ruling.outcome(), Some(&"page"));
    /// assert_eq!(asked.sure_score("urgency")?, Some(3.0));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn ask(
        &self,
        classifier: &Classifier,
        ctx: EvalContext,
        state: Value,
        questions: &Questions,
    ) -> Result<(Asked, Ruling<O>), ClassifierError> {
        for b in self.key_bands.values() {
            b.check()?;
        }
        let asked = ask(classifier, ctx, state, questions, self.bands).await?;
        let asked = Asked::with_key_bands(asked.decision, self.bands, self.key_bands.clone());
        let ruling = run(
            &asked.answers,
            &asked.bands,
            &asked.key_bands,
            &self.rules,
            self.default.as_ref(),
            self.skip_uncertain,
        );
        Ok((asked, ruling))
    }
}

enum Test {
    Fires,
    Passes,
    Misfit,
}

fn test(condition: &Condition, answer: &Banded) -> Test {
    let holds = |b: bool| if b { Test::Fires } else { Test::Passes };
    match (condition, answer) {
        (Condition::Below(t), Banded::Noul { noul: x, .. })
        | (Condition::Below(t), Banded::Score { score: x, .. }) => holds(x < t),
        (Condition::AtLeast(t), Banded::Noul { noul: x, .. })
        | (Condition::AtLeast(t), Banded::Score { score: x, .. }) => holds(x >= t),
        (Condition::Is(v), Banded::Choice { choice, .. }) => holds(choice == v),
        (Condition::Is(v), Banded::Noul { verdict, .. }) => match v.as_str() {
            "yes" => holds(*verdict == Verdict::Yes),
            "no" => holds(*verdict == Verdict::No),
            _ => Test::Misfit,
        },
        (Condition::Below(_) | Condition::AtLeast(_), Banded::Choice { .. })
        | (Condition::Is(_), Banded::Score { .. })
        | (_, Banded::Box { .. }) => Test::Misfit,
    }
}

fn misfit_detail(condition: &Condition, answer: &Banded) -> String {
    match condition {
        Condition::Is(v) if matches!(answer, Banded::Noul { .. }) => {
            format!("a noul answer can only be \"yes\" or \"no\", not {v:?}")
        }
        Condition::Is(_) => format!("\"is\" does not fit a {} answer", answer.answer_type()),
        Condition::Below(_) => format!("\"below\" does not fit a {} answer", answer.answer_type()),
        Condition::AtLeast(_) => {
            format!(
                "\"at_least\" does not fit a {} answer",
                answer.answer_type()
            )
        }
    }
}

/// The one engine behind [`gate`], [`Policy::decide`] and [`Policy::ask`].
fn run<O: Clone>(
    answers: &BTreeMap<String, Banded>,
    bands: &Bands,
    key_bands: &BTreeMap<String, Bands>,
    rules: &[Rule<O>],
    default: Option<&O>,
    skip_uncertain: bool,
) -> Ruling<O> {
    let escalate = |i: usize, rule: &Rule<O>, reason: Escalation, detail: String| {
        Ruling::NeedsInput(InputRequest {
            reason,
            rule: Some(i),
            rule_text: Some(rule.to_string()),
            key: Some(rule.key.clone()),
            detail,
        })
    };
    for (i, rule) in rules.iter().enumerate() {
        let Some(answer) = answers.get(&rule.key) else {
            return escalate(
                i,
                rule,
                Escalation::Missing,
                format!("no answer {:?} in this decision", rule.key),
            );
        };
        let t = test(&rule.condition, answer);
        if let Test::Misfit = t {
            let detail = misfit_detail(&rule.condition, answer);
            return escalate(i, rule, Escalation::Misfit, detail);
        }
        if let Some(doubt) = answer.doubt(key_bands.get(&rule.key).unwrap_or(bands)) {
            if skip_uncertain {
                continue;
            }
            return escalate(i, rule, Escalation::Uncertain, doubt);
        }
        if let Test::Fires = t {
            return Ruling::Decided {
                outcome: rule.outcome.clone(),
                rule: Some(i),
            };
        }
    }
    match default {
        Some(o) => Ruling::Decided {
            outcome: o.clone(),
            rule: None,
        },
        None => Ruling::NeedsInput(InputRequest {
            reason: Escalation::NoRuleFired,
            rule: None,
            rule_text: None,
            key: None,
            detail: String::new(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noul(p: f64) -> Banded {
        Banded::Noul {
            noul: p,
            verdict: Bands::default().noul(p),
        }
    }

    fn pick(id: &str, sure: bool) -> Banded {
        Banded::Choice {
            choice: id.into(),
            confidence: if sure { 0.9 } else { 0.5 },
            near_uniform: false,
            sure,
        }
    }

    fn level(score: f64, sure: bool) -> Banded {
        Banded::Score {
            score,
            confidence: if sure { 0.9 } else { 0.5 },
            sure,
        }
    }

    fn answers(list: &[(&str, Banded)]) -> BTreeMap<String, Banded> {
        list.iter()
            .map(|(k, b)| (k.to_string(), b.clone()))
            .collect()
    }

    #[derive(Debug, PartialEq)]
    enum Want {
        Decided(&'static str, Option<usize>),
        Escalated(Escalation, Option<usize>),
    }

    fn check(name: &str, got: Ruling<&'static str>, want: &Want) {
        let got = match got {
            Ruling::Decided { outcome, rule } => Want::Decided(outcome, rule),
            Ruling::NeedsInput(r) => Want::Escalated(r.reason, r.rule),
        };
        assert_eq!(&got, want, "{name}");
    }

    #[test]
    fn every_path() {
        use Escalation::*;
        let risk_rules = vec![
            Rule::below("risk", 0.3, "allow"),
            Rule::at_least("risk", 0.7, "block"),
        ];
        type Row = (
            &'static str,
            Vec<Rule<&'static str>>,
            BTreeMap<String, Banded>,
            Option<&'static str>,
            bool,
            Want,
        );
        let table: Vec<Row> = vec![
            (
                "below fires at 0.2999",
                risk_rules.clone(),
                answers(&[("risk", noul(0.2999))]),
                None,
                false,
                Want::Decided("allow", Some(0)),
            ),
            (
                "0.30 is uncertain",
                risk_rules.clone(),
                answers(&[("risk", noul(0.30))]),
                None,
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "0.3001 is uncertain",
                risk_rules.clone(),
                answers(&[("risk", noul(0.3001))]),
                None,
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "0.6999 is uncertain",
                risk_rules.clone(),
                answers(&[("risk", noul(0.6999))]),
                None,
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "0.70 is uncertain",
                risk_rules.clone(),
                answers(&[("risk", noul(0.70))]),
                None,
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "at_least fires at 0.7001",
                risk_rules.clone(),
                answers(&[("risk", noul(0.7001))]),
                None,
                false,
                Want::Decided("block", Some(1)),
            ),
            (
                "uncertain skipped, no default",
                risk_rules.clone(),
                answers(&[("risk", noul(0.5))]),
                None,
                true,
                Want::Escalated(NoRuleFired, None),
            ),
            (
                "uncertain skipped, default",
                risk_rules.clone(),
                answers(&[("risk", noul(0.5))]),
                Some("review"),
                true,
                Want::Decided("review", None),
            ),
            (
                "uncertain escalates despite default",
                risk_rules.clone(),
                answers(&[("risk", noul(0.5))]),
                Some("review"),
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "missing escalates",
                risk_rules.clone(),
                answers(&[]),
                Some("review"),
                true,
                Want::Escalated(Missing, Some(0)),
            ),
            (
                "missing escalates past a skipped rule",
                vec![Rule::below("a", 0.3, "x"), Rule::below("b", 0.3, "y")],
                answers(&[("a", noul(0.5))]),
                None,
                true,
                Want::Escalated(Missing, Some(1)),
            ),
            (
                "fell through to default",
                vec![Rule::below("risk", 0.3, "allow")],
                answers(&[("risk", noul(0.9))]),
                Some("review"),
                false,
                Want::Decided("review", None),
            ),
            (
                "fell through, no default",
                vec![Rule::below("risk", 0.3, "allow")],
                answers(&[("risk", noul(0.9))]),
                None,
                false,
                Want::Escalated(NoRuleFired, None),
            ),
            (
                "no rules, default",
                vec![],
                answers(&[]),
                Some("review"),
                false,
                Want::Decided("review", None),
            ),
            (
                "no rules, no default",
                vec![],
                answers(&[]),
                None,
                false,
                Want::Escalated(NoRuleFired, None),
            ),
            (
                "is fires on a sure choice",
                vec![Rule::is("desk", "billing", "finance")],
                answers(&[("desk", pick("billing", true))]),
                None,
                false,
                Want::Decided("finance", Some(0)),
            ),
            (
                "is passes on another sure choice",
                vec![Rule::is("desk", "billing", "finance")],
                answers(&[("desk", pick("shipping", true))]),
                Some("other"),
                false,
                Want::Decided("other", None),
            ),
            (
                "is escalates on an uncertain choice",
                vec![Rule::is("desk", "billing", "finance")],
                answers(&[("desk", pick("billing", false))]),
                Some("other"),
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "is yes on a noul",
                vec![Rule::is("refund", "yes", "refund")],
                answers(&[("refund", noul(0.9))]),
                None,
                false,
                Want::Decided("refund", Some(0)),
            ),
            (
                "is no on a noul",
                vec![Rule::is("refund", "no", "none")],
                answers(&[("refund", noul(0.1))]),
                None,
                false,
                Want::Decided("none", Some(0)),
            ),
            (
                "is yes passes on a no",
                vec![Rule::is("refund", "yes", "refund")],
                answers(&[("refund", noul(0.1))]),
                Some("d"),
                false,
                Want::Decided("d", None),
            ),
            (
                "misfit: is maybe on a noul",
                vec![Rule::is("refund", "maybe", "x")],
                answers(&[("refund", noul(0.9))]),
                Some("d"),
                true,
                Want::Escalated(Misfit, Some(0)),
            ),
            (
                "misfit: below on a choice",
                vec![Rule::below("desk", 0.5, "x")],
                answers(&[("desk", pick("billing", true))]),
                Some("d"),
                true,
                Want::Escalated(Misfit, Some(0)),
            ),
            (
                "misfit: at_least on a choice",
                vec![Rule::at_least("desk", 0.5, "x")],
                answers(&[("desk", pick("billing", true))]),
                Some("d"),
                true,
                Want::Escalated(Misfit, Some(0)),
            ),
            (
                "misfit: is on a score",
                vec![Rule::is("urgency", "high", "x")],
                answers(&[("urgency", level(2.0, true))]),
                Some("d"),
                true,
                Want::Escalated(Misfit, Some(0)),
            ),
            (
                "misfit wins over uncertain",
                vec![Rule::is("urgency", "high", "x")],
                answers(&[("urgency", level(2.0, false))]),
                None,
                true,
                Want::Escalated(Misfit, Some(0)),
            ),
            (
                "score at_least fires",
                vec![Rule::at_least("urgency", 2.0, "page")],
                answers(&[("urgency", level(2.0, true))]),
                None,
                false,
                Want::Decided("page", Some(0)),
            ),
            (
                "score below fires",
                vec![Rule::below("urgency", 2.0, "queue")],
                answers(&[("urgency", level(1.99, true))]),
                None,
                false,
                Want::Decided("queue", Some(0)),
            ),
            (
                "score uncertain escalates",
                vec![Rule::at_least("urgency", 2.0, "page")],
                answers(&[("urgency", level(3.0, false))]),
                None,
                false,
                Want::Escalated(Uncertain, Some(0)),
            ),
            (
                "first match wins",
                vec![
                    Rule::below("risk", 0.3, "first"),
                    Rule::below("risk", 0.2, "second"),
                ],
                answers(&[("risk", noul(0.1))]),
                None,
                false,
                Want::Decided("first", Some(0)),
            ),
            (
                "later rule fires after a pass",
                vec![
                    Rule::is("desk", "shipping", "w"),
                    Rule::below("risk", 0.3, "allow"),
                ],
                answers(&[("desk", pick("billing", true)), ("risk", noul(0.1))]),
                None,
                false,
                Want::Decided("allow", Some(1)),
            ),
        ];
        for (name, rules, ans, default, skip, want) in &table {
            let got = run(
                ans,
                &Bands::default(),
                &BTreeMap::new(),
                rules,
                default.as_ref(),
                *skip,
            );
            check(name, got, want);
        }
    }

    #[test]
    fn request_text_names_the_rule() {
        let rules = [
            Rule::below("x", 0.1, "ok"),
            Rule::below("risk", 0.3, "allow"),
        ];
        let table: &[(BTreeMap<String, Banded>, &str)] = &[
            (
                answers(&[("x", noul(0.9)), ("risk", noul(0.5))]),
                "needs input: rule 1 (risk below 0.3): uncertain answer: noul 0.5 is not below 0.3 nor above 0.7",
            ),
            (
                answers(&[("x", noul(0.9))]),
                "needs input: rule 1 (risk below 0.3): missing answer: no answer \"risk\" in this decision",
            ),
            (
                answers(&[("x", noul(0.9)), ("risk", pick("a", true))]),
                "needs input: rule 1 (risk below 0.3): rule does not fit the answer: \"below\" does not fit a choice answer",
            ),
            (
                answers(&[("x", noul(0.9)), ("risk", noul(0.9))]),
                "needs input: no rule fired",
            ),
        ];
        for (ans, want) in table {
            let got = run(
                ans,
                &Bands::default(),
                &BTreeMap::new(),
                &rules,
                None,
                false,
            );
            assert_eq!(got.needs_input().unwrap().to_string(), *want);
        }
    }
}
