//! [`Estimator`]: a request's input tokens from its own shape — a constant per
//! request, so many per question, per described choice option, per score
//! level, and per character of the state's canonical JSON — and [`fit`](fn@fit), the
//! least-squares fit of those coefficients on real runs' recorded usage.
//!
//! The defaults are the published third-party measurement of Jev's billing
//! (SPEC §19): ~261 tokens per request, +8 per question, +21 per described
//! option, +8 per score level, plus the state, read here as one token per 4
//! characters of canonical JSON (an assumption, until a fit replaces it).
//!
//! The estimator file (`toolnexus cost fit --out`) is one JSON object:
//!
//! ```json
//! {"format": "toolnexus.estimator", "version": 1,
//!  "coefficients": {"per_request": 261, "per_question": 8, "per_described_option": 21,
//!                   "per_score_level": 8, "per_state_char": 0.25},
//!  "output_per_question": 0,
//!  "fit": {"rows": 400, "mean_abs_pct": 1.8, "worst_pct": 6.2}}
//! ```

use std::fmt;
use std::path::Path;

use serde_json::{Map, Value, json};

use crate::canonical::canonical_json;
use crate::classifier::{Question, Questions};
use crate::price::{Cost, CostSource, Price, Pricing};

/// The `format` of an estimator file.
///
/// ```
/// assert_eq!(toolnexus::cost::ESTIMATOR_FORMAT, "toolnexus.estimator");
/// ```
pub const ESTIMATOR_FORMAT: &str = "toolnexus.estimator";
/// The estimator file version this build reads and writes.
///
/// ```
/// assert_eq!(toolnexus::cost::ESTIMATOR_VERSION, 1);
/// ```
pub const ESTIMATOR_VERSION: u64 = 1;

/// The relative range, in percent, an estimate carries when its coefficients
/// were never fitted (the published defaults).
const UNFITTED_RANGE_PCT: f64 = 30.0;

/// What the input tokens of one request depend on.
///
/// ```
/// use serde_json::json;
/// use toolnexus::cost::Shape;
/// use toolnexus::judge::{choice, questions, score};
///
/// let qs = questions(&[
///     choice("topic", "Which board?", [("billing", Some("money matters")), ("bugs", None)]),
///     score("tone", "How angry?", ["calm", "annoyed", "furious"]),
/// ])?;
/// let s = Shape::of(&json!({"text": "hi"}), &qs);
/// assert_eq!((s.questions, s.described_options, s.score_levels, s.state_chars), (2, 1, 3, 13));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Shape {
    /// Questions asked.
    pub questions: u64,
    /// Choice options with a description (an option read by its name has none).
    pub described_options: u64,
    /// Levels of every score question.
    pub score_levels: u64,
    /// Characters of the state's canonical JSON.
    pub state_chars: u64,
}

impl Shape {
    /// The shape of asking `questions` about `state`.
    ///
    /// ```
    /// use serde_json::json;
    /// let s = toolnexus::cost::Shape::of(&json!("abc"), &Default::default());
    /// assert_eq!((s.questions, s.state_chars), (0, 5));
    /// ```
    pub fn of(state: &Value, questions: &Questions) -> Shape {
        Shape::of_questions(questions, canonical_json(state).chars().count() as u64)
    }

    /// The shape of asking `questions` about a state of `state_chars`
    /// characters of canonical JSON (an assess run row's `state_len`).
    ///
    /// ```
    /// let s = toolnexus::cost::Shape::of_questions(&Default::default(), 40);
    /// assert_eq!(s.state_chars, 40);
    /// ```
    pub fn of_questions(questions: &Questions, state_chars: u64) -> Shape {
        let mut s = Shape {
            questions: questions.len() as u64,
            state_chars,
            ..Shape::default()
        };
        for q in questions.values() {
            match q {
                Question::Choice(c) => {
                    s.described_options +=
                        c.criteria.values().filter(|d| d.is_some()).count() as u64;
                }
                Question::Score(c) => s.score_levels += c.criteria.len() as u64,
                _ => {}
            }
        }
        s
    }

    /// Builds a shape from its four counts.
    ///
    /// ```
    /// let s = toolnexus::cost::Shape::new(1, 2, 0, 300);
    /// assert_eq!(s.described_options, 2);
    /// ```
    pub fn new(
        questions: u64,
        described_options: u64,
        score_levels: u64,
        state_chars: u64,
    ) -> Shape {
        Shape {
            questions,
            described_options,
            score_levels,
            state_chars,
        }
    }

