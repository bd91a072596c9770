//! [`Prices`]: a versioned table of USD per million tokens, each price with
//! its source and the date it was checked. The compiled-in table is
//! `prices.json` beside this file; a user's file in the same format goes over
//! it.
//!
//! ```json
//! {"format": "toolnexus.prices", "version": 1, "name": "ours",
//!  "prices": [{"model": "jev-*", "input_per_million": 0.042, "output_per_million": 0,
//!              "source": "https://…", "checked": "2026-12-05",
//!              "note": "list price; the vendor says it may be subsidised"}]}
//! ```
//!
//! - `format`, `version` (1) and `prices` are required; `name` names the
//!   table in every `priced` cost (default: the file's name).
//! - Each price: `model`, a pattern (`*` matches any run of characters,
//!   everything else itself, ASCII case-insensitively); `input_per_million`
//!   and `output_per_million`, USD per million tokens (numbers from 0 to
//!   [`MAX_PER_MILLION`]: a dearer one is a mistake of units);
//!   `source`, where the price was published: any non-empty text in a user's
//!   file (a negotiated price may have no URL), an `https://` URL in the
//!   compiled-in table; `checked`, the date it was last checked against its
//!   source (`YYYY-MM-DD`); and optionally `note`, a remark on the price
//!   (non-empty text when given).
//! - The first matching price wins, a user's before the compiled-in ones. An
//!   unknown key is an error naming it.

use std::fmt;
use std::path::Path;

use serde_json::Value;

use super::{Cost, CostSource};
use crate::usage::ClassifierUsage;

/// The `format` of a prices file.
///
/// ```
/// assert_eq!(toolnexus::cost::PRICES_FORMAT, "toolnexus.prices");
/// ```
pub const PRICES_FORMAT: &str = "toolnexus.prices";
/// The prices file version this build reads.
///
/// ```
/// assert_eq!(toolnexus::cost::PRICES_VERSION, 1);
/// ```
pub const PRICES_VERSION: u64 = 1;

const BUILTIN: &str = include_str!("prices.json");

/// The dearest price per million tokens a prices file may give: anything
/// above is a mistake of units (a price per token, or in cents), and would
/// print absurd figures (or, times enough tokens, an infinite one).
///
/// ```
/// assert_eq!(toolnexus::cost::MAX_PER_MILLION, 100_000.0);
/// ```
pub const MAX_PER_MILLION: f64 = 100_000.0;

/// One price: a model pattern and USD per million input and output tokens.
///
/// ```
/// let p = toolnexus::cost::Prices::builtin();
/// let jev = p.find("jev-1.13").unwrap();
/// assert_eq!(jev.input_per_million, 0.042);
/// assert_eq!(jev.output_per_million, 0.0);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Price {
    /// The model pattern (`*` matches any run of characters).
    pub model: String,
    /// USD per million input tokens.
    pub input_per_million: f64,
    /// USD per million output tokens.
    pub output_per_million: f64,
    /// Where the price was published: a URL, or for a user's own price any
    /// citation (the compiled-in table's are `https://` URLs).
    pub source: String,
    /// When it was last checked against its source (`YYYY-MM-DD`).
    pub checked: String,
    /// A remark on the price (the compiled-in Jev price: the vendor says it
    /// may be subsidised); `None` when the file gives none.
    pub note: Option<String>,
    /// The table it belongs to.
    pub table: String,
}

impl Price {
    /// The cost of `usage` at this price.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierUsage;
    /// let p = toolnexus::cost::Prices::builtin();
    /// let u = ClassifierUsage { input_tokens: 500_000, output_tokens: 9, cost: None };
    /// assert!((p.find("jev-latest").unwrap().usd(&u) - 0.021).abs() < 1e-12);
    /// ```
    pub fn usd(&self, usage: &ClassifierUsage) -> f64 {
        (usage.input_tokens.max(0) as f64 * self.input_per_million
            + usage.output_tokens.max(0) as f64 * self.output_per_million)
            / 1e6
    }

    /// Whether this price's pattern matches `model`.
    ///
    /// ```
    /// let p = toolnexus::cost::Prices::builtin();
    /// let jev = p.find("jev-1.13").unwrap();
    /// assert!(jev.matches("JEV-2") && !jev.matches("typesafe/jev-1.13"));
    /// ```
    pub fn matches(&self, model: &str) -> bool {
        glob(
            self.model.to_ascii_lowercase().as_bytes(),
            model.to_ascii_lowercase().as_bytes(),
        )
    }
}

/// `*` matches any run of bytes; everything else itself.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == b'*')
}

