//! What a call costs and where that came from: the value types a classifier
//! reports ([`Cost`], [`CostSource`]), how a stack settles them ([`Pricing`])
//! and the price tables it settles with ([`Prices`]). A leaf: the classifier
//! carries these values, and `cost` builds the pricing layer and the
//! estimates over the classifier. Public as `toolnexus::cost`.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::usage::ClassifierUsage;

mod table;

pub use table::{MAX_PER_MILLION, PRICES_FORMAT, PRICES_VERSION, Price, PriceError, Prices};

/// Where a cost came from. An unknown cost has no source: `Option<CostSource>`
/// is `None` and the cost `None`, never 0.
///
/// ```
/// use toolnexus::cost::CostSource;
///
/// let s = CostSource::Priced { table: "toolnexus".into(), checked: "2026-12-05".into() };
/// assert_eq!(s.as_str(), "priced");
/// assert_eq!(s.to_string(), "priced (toolnexus, checked 2026-12-05)");
/// assert_eq!(CostSource::Reported.to_string(), "reported");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CostSource {
    /// The backend said what the call cost (`usage.cost`). Always wins.
    Reported,
    /// Tokens × a price from a named, dated table.
    Priced {
        /// The table's name (`toolnexus` for the compiled-in one).
        table: String,
        /// When the price was last checked against its source (`YYYY-MM-DD`).
        checked: String,
    },
    /// Judged on this machine (local, student, laya, decisiontune): an explicit 0.
    Local,
    /// Served from a cache: nothing was sent, nothing spent.
    Cache,
}

impl CostSource {
    /// `reported`, `priced`, `local` or `cache`.
    ///
    /// ```
    /// assert_eq!(toolnexus::cost::CostSource::Local.as_str(), "local");
    /// ```
    pub fn as_str(&self) -> &'static str {
        match self {
            CostSource::Reported => "reported",
            CostSource::Priced { .. } => "priced",
            CostSource::Local => "local",
            CostSource::Cache => "cache",
        }
    }
}

impl fmt::Display for CostSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CostSource::Priced { table, checked } => {
                write!(f, "priced ({table}, checked {checked})")
            }
            other => f.write_str(other.as_str()),
        }
    }
}

/// What one call cost, in US dollars, and where that figure came from.
///
/// `usd` and `source` are both `Some` or both `None` (unknown).
///
/// ```
/// use toolnexus::classifier::ClassifierUsage;
/// use toolnexus::cost::{Cost, CostSource};
///
/// let reported = Cost::of_usage(&ClassifierUsage { input_tokens: 5, output_tokens: 1, cost: Some(0.25) });
/// assert_eq!((reported.usd, reported.source), (Some(0.25), Some(CostSource::Reported)));
/// assert_eq!(Cost::of_usage(&ClassifierUsage::default()), Cost::UNKNOWN);
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Cost {
    /// The cost in US dollars; `None` when nobody knows it.
    pub usd: Option<f64>,
    /// Where it came from; `None` when the cost is unknown.
    pub source: Option<CostSource>,
}

impl Cost {
    /// A cost nobody knows: never shown or summed as $0.
    pub const UNKNOWN: Cost = Cost {
        usd: None,
        source: None,
    };

    /// A known cost from `source`.
    ///
    /// ```
    /// use toolnexus::cost::{Cost, CostSource};
    /// assert_eq!(Cost::new(0.0, CostSource::Local).usd, Some(0.0));
    /// ```
    pub fn new(usd: f64, source: CostSource) -> Cost {
        Cost {
            usd: Some(usd),
            source: Some(source),
        }
    }

    /// What the usage itself says: `reported` when the backend gave a cost,
    /// unknown otherwise.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierUsage;
    /// use toolnexus::cost::Cost;
    /// assert_eq!(Cost::of_usage(&ClassifierUsage::default()).usd, None);
    /// ```
    pub fn of_usage(usage: &ClassifierUsage) -> Cost {
        match usage.cost {
            Some(c) => Cost::new(c, CostSource::Reported),
            None => Cost::UNKNOWN,
        }
    }