    /// The JSON form a batch result line carries:
    /// `{"questions":…,"described_options":…,"score_levels":…,"state_chars":…}`.
    ///
    /// ```
    /// let s = toolnexus::cost::Shape::new(1, 2, 0, 300);
    /// assert_eq!(toolnexus::cost::Shape::from_value(&s.to_value()), Some(s));
    /// ```
    pub fn to_value(&self) -> Value {
        json!({
            "questions": self.questions,
            "described_options": self.described_options,
            "score_levels": self.score_levels,
            "state_chars": self.state_chars,
        })
    }

    /// Reads [`Shape::to_value`]'s form; `None` when `v` is not one.
    ///
    /// ```
    /// assert_eq!(toolnexus::cost::Shape::from_value(&serde_json::json!({"questions": 1})), None);
    /// ```
    pub fn from_value(v: &Value) -> Option<Shape> {
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        Some(Shape {
            questions: n("questions")?,
            described_options: n("described_options")?,
            score_levels: n("score_levels")?,
            state_chars: n("state_chars")?,
        })
    }

    fn features(&self) -> [f64; 5] {
        [
            1.0,
            self.questions as f64,
            self.described_options as f64,
            self.score_levels as f64,
            self.state_chars as f64,
        ]
    }
}

/// Input tokens per unit of a request's shape.
///
/// ```
/// let c = toolnexus::cost::Coefficients::default();
/// assert_eq!((c.per_request, c.per_question, c.per_described_option, c.per_score_level), (261.0, 8.0, 21.0, 8.0));
/// assert_eq!(c.per_state_char, 0.25);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Coefficients {
    /// Tokens every request costs.
    pub per_request: f64,
    /// Tokens per question.
    pub per_question: f64,
    /// Tokens per described choice option.
    pub per_described_option: f64,
    /// Tokens per score level.
    pub per_score_level: f64,
    /// Tokens per character of the state's canonical JSON.
    pub per_state_char: f64,
}

impl Default for Coefficients {
    /// The published measurement of Jev's billing (SPEC §19); the state at one
    /// token per 4 characters.
    fn default() -> Self {
        Coefficients {
            per_request: 261.0,
            per_question: 8.0,
            per_described_option: 21.0,
            per_score_level: 8.0,
            per_state_char: 0.25,
        }
    }
}

impl Coefficients {
    const KEYS: [&'static str; 5] = [
        "per_request",
        "per_question",
        "per_described_option",
        "per_score_level",
        "per_state_char",
    ];

    fn to_array(self) -> [f64; 5] {
        [
            self.per_request,
            self.per_question,
            self.per_described_option,
            self.per_score_level,
            self.per_state_char,
        ]
    }

    fn from_array(a: [f64; 5]) -> Coefficients {
        Coefficients {
            per_request: a[0],
            per_question: a[1],
            per_described_option: a[2],
            per_score_level: a[3],
            per_state_char: a[4],
        }
    }
}

/// How well a fit matched the runs it was fitted on, per request.
///
/// ```
/// let f = toolnexus::cost::FitError { rows: 10, mean_abs_pct: 2.0, worst_pct: 7.5 };
/// assert_eq!(f.to_string(), "10 requests: mean absolute error 2.0%, worst 7.5%");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FitError {
    /// Requests fitted on.
    pub rows: usize,
    /// Mean absolute error, in percent of the recorded input tokens.
    pub mean_abs_pct: f64,
    /// The worst request's absolute error, in percent.
    pub worst_pct: f64,
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests: mean absolute error {:.1}%, worst {:.1}%",
            self.rows, self.mean_abs_pct, self.worst_pct
        )
    }
}

/// A bad estimator file, or nothing to fit on.
///
/// ```
/// let e = toolnexus::cost::Estimator::parse("[]", "est.json").unwrap_err();
/// assert_eq!(e.to_string(), "est.json: not a JSON object: an estimator file is {\"format\": \"toolnexus.estimator\", …}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EstimatorError {
    /// The file, as named (empty for a fit).
    pub file: String,
    /// What is wrong, naming the key.
    pub message: String,
}

impl fmt::Display for EstimatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.file.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.file, self.message)
        }
    }
}

impl std::error::Error for EstimatorError {}