/// A bad prices file: the file, and the key at fault.
///
/// ```
/// let e = toolnexus::cost::Prices::parse("{}", "mine.json").unwrap_err();
/// assert_eq!(e.to_string(), "mine.json: \"format\" is missing: a prices file has \"format\": \"toolnexus.prices\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PriceError {
    /// The file, as named.
    pub file: String,
    /// What is wrong, naming the key.
    pub message: String,
}

impl fmt::Display for PriceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

impl std::error::Error for PriceError {}

/// A price table: the prices in the order they are tried.
///
/// ```
/// use toolnexus::cost::Prices;
///
/// let mine = Prices::parse(r#"{"format": "toolnexus.prices", "version": 1, "name": "ours",
///     "prices": [{"model": "jev-*", "input_per_million": 0.05, "output_per_million": 0,
///                 "source": "our contract", "checked": "2026-12-01"}]}"#, "ours.json")?;
/// let both = mine.over(Prices::builtin());
/// assert_eq!(both.find("jev-1.13").unwrap().input_per_million, 0.05, "the user's file wins");
/// assert_eq!(both.find("jev-1.13").unwrap().table, "ours");
/// # Ok::<(), toolnexus::cost::PriceError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Prices {
    prices: Vec<Price>,
}

impl Prices {
    /// The compiled-in table, named `toolnexus`: only prices with a source.
    ///
    /// ```
    /// let p = toolnexus::cost::Prices::builtin();
    /// assert!(p.find("jev-1.13").is_some());
    /// assert!(p.find("gpt-unknown").is_none(), "an unlisted model stays unknown");
    /// ```
    pub fn builtin() -> Prices {
        Prices::parse(BUILTIN, "prices.json").expect("the compiled-in price table parses")
    }

