//! SPEC §24's flat result columns: what a table gains per question, then the
//! decision's own fields and the row's error.
//!
//! Pure: questions and each row's outcome in, Arrow fields and arrays out.
//! Python's `evaluate_table` returns these columns and the command line's
//! `batch` writes them to Parquet, CSV and Arrow: one builder for both.
//!
//! Per question key `k`: noul → `k.noul`; choice → `k.choice`,
//! `k.confidence`, `k.near_uniform`, `k.p.<option>` per option in the
//! question's order; score → `k.score`, `k.level` (the legend's label of the
//! rounded level), `k.confidence`, `k.p.<level>` per level index. Then
//! `model`, `calibrated`, `input_tokens`, `output_tokens`, `cost` (null when
//! unreported) and `error` (null when the row succeeded). A failed row has
//! nulls everywhere but `error`.

use std::sync::Arc;

use arrow_array::ArrayRef;
use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_schema::{DataType, Field};
use toolnexus::classifier::{Decision, DecisionAnswer, Question, Questions};

/// One row's outcome: its decision, or the message of its error.
///
/// ```
/// let failed: toolnexus_table::Outcome = Err("timed out".into());
/// assert!(failed.is_err());
/// ```
pub type Outcome = Result<Decision, String>;

/// What one result column holds, and how a decision fills it.
enum Cell {
    Noul(String),
    Choice(String),
    ChoiceConfidence(String),
    NearUniform(String),
    ChoiceP(String, String),
    Score(String),
    Level(String),
    ScoreConfidence(String),
    ScoreP(String, String),
    Model,
    Calibrated,
    InputTokens,
    OutputTokens,
    Cost,
    Error,
}

/// The result columns of `questions`, in order: each one's name and what fills it.
fn cells(questions: &Questions) -> Vec<(String, Cell)> {
    let mut out = Vec::new();
    for (k, q) in questions {
        let key = || k.clone();
        match q {
            Question::Noul(_) => out.push((format!("{k}.noul"), Cell::Noul(key()))),
            Question::Choice(c) => {
                out.push((format!("{k}.choice"), Cell::Choice(key())));
                out.push((format!("{k}.confidence"), Cell::ChoiceConfidence(key())));
                out.push((format!("{k}.near_uniform"), Cell::NearUniform(key())));
                for option in c.criteria.keys() {
                    out.push((
                        format!("{k}.p.{option}"),
                        Cell::ChoiceP(key(), option.clone()),
                    ));
                }
            }
            Question::Score(s) => {
                out.push((format!("{k}.score"), Cell::Score(key())));
                out.push((format!("{k}.level"), Cell::Level(key())));
                out.push((format!("{k}.confidence"), Cell::ScoreConfidence(key())));
                for level in 0..s.criteria.len() {
                    out.push((
                        format!("{k}.p.{level}"),
                        Cell::ScoreP(key(), level.to_string()),
                    ));
                }
            }
            // A question kind without flat columns (a box) adds none.
            _ => {}
        }
    }
    out.push(("model".into(), Cell::Model));
    out.push(("calibrated".into(), Cell::Calibrated));
    out.push(("input_tokens".into(), Cell::InputTokens));
    out.push(("output_tokens".into(), Cell::OutputTokens));
    out.push(("cost".into(), Cell::Cost));
    out.push(("error".into(), Cell::Error));
    out
}

/// The result columns' fields, every one nullable (a failed row is null).
///
/// ```
/// use toolnexus::judge::{noul, questions};
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let names: Vec<String> = toolnexus_table::fields(&qs).iter().map(|f| f.name().clone()).collect();
/// assert_eq!(names, ["spam.noul", "model", "calibrated", "input_tokens", "output_tokens", "cost", "error"]);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn fields(questions: &Questions) -> Vec<Field> {
    cells(questions)
        .into_iter()
        .map(|(name, cell)| Field::new(name, data_type(&cell), true))
        .collect()
}