/// Token estimates from a request's shape.
///
/// ```
/// use toolnexus::cost::{Estimator, Shape};
///
/// let e = Estimator::default();
/// // 261 + 2×8 + 3×21 + 0 + 400/4
/// assert_eq!(e.input_tokens(&Shape::new(2, 3, 0, 400)), 440.0);
/// assert!(e.fit.is_none(), "the published defaults, not fitted");
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Estimator {
    /// Input tokens per unit of shape.
    pub coefficients: Coefficients,
    /// Output tokens per question (0 until fitted: Jev's output is free).
    pub output_per_question: f64,
    /// How the fit did, when the coefficients were fitted.
    pub fit: Option<FitError>,
    /// The coefficients [`fit`](fn@fit) could not determine from the requests it was
    /// given (their shape feature never varied apart from the others', or
    /// never occurred), by their file key (`per_question`, …): they stay
    /// near the published defaults. Empty for an estimator read from a file.
    pub undetermined: Vec<&'static str>,
}

impl Estimator {
    /// An estimator with these coefficients, not fitted.
    ///
    /// ```
    /// use toolnexus::cost::{Coefficients, Estimator};
    /// assert_eq!(Estimator::new(Coefficients::default()), Estimator::default());
    /// ```
    pub fn new(coefficients: Coefficients) -> Estimator {
        Estimator {
            coefficients,
            output_per_question: 0.0,
            fit: None,
            undetermined: Vec::new(),
        }
    }

    /// Estimated input tokens of one request.
    ///
    /// ```
    /// use toolnexus::cost::{Estimator, Shape};
    /// assert_eq!(Estimator::default().input_tokens(&Shape::new(1, 0, 5, 0)), 261.0 + 8.0 + 40.0);
    /// ```
    ///
    /// A request that asks anything or sends any state is never estimated
    /// below one token, whatever the coefficients.
    ///
    /// ```
    /// use toolnexus::cost::{Coefficients, Estimator, Shape};
    /// let mut c = Coefficients::default();
    /// (c.per_request, c.per_question, c.per_described_option, c.per_score_level, c.per_state_char) = (0.0, 0.0, 0.0, 0.0, 0.0);
    /// assert_eq!(Estimator::new(c).input_tokens(&Shape::new(5, 1275, 0, 40)), 1.0);
    /// assert_eq!(Estimator::new(c).input_tokens(&Shape::default()), 0.0);
    /// ```
    pub fn input_tokens(&self, shape: &Shape) -> f64 {
        let x = shape.features();
        let c = self.coefficients.to_array();
        let sum = x.iter().zip(c).map(|(x, c)| x * c).sum::<f64>();
        let floor = if shape.questions > 0 || shape.state_chars > 0 {
            1.0
        } else {
            0.0
        };
        if sum.is_finite() {
            sum.max(floor)
        } else {
            floor
        }
    }

    /// Estimated output tokens of one request.
    ///
    /// ```
    /// use toolnexus::cost::{Estimator, Shape};
    /// assert_eq!(Estimator::default().output_tokens(&Shape::new(3, 0, 0, 0)), 0.0);
    /// ```
    pub fn output_tokens(&self, shape: &Shape) -> f64 {
        self.output_per_question * shape.questions as f64
    }

    /// The ± range, in percent, an estimate carries: the fit's worst request,
    /// or 30% for coefficients never fitted.
    ///
    /// ```
    /// assert_eq!(toolnexus::cost::Estimator::default().range_pct(), 30.0);
    /// ```
    pub fn range_pct(&self) -> f64 {
        self.fit.map_or(UNFITTED_RANGE_PCT, |f| f.worst_pct)
    }