    /// Reads a prices file; errors name the file and the key.
    ///
    /// ```no_run
    /// let p = toolnexus::cost::Prices::load("prices.json")?;
    /// # Ok::<(), toolnexus::cost::PriceError>(())
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Prices, PriceError> {
        let path = path.as_ref();
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| PriceError {
            file: shown.clone(),
            message: format!("cannot read: {e}"),
        })?;
        let stem = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| shown.clone());
        Prices::parse_named(&text, &shown, &stem)
    }

    /// Parses a prices file's text; `file` names it in errors and is the
    /// table's name when the file gives none.
    ///
    /// ```
    /// let e = toolnexus::cost::Prices::parse(
    ///     r#"{"format": "toolnexus.prices", "version": 1, "prices": [{"model": "x"}]}"#, "p.json").unwrap_err();
    /// assert_eq!(e.to_string(), "p.json: prices[0].input_per_million is missing: want USD per million input tokens (a number ≥ 0)");
    /// ```
    pub fn parse(text: &str, file: &str) -> Result<Prices, PriceError> {
        Prices::parse_named(text, file, file)
    }

    fn parse_named(text: &str, file: &str, default_name: &str) -> Result<Prices, PriceError> {
        let err = |message: String| PriceError {
            file: file.to_string(),
            message,
        };
        let v: Value = crate::json::parse_json_strict(text.as_bytes())
            .map_err(|e| err(format!("not JSON: {}", e.detail())))?;
        let o = v.as_object().ok_or_else(|| {
            err("not a JSON object: a prices file is {\"format\": \"toolnexus.prices\", …}".into())
        })?;
        for k in o.keys() {
            if !["format", "version", "name", "prices"].contains(&k.as_str()) {
                return Err(err(format!(
                    "unknown key {k:?} (want format, version, name, prices)"
                )));
            }
        }
        match o.get("format") {
            None => {
                return Err(err(format!(
                    "\"format\" is missing: a prices file has \"format\": \"{PRICES_FORMAT}\""
                )));
            }
            Some(f) if f.as_str() != Some(PRICES_FORMAT) => {
                return Err(err(format!("\"format\" is {f}, not \"{PRICES_FORMAT}\"")));
            }
            Some(_) => {}
        }
        match o.get("version").and_then(Value::as_u64) {
            Some(PRICES_VERSION) => {}
            Some(n) => {
                return Err(err(format!(
                    "\"version\" is {n}; this build reads version {PRICES_VERSION}"
                )));
            }
            None => {
                return Err(err(format!(
                    "\"version\" is missing or not a whole number (want {PRICES_VERSION})"
                )));
            }
        }
        let table = match o.get("name") {
            None => default_name.to_string(),
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(other) => return Err(err(format!("\"name\" is {other}, not a non-empty string"))),
        };
        let list = o
            .get("prices")
            .ok_or_else(|| err("\"prices\" is missing: want a list of prices".into()))?
            .as_array()
            .ok_or_else(|| err("\"prices\" is not a list".into()))?;
        let mut prices = Vec::with_capacity(list.len());
        for (i, p) in list.iter().enumerate() {
            let at = |k: &str| format!("prices[{i}].{k}");
            let p = p
                .as_object()
                .ok_or_else(|| err(format!("prices[{i}] is not an object")))?;
            for k in p.keys() {
                if ![
                    "model",
                    "input_per_million",
                    "output_per_million",
                    "source",
                    "checked",
                    "note",
                ]
                .contains(&k.as_str())
                {
                    return Err(err(format!(
                        "{} is not a price key (want model, input_per_million, output_per_million, source, checked, note)",
                        at(k)
                    )));
                }
            }
            let text = |k: &str, want: &str| -> Result<String, PriceError> {
                match p.get(k) {
                    Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
                    Some(other) => Err(err(format!("{} is {other}: want {want}", at(k)))),
                    None => Err(err(format!("{} is missing: want {want}", at(k)))),
                }
            };
            let usd = |k: &str, what: &str| -> Result<f64, PriceError> {
                let want = format!("USD per million {what} tokens (a number ≥ 0)");
                match p.get(k) {
                    Some(n) => match n.as_f64().filter(|x| x.is_finite() && *x >= 0.0) {
                        Some(x) if x > MAX_PER_MILLION => Err(err(format!(
                            "{} is {n}: more than ${MAX_PER_MILLION} per million {what} tokens is no price a judge is billed at (a price per token, or in cents?); want USD per million tokens",
                            at(k)
                        ))),
                        Some(x) => Ok(x),
                        None => Err(err(format!("{} is {n}: want {want}", at(k)))),
                    },
                    None => Err(err(format!("{} is missing: want {want}", at(k)))),
                }
            };
            let model = text("model", "a model name or pattern (`*` matches anything)")?;
            let input_per_million = usd("input_per_million", "input")?;
            let output_per_million = usd("output_per_million", "output")?;
            let source = text(
                "source",
                "where the price was published (a URL, or a citation for a price of your own)",
            )?;
            let checked = text("checked", "the date it was checked, YYYY-MM-DD")?;
            if !is_date(&checked) {
                return Err(err(format!(
                    "{} is {checked:?}: want the date it was checked, YYYY-MM-DD",
                    at("checked")
                )));
            }
            let note = match p.get("note") {
                None => None,
                Some(_) => Some(text("note", "a remark on the price (non-empty text)")?),
            };
            prices.push(Price {
                model,
                input_per_million,
                output_per_million,
                source,
                checked,
                note,
                table: table.clone(),
            });
        }
        Ok(Prices { prices })
    }

    /// This table tried first, then `under`.
    ///
    /// ```
    /// use toolnexus::cost::Prices;
    /// let both = Prices::default().over(Prices::builtin());
    /// assert_eq!(both.iter().count(), Prices::builtin().iter().count());
    /// ```
    pub fn over(mut self, under: Prices) -> Prices {
        self.prices.extend(under.prices);
        self
    }

    /// The first price whose pattern matches `model`.
    ///
    /// ```
    /// assert!(toolnexus::cost::Prices::builtin().find("jev-latest").is_some());
    /// ```
    pub fn find(&self, model: &str) -> Option<&Price> {
        self.prices.iter().find(|p| p.matches(model))
    }

    /// Every price, in the order they are tried.
    ///
    /// ```
    /// for p in toolnexus::cost::Prices::builtin().iter() {
    ///     assert!(!p.source.is_empty() && p.checked.len() == 10);
    /// }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = &Price> {
        self.prices.iter()
    }

    /// The cost of `usage` answered by `model`: `reported` when the usage
    /// carries one, `priced` when a price matches, unknown otherwise.
    ///
    /// ```
    /// use toolnexus::classifier::ClassifierUsage;
    /// use toolnexus::cost::{CostSource, Prices};
    ///
    /// let u = ClassifierUsage { input_tokens: 1_000, output_tokens: 0, cost: None };
    /// let c = Prices::builtin().cost(&u, "jev-1.13");
    /// assert_eq!(c.source, Some(CostSource::Priced { table: "toolnexus".into(), checked: "2026-12-05".into() }));
    /// ```
    pub fn cost(&self, usage: &ClassifierUsage, model: &str) -> Cost {
        if usage.cost.is_some() {
            return Cost::of_usage(usage);
        }
        match self.find(model) {
            Some(p) => Cost::new(
                p.usd(usage),
                CostSource::Priced {
                    table: p.table.clone(),
                    checked: p.checked.clone(),
                },
            ),
            None => Cost::UNKNOWN,
        }
    }
}