    /// A cache hit: known to be 0.
    ///
    /// ```
    /// use toolnexus::cost::{Cost, CostSource};
    /// assert_eq!(Cost::cache_hit().source, Some(CostSource::Cache));
    /// ```
    pub fn cache_hit() -> Cost {
        Cost::new(0.0, CostSource::Cache)
    }

    /// The JSON form batch lines and run rows carry:
    /// `{"usd":…,"source":"priced","table":…,"checked":…}`, and for an unknown
    /// cost `{"usd":null,"source":"unknown"}`.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::cost::{Cost, CostSource};
    ///
    /// assert_eq!(Cost::UNKNOWN.to_value(), json!({"usd": null, "source": "unknown"}));
    /// let c = Cost::new(0.5, CostSource::Priced { table: "mine".into(), checked: "2026-12-01".into() });
    /// assert_eq!(c.to_value(), json!({"usd": 0.5, "source": "priced", "table": "mine", "checked": "2026-12-01"}));
    /// assert_eq!(Cost::from_value(&c.to_value()), Some(c));
    /// ```
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("usd".into(), self.usd.map_or(Value::Null, Value::from));
        let source = self.source.as_ref().map_or("unknown", CostSource::as_str);
        m.insert("source".into(), Value::from(source));
        if let Some(CostSource::Priced { table, checked }) = &self.source {
            m.insert("table".into(), Value::from(table.as_str()));
            m.insert("checked".into(), Value::from(checked.as_str()));
        }
        Value::Object(m)
    }

    /// Reads [`Cost::to_value`]'s form back; `None` when `v` is not one.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus::cost::Cost;
    /// assert_eq!(Cost::from_value(&json!({"usd": null, "source": "unknown"})), Some(Cost::UNKNOWN));
    /// assert_eq!(Cost::from_value(&json!({"usd": 1, "source": "guessed"})), None);
    /// ```
    pub fn from_value(v: &Value) -> Option<Cost> {
        let o = v.as_object()?;
        let usd = match o.get("usd")? {
            Value::Null => None,
            n => Some(n.as_f64().filter(|x| x.is_finite() && *x >= 0.0)?),
        };
        let text = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
        let source = match o.get("source")?.as_str()? {
            "unknown" => None,
            "reported" => Some(CostSource::Reported),
            "local" => Some(CostSource::Local),
            "cache" => Some(CostSource::Cache),
            "priced" => Some(CostSource::Priced {
                table: text("table")?,
                checked: text("checked")?,
            }),
            _ => return None,
        };
        (usd.is_some() == source.is_some()).then_some(Cost { usd, source })
    }
}

impl fmt::Display for Cost {
    /// `$0.000042 (priced (toolnexus, checked 2026-12-05))`, or `unknown`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.usd, &self.source) {
            (Some(usd), Some(source)) => write!(f, "${} ({source})", usd_text(*usd)),
            _ => f.write_str("unknown"),
        }
    }
}

/// The costs of many calls summed: known ones added, unknown ones counted and
/// never summed as $0, with how many came from each source.
///
/// ```
/// use toolnexus::cost::{Cost, CostSource, CostTally};
/// let mut t = CostTally::default();
/// t.add(&Cost::new(0.25, CostSource::Reported));
/// t.add(&Cost::UNKNOWN);
/// assert_eq!((t.known(), t.unknown(), t.usd()), (1, 1, 0.25));
/// assert_eq!(t.text(""), "cost $0.2500 known on 1 of 2 calls, unknown on 1 (reported 1, unknown 1)");
/// ```
#[derive(Debug, Clone, Default)]
pub struct CostTally {
    known: usize,
    unknown: usize,
    usd: f64,
    sources: std::collections::BTreeMap<String, usize>,
}