    /// Sums the estimates of many requests.
    ///
    /// ```
    /// use toolnexus::cost::{Estimator, Shape};
    /// let e = Estimator::default().estimate([Shape::new(1, 0, 0, 0); 10].iter());
    /// assert_eq!(e.calls, 10);
    /// assert_eq!(e.input_tokens, 2690.0);
    /// assert_eq!((e.input_low, e.input_high), (2690.0 * 0.7, 2690.0 * 1.3));
    /// ```
    pub fn estimate<'a>(&self, shapes: impl Iterator<Item = &'a Shape>) -> Estimate {
        self.estimate_each(shapes.copied())
    }

    /// [`Estimator::estimate`] of shapes made as they are read (one per
    /// input, never held), so that an input file is estimated in one pass.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::cost::{Estimator, Shape};
    /// let qs = Default::default();
    /// let shapes: Vec<Shape> = (0..3).map(|i| Shape::of(&json!(i), &qs)).collect();
    /// let est = Estimator::default();
    /// let each = est.estimate_each((0..3).map(|i| Shape::of(&json!(i), &qs)));
    /// assert_eq!(each, est.estimate(shapes.iter()));
    /// ```
    pub fn estimate_each(&self, shapes: impl IntoIterator<Item = Shape>) -> Estimate {
        let mut tally = self.tally();
        for s in shapes {
            tally.push(&s);
        }
        tally.finish()
    }

    /// An estimate added up a request at a time ([`EstimateTally::push`]),
    /// for a reader that cannot hand over an iterator: the same sums, in the
    /// same order, as [`Estimator::estimate_each`].
    ///
    /// ```
    /// use toolnexus::cost::{Estimator, Shape};
    /// let est = Estimator::default();
    /// let mut tally = est.tally();
    /// for chars in [10, 2_000, 7] {
    ///     tally.push(&Shape::new(1, 0, 0, chars));
    /// }
    /// let each = est.estimate_each([10, 2_000, 7].map(|c| Shape::new(1, 0, 0, c)));
    /// assert_eq!(tally.finish(), each);
    /// ```
    pub fn tally(&self) -> EstimateTally<'_> {
        EstimateTally {
            estimator: self,
            calls: 0,
            input: 0.0,
            output: 0.0,
        }
    }

    /// Reads an estimator file; errors name the file and the key.
    ///
    /// ```no_run
    /// let e = toolnexus::cost::Estimator::load("estimator.json")?;
    /// # Ok::<(), toolnexus::cost::EstimatorError>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Estimator, EstimatorError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| EstimatorError {
            file: shown.clone(),
            message: format!("cannot read: {e}"),
        })?;
        Estimator::parse(&text, &shown)
    }

    /// Parses an estimator file's text; `file` names it in errors.
    ///
    /// ```
    /// use toolnexus::cost::Estimator;
    /// let text = Estimator::default().to_json();
    /// assert_eq!(Estimator::parse(&text, "e.json")?, Estimator::default());
    /// let bad = text.replace("\"per_question\":8.0", "\"per_question\":\"eight\"");
    /// assert_eq!(
    ///     Estimator::parse(&bad, "e.json").unwrap_err().to_string(),
    ///     "e.json: coefficients.per_question is \"eight\": want a finite number"
    /// );
    /// # Ok::<(), toolnexus::cost::EstimatorError>(())
    /// ```
    pub fn parse(text: &str, file: &str) -> Result<Estimator, EstimatorError> {
        let err = |message: String| EstimatorError {
            file: file.to_string(),
            message,
        };
        let v: Value = crate::json::parse_json_strict(text.as_bytes())
            .map_err(|e| err(format!("not JSON: {}", e.detail())))?;
        let o = v.as_object().ok_or_else(|| {
            err(format!(
                "not a JSON object: an estimator file is {{\"format\": \"{ESTIMATOR_FORMAT}\", …}}"
            ))
        })?;
        only_keys(
            o,
            &[
                "format",
                "version",
                "coefficients",
                "output_per_question",
                "fit",
            ],
            "",
        )
        .map_err(err)?;
        if o.get("format").and_then(Value::as_str) != Some(ESTIMATOR_FORMAT) {
            return Err(err(format!(
                "\"format\" is {}, not \"{ESTIMATOR_FORMAT}\"",
                o.get("format")
                    .map_or("missing".to_string(), Value::to_string)
            )));
        }
        match o.get("version").and_then(Value::as_u64) {
            Some(ESTIMATOR_VERSION) => {}
            other => {
                return Err(err(format!(
                    "\"version\" is {}; this build reads version {ESTIMATOR_VERSION}",
                    other.map_or("missing".to_string(), |n| n.to_string())
                )));
            }
        }
        let number = |o: &Map<String, Value>, at: &str, k: &str| -> Result<f64, EstimatorError> {
            match o.get(k) {
                Some(n) => n
                    .as_f64()
                    .filter(|x| x.is_finite())
                    .ok_or_else(|| err(format!("{at}{k} is {n}: want a finite number"))),
                None => Err(err(format!("{at}{k} is missing"))),
            }
        };
        let c = o
            .get("coefficients")
            .and_then(Value::as_object)
            .ok_or_else(|| err("\"coefficients\" is missing or not an object".into()))?;
        only_keys(c, &Coefficients::KEYS, "coefficients.").map_err(err)?;
        let mut a = [0.0; 5];
        for (i, k) in Coefficients::KEYS.iter().enumerate() {
            a[i] = number(c, "coefficients.", k)?;
            if a[i] < 0.0 {
                return Err(err(format!(
                    "coefficients.{k} is {}: a request's tokens never fall as it grows; want a number ≥ 0",
                    a[i]
                )));
            }
        }
        if a[0] < 1.0 {
            return Err(err(format!(
                "coefficients.per_request is {}: every request is billed its instructions; want at least 1 token (the published figure is {})",
                a[0],
                Coefficients::default().per_request
            )));
        }
        let output_per_question = match o.get("output_per_question") {
            None => 0.0,
            Some(_) => number(o, "", "output_per_question")?,
        };
        if output_per_question < 0.0 {
            return Err(err(format!(
                "output_per_question is {output_per_question}: want a number ≥ 0"
            )));
        }
        let fit = match o.get("fit") {
            None | Some(Value::Null) => None,
            Some(Value::Object(f)) => {
                only_keys(f, &["rows", "mean_abs_pct", "worst_pct"], "fit.").map_err(err)?;
                let rows = f
                    .get("rows")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| err("fit.rows is missing or not a whole number".into()))?;
                Some(FitError {
                    rows: rows as usize,
                    mean_abs_pct: number(f, "fit.", "mean_abs_pct")?.abs(),
                    worst_pct: number(f, "fit.", "worst_pct")?.abs(),
                })
            }
            Some(other) => return Err(err(format!("fit is {other}, not an object"))),
        };
        Ok(Estimator {
            coefficients: Coefficients::from_array(a),
            output_per_question,
            fit,
            undetermined: Vec::new(),
        })
    }

    /// The file form, one line of JSON (no newline).
    ///
    /// ```
    /// assert!(toolnexus::cost::Estimator::default().to_json().starts_with("{\"format\":\"toolnexus.estimator\""));
    /// ```
    pub fn to_json(&self) -> String {
        let mut c = Map::new();
        for (k, x) in Coefficients::KEYS.iter().zip(self.coefficients.to_array()) {
            c.insert(k.to_string(), Value::from(x));
        }
        let mut o = Map::new();
        o.insert("format".into(), Value::from(ESTIMATOR_FORMAT));
        o.insert("version".into(), Value::from(ESTIMATOR_VERSION));
        o.insert("coefficients".into(), Value::Object(c));
        o.insert(
            "output_per_question".into(),
            Value::from(self.output_per_question),
        );
        if let Some(f) = self.fit {
            o.insert(
                "fit".into(),
                json!({"rows": f.rows, "mean_abs_pct": f.mean_abs_pct, "worst_pct": f.worst_pct}),
            );
        }
        Value::Object(o).to_string()
    }
}