/// A calendar date written `YYYY-MM-DD`: the month 01..=12 and the day
/// within that month's length (29 February in leap years only).
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    let shaped = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit());
    if !shaped {
        return false;
    }
    let number =
        |r: std::ops::Range<usize>| b[r].iter().fold(0u32, |n, c| n * 10 + u32::from(c - b'0'));
    let (year, month, day) = (number(0..4), number(5..7), number(8..10));
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_globs() {
        for (p, t, want) in [
            ("jev-*", "jev-1.13", true),
            ("jev-*", "jev-", true),
            ("jev-*", "xjev-1", false),
            ("*/jev-*", "typesafe/jev-1.13", true),
            ("a*b*c", "aXXbYYc", true),
            ("a*b*c", "aXXbYY", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
        ] {
            assert_eq!(glob(p.as_bytes(), t.as_bytes()), want, "{p} vs {t}");
        }
    }

    #[test]
    fn every_bad_file_names_its_key() {
        let base = |price: &str| {
            format!(r#"{{"format":"toolnexus.prices","version":1,"prices":[{price}]}}"#)
        };
        let good = r#""model":"m","input_per_million":1,"output_per_million":2,"source":"s","checked":"2026-01-02""#;
        // A user's own price may cite anything (a contract has no URL); a note is optional.
        let ok = Prices::parse(&base(&format!("{{{good}}}")), "p").unwrap();
        let leap_day = base(&format!("{{{}}}", good.replace("2026-01-02", "2024-02-29")));
        assert!(Prices::parse(&leap_day, "p").is_ok());
        assert_eq!(ok.find("m").unwrap().note, None);
        let noted = Prices::parse(&base(&format!("{{{good},\"note\":\"negotiated\"}}")), "p");
        assert_eq!(
            noted.unwrap().find("m").unwrap().note.as_deref(),
            Some("negotiated")
        );
        for (price, want) in [
            (
                format!("{{{good},\"extra\":1}}"),
                "p: prices[0].extra is not a price key",
            ),
            (
                good.replace("\"input_per_million\":1", "\"input_per_million\":-1"),
                "p: prices[0].input_per_million is -1",
            ),
            (
                good.replace("\"input_per_million\":1", "\"input_per_million\":1.7e308"),
                "p: prices[0].input_per_million is 1.7e+308: more than $100000 per million",
            ),
            (
                good.replace("\"output_per_million\":2", "\"output_per_million\":100001"),
                "p: prices[0].output_per_million is 100001: more than $100000 per million",
            ),
            (
                good.replace("2026-01-02", "last week"),
                "p: prices[0].checked is \"last week\"",
            ),
            (
                good.replace("2026-01-02", "2026-13-01"),
                "p: prices[0].checked is \"2026-13-01\"",
            ),
            (
                good.replace("2026-01-02", "2026-02-29"),
                "p: prices[0].checked is \"2026-02-29\"",
            ),
            (
                good.replace("2026-01-02", "2026-04-00"),
                "p: prices[0].checked is \"2026-04-00\"",
            ),
            (
                good.replace("\"source\":\"s\"", "\"source\":\"\""),
                "p: prices[0].source is \"\"",
            ),
            (
                format!("{{{good},\"note\":\" \"}}"),
                "p: prices[0].note is \" \": want a remark on the price",
            ),
            (format!("{{{good},\"note\":3}}"), "p: prices[0].note is 3"),
        ] {
            let text = if price.starts_with('{') {
                base(&price)
            } else {
                base(&format!("{{{price}}}"))
            };
            let e = Prices::parse(&text, "p").unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
        }
        let e = Prices::parse(
            r#"{"format":"toolnexus.prices","version":1,"prices":[],"x":1}"#,
            "p",
        )
        .unwrap_err();
        assert!(e.to_string().contains("unknown key \"x\""), "{e}");
        let e = Prices::parse(
            r#"{"format":"toolnexus.prices","version":1,"prices":[],"prices":[]}"#,
            "p",
        )
        .unwrap_err();
        assert!(e.to_string().contains("prices"), "{e}");
    }

    #[test]
    fn the_builtin_table_lists_only_sourced_prices() {
        let b = Prices::builtin();
        assert!(b.iter().count() >= 1);
        for p in b.iter() {
            assert_eq!(p.table, "toolnexus");
            assert!(is_date(&p.checked), "{p:?}");
            // Provenance a reader can follow: the vendor's own page.
            let url = p.source.strip_prefix("https://").unwrap_or_default();
            let host = url.split('/').next().unwrap_or_default();
            assert!(
                host.contains('.') && !url.contains(char::is_whitespace),
                "the compiled-in price for {} cites {:?}, not an https URL",
                p.model,
                p.source
            );
        }
        let jev = b.find("jev-1.13").unwrap();
        assert_eq!(jev.source, "https://docs.typesafe.ai/models");
        assert!(jev.note.as_deref().unwrap().contains("subsidised"));
        // OpenRouter reports its own cost; no price of ours is listed for it.
        assert!(b.find("typesafe/jev-1.13").is_none());
    }
}