/// The result columns for `rows`, in the order of [`fields`].
///
/// ```
/// use arrow_array::Array as _;
/// use toolnexus::judge::{noul, questions};
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let cols = toolnexus_table::columns(&qs, &[Err("timed out".into())]);
/// assert!(cols[0].is_null(0));
/// assert_eq!(cols.last().unwrap().len(), 1);
/// # Ok::<(), toolnexus::classifier::ClassifierError>(())
/// ```
pub fn columns(questions: &Questions, rows: &[Outcome]) -> Vec<ArrayRef> {
    cells(questions)
        .iter()
        .map(|(_, cell)| column(cell, rows))
        .collect()
}

fn data_type(cell: &Cell) -> DataType {
    match cell {
        Cell::Choice(_) | Cell::Level(_) | Cell::Model | Cell::Error => DataType::Utf8,
        Cell::NearUniform(_) | Cell::Calibrated => DataType::Boolean,
        Cell::InputTokens | Cell::OutputTokens => DataType::Int64,
        _ => DataType::Float64,
    }
}

/// The answer under `key` in a row that succeeded.
fn answer<'a>(row: &'a Outcome, key: &str) -> Option<&'a DecisionAnswer> {
    row.as_ref().ok()?.answers.get(key)
}

fn choice<'a>(row: &'a Outcome, key: &str) -> Option<&'a toolnexus::classifier::ChoiceAnswer> {
    match answer(row, key)? {
        DecisionAnswer::Choice(c) => Some(c),
        _ => None,
    }
}

fn score<'a>(row: &'a Outcome, key: &str) -> Option<&'a toolnexus::classifier::ScoreAnswer> {
    match answer(row, key)? {
        DecisionAnswer::Score(s) => Some(s),
        _ => None,
    }
}

/// The legend's label of the level nearest the score.
fn level(s: &toolnexus::classifier::ScoreAnswer) -> Option<String> {
    let top = s.legend.len().saturating_sub(1) as f64;
    let nearest = s.score.round().clamp(0.0, top) as usize;
    s.legend.get(&nearest.to_string()).cloned()
}

fn column(cell: &Cell, rows: &[Outcome]) -> ArrayRef {
    let n = rows.len();
    let floats = |f: &dyn Fn(&Outcome) -> Option<f64>| -> ArrayRef {
        let mut b = Float64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let texts = |f: &dyn Fn(&Outcome) -> Option<String>| -> ArrayRef {
        let mut b = StringBuilder::with_capacity(n, n * 8);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let bools = |f: &dyn Fn(&Outcome) -> Option<bool>| -> ArrayRef {
        let mut b = BooleanBuilder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    let ints = |f: &dyn Fn(&Outcome) -> Option<i64>| -> ArrayRef {
        let mut b = Int64Builder::with_capacity(n);
        rows.iter().for_each(|r| b.append_option(f(r)));
        Arc::new(b.finish())
    };
    match cell {
        Cell::Noul(k) => floats(&|r| match answer(r, k)? {
            DecisionAnswer::Noul(a) => Some(a.noul),
            _ => None,
        }),
        Cell::Choice(k) => texts(&|r| choice(r, k).map(|c| c.choice.clone())),
        Cell::ChoiceConfidence(k) => floats(&|r| choice(r, k).map(|c| c.confidence)),
        Cell::NearUniform(k) => bools(&|r| choice(r, k).map(|c| c.near_uniform)),
        Cell::ChoiceP(k, o) => floats(&|r| choice(r, k)?.probabilities.get(o).copied()),
        Cell::Score(k) => floats(&|r| score(r, k).map(|s| s.score)),
        Cell::Level(k) => texts(&|r| level(score(r, k)?)),
        Cell::ScoreConfidence(k) => floats(&|r| score(r, k).map(|s| s.confidence)),
        Cell::ScoreP(k, l) => floats(&|r| score(r, k)?.probabilities.get(l).copied()),
        Cell::Model => texts(&|r| r.as_ref().ok().map(|d| d.model.clone())),
        Cell::Calibrated => bools(&|r| r.as_ref().ok().map(|d| d.calibrated)),
        Cell::InputTokens => ints(&|r| r.as_ref().ok().map(|d| d.usage.input_tokens)),
        Cell::OutputTokens => ints(&|r| r.as_ref().ok().map(|d| d.usage.output_tokens)),
        Cell::Cost => floats(&|r| r.as_ref().ok()?.usage.cost),
        Cell::Error => texts(&|r| r.as_ref().err().cloned()),
    }
}