fn only_keys(o: &Map<String, Value>, known: &[&str], at: &str) -> Result<(), String> {
    match o.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(format!("unknown key {at}{k} (want {})", known.join(", "))),
        None => Ok(()),
    }
}

/// The estimate of many requests: calls, tokens, and the input tokens' range.
///
/// ```
/// use toolnexus::cost::{Estimator, Prices, Shape};
/// let e = Estimator::default().estimate([Shape::new(1, 0, 0, 0)].iter());
/// let jev = Prices::builtin();
/// let (low, mid, high) = e.usd(jev.find("jev-1.13").unwrap());
/// assert!(low < mid && mid < high);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Estimate {
    /// Requests that would be sent.
    pub calls: usize,
    /// Estimated input tokens.
    pub input_tokens: f64,
    /// Estimated output tokens.
    pub output_tokens: f64,
    /// The low end of the input tokens' range.
    pub input_low: f64,
    /// The high end of the input tokens' range.
    pub input_high: f64,
    /// The range, ± percent.
    pub range_pct: f64,
}

/// Requests added to an estimate one at a time: see [`Estimator::tally`].
#[derive(Debug)]
pub struct EstimateTally<'a> {
    estimator: &'a Estimator,
    calls: usize,
    input: f64,
    output: f64,
}