impl CostTally {
    /// Counts one call's cost.
    pub fn add(&mut self, cost: &Cost) {
        match cost.usd {
            Some(c) => {
                self.known += 1;
                self.usd += c;
            }
            None => self.unknown += 1,
        }
        let source = cost
            .source
            .as_ref()
            .map_or("unknown".to_string(), ToString::to_string);
        *self.sources.entry(source).or_default() += 1;
    }

    /// Calls whose cost is known.
    pub fn known(&self) -> usize {
        self.known
    }

    /// Calls whose cost is unknown.
    pub fn unknown(&self) -> usize {
        self.unknown
    }

    /// The sum of the known costs, in US dollars.
    pub fn usd(&self) -> f64 {
        self.usd
    }

    /// `cost $0.000123 (priced (toolnexus, checked 2026-12-05) 3)`, or
    /// `cost unknown (…: no price for the model{hint})`; empty when nothing was
    /// counted. `hint` says where a price would come from.
    pub fn text(&self, hint: &str) -> String {
        if self.known + self.unknown == 0 {
            return String::new();
        }
        let sources: Vec<String> = self
            .sources
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let sources = sources.join(", ");
        match (self.known, self.unknown) {
            (_, 0) => format!("cost ${} ({sources})", usd_text(self.usd)),
            (0, _) => format!("cost unknown ({sources}: no price for the model{hint})"),
            (k, u) => format!(
                "cost ${} known on {k} of {} calls, unknown on {u} ({sources})",
                usd_text(self.usd),
                k + u
            ),
        }
    }
}

/// Dollars as the CLI prints them: six decimals below a cent, four above.
/// A figure that is no finite number (a sum that overflowed) is never
/// printed as `inf` or `NaN`.
///
/// ```
/// assert_eq!(toolnexus::cost::usd_text(0.0000126), "0.000013");
/// assert_eq!(toolnexus::cost::usd_text(12.5), "12.5000");
/// assert_eq!(toolnexus::cost::usd_text(f64::INFINITY), "(too large to show)");
/// ```
pub fn usd_text(usd: f64) -> String {
    if !usd.is_finite() {
        "(too large to show)".to_string()
    } else if usd.abs() < 0.01 {
        format!("{usd:.6}")
    } else {
        format!("{usd:.4}")
    }
}

/// How a call's cost is settled when its backend reports none.
///
/// A reported cost always wins; a cache hit is always 0 (`cache`).
///
/// ```
/// use toolnexus::classifier::ClassifierUsage;
/// use toolnexus::cost::{CostSource, Pricing, Prices};
///
/// let u = ClassifierUsage { input_tokens: 300, output_tokens: 20, cost: None };
/// assert_eq!(Pricing::Local.settle(&u, "student").source, Some(CostSource::Local));
/// let reported = ClassifierUsage { cost: Some(0.001), ..u };
/// let c = Pricing::Table(Prices::builtin().into()).settle(&reported, "jev-1.13");
/// assert_eq!(c.source, Some(CostSource::Reported), "a reported cost always wins");
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Pricing {
    /// Tokens × the first price whose pattern matches the model; unknown when none does.
    Table(Arc<Prices>),
    /// Judged on this machine: an explicit 0 with source `local`.
    Local,
}

impl Pricing {
    /// The cost of one call whose usage is `usage`, answered by `model`.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierUsage;
    /// use toolnexus::cost::{Pricing, Prices};
    ///
    /// let u = ClassifierUsage { input_tokens: 2_000_000, output_tokens: 0, cost: None };
    /// let c = Pricing::Table(Prices::builtin().into()).settle(&u, "jev-latest");
    /// assert!((c.usd.unwrap() - 0.084).abs() < 1e-12);
    /// ```
    pub fn settle(&self, usage: &ClassifierUsage, model: &str) -> Cost {
        if usage.cost.is_some() {
            return Cost::of_usage(usage);
        }
        match self {
            Pricing::Local => Cost::new(0.0, CostSource::Local),
            Pricing::Table(prices) => prices.cost(usage, model),
        }
    }
}