impl EstimateTally<'_> {
    /// Adds one request that would be sent.
    ///
    /// ```
    /// use toolnexus::cost::{Estimator, Shape};
    /// let est = Estimator::default();
    /// let mut tally = est.tally();
    /// tally.push(&Shape::new(1, 0, 0, 0));
    /// assert_eq!(tally.finish().calls, 1);
    /// ```
    pub fn push(&mut self, shape: &Shape) {
        self.calls += 1;
        self.input += self.estimator.input_tokens(shape);
        self.output += self.estimator.output_tokens(shape);
    }

    /// The estimate of every request added, with the estimator's range.
    ///
    /// ```
    /// use toolnexus::cost::Estimator;
    /// let e = Estimator::default().tally().finish();
    /// assert_eq!((e.calls, e.input_tokens, e.range_pct), (0, 0.0, 30.0));
    /// ```
    pub fn finish(self) -> Estimate {
        let (input, r) = (self.input, self.estimator.range_pct() / 100.0);
        Estimate {
            calls: self.calls,
            input_tokens: input,
            output_tokens: self.output,
            input_low: input * (1.0 - r).max(0.0),
            input_high: input * (1.0 + r),
            range_pct: self.estimator.range_pct(),
        }
    }
}

impl Estimate {
    /// The cost at `price`: low, estimate, high (US dollars).
    ///
    /// ```
    /// use toolnexus::cost::{Estimator, Prices, Shape};
    /// let e = Estimator::default().estimate([Shape::new(0, 0, 0, 0); 1000].iter());
    /// let (_, mid, _) = e.usd(Prices::builtin().find("jev-1").unwrap());
    /// assert!((mid - 261_000.0 * 0.042 / 1e6).abs() < 1e-12);
    /// ```
    pub fn usd(&self, price: &Price) -> (f64, f64, f64) {
        let r = self.range_pct / 100.0;
        let out = self.output_tokens * price.output_per_million;
        let at = |input: f64, out: f64| (input * price.input_per_million + out) / 1e6;
        (
            at(self.input_low, out * (1.0 - r).max(0.0)),
            at(self.input_tokens, out),
            at(self.input_high, out * (1.0 + r)),
        )
    }

    /// The cost under `pricing` of asking `model`: $0 on this machine, the
    /// range at the table's price for the model, `None` when no price covers
    /// it (an unknown cost, never $0).
    ///
    /// ```
    /// use toolnexus::cost::{CostSource, Estimator, Prices, Pricing, Shape};
    /// let e = Estimator::default().estimate([Shape::new(0, 0, 0, 0); 10].iter());
    /// let local = e.priced(&Pricing::Local, "laya").unwrap();
    /// assert_eq!((local.low, local.usd, local.high), (0.0, 0.0, 0.0));
    /// assert_eq!(local.cost.source, Some(CostSource::Local));
    /// let table = Pricing::Table(Prices::builtin().into());
    /// assert!(e.priced(&table, "a-model-no-table-lists").is_none(), "unknown, never $0");
    /// ```
    pub fn priced(&self, pricing: &Pricing, model: &str) -> Option<PricedEstimate> {
        match pricing {
            Pricing::Local => Some(PricedEstimate {
                low: 0.0,
                usd: 0.0,
                high: 0.0,
                cost: Cost::new(0.0, CostSource::Local),
            }),
            Pricing::Table(t) => t.find(model).map(|p| {
                let (low, usd, high) = self.usd(p);
                let source = CostSource::Priced {
                    table: p.table.clone(),
                    checked: p.checked.clone(),
                };
                PricedEstimate {
                    low,
                    usd,
                    high,
                    cost: Cost::new(usd, source),
                }
            }),
        }
    }
}

/// An [`Estimate`]'s cost ([`Estimate::priced`]): its range in US dollars and
/// the cost with where its price came from.
#[derive(Debug, Clone, PartialEq)]
pub struct PricedEstimate {
    /// The low end of the range.
    pub low: f64,
    /// The estimate.
    pub usd: f64,
    /// The high end of the range.
    pub high: f64,
    /// The estimate as a cost, with its source (`local` or `priced`).
    pub cost: Cost,
}

/// One recorded request: its shape and the usage its backend reported.
///
/// ```
/// let s = toolnexus::cost::Sample::new(toolnexus::cost::Shape::new(1, 0, 0, 100), 300, 4);
/// assert_eq!(s.input_tokens, 300);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Sample {
    /// The request's shape.
    pub shape: Shape,
    /// `usage.input_tokens` as recorded.
    pub input_tokens: i64,
    /// `usage.output_tokens` as recorded.
    pub output_tokens: i64,
}

impl Sample {
    /// A recorded request.
    pub fn new(shape: Shape, input_tokens: i64, output_tokens: i64) -> Sample {
        Sample {
            shape,
            input_tokens,
            output_tokens,
        }
    }
}

mod fit;

pub use fit::{FitTally, Fitter, fit};
#[cfg(test)]
use fit::{nnls, solve_dyn};

#[cfg(test)]
mod tests;
