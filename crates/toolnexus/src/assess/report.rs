//! The HTML report: one self-contained page of tables and inline SVG charts.
//!
//! [`report_html`] turns one or more run summaries into a single HTML5 page
//! with no external assets and no scripts: an overview of rows, failures, cost
//! and latency; with several runs, a side-by-side table of the main figures;
//! then per question and per run the figures table, a reliability diagram with
//! the count of every bin, a risk-coverage curve, a confusion matrix (choice and
//! score), a score-error histogram (score), and the row-gate curve when the
//! summary has one. Every chart carries its figures in `data-*` attributes, so
//! the page can be checked by reading it back. Pure: the same summaries give the
//! same bytes.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::summary::{QuestionSummary, Summary};
use super::svg::{self, Section, escape};
use super::text::{self, f3, opt, pct};

/// `write!` into a `String`, which cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}

/// A figure that means nothing over zero rows prints as a dash.
fn over(q: &QuestionSummary, x: f64, f: impl Fn(f64) -> String) -> String {
    if q.n == 0 { "—".to_string() } else { f(x) }
}

fn ms(x: Option<f64>) -> String {
    opt(x, text::ms)
}

/// Cost as the terminal table says it: a total only when every row reported one.
fn cost_text(s: &Summary) -> String {
    let c = &s.cost;
    let total = match c.total() {
        Some(t) => format!("${t:.4}"),
        None if c.known_rows == 0 => return "unknown (no row's cost is known)".to_string(),
        None => format!(
            "${:.4} on {} rows, unknown on {}",
            c.known_total, c.known_rows, c.unknown_rows
        ),
    };
    format!(
        "{total} ({})",
        super::summary::cost_sources_text(&s.cost_sources)
    )
}

/// A chart title: the question and chart, and the run when there are several.
fn chart_title(key: &str, what: &str, label: &str, several: bool) -> String {
    if several {
        format!("{key}: {what} · {label}")
    } else {
        format!("{key}: {what}")
    }
}

/// Runs laid out side by side, wrapping on narrow screens.
fn side_by_side(blocks: &[String]) -> String {
    let mut out = String::from(
        r#"<div class="runs" style="display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start">"#,
    );
    for b in blocks {
        w!(
            out,
            r#"<div class="run" style="flex:1 1 480px;min-width:0">{b}</div>"#
        );
    }
    out.push_str("</div>");
    out
}

fn run_heading(label: &str, several: bool) -> String {
    if several {
        format!("<h3>{}</h3>\n", escape(label))
    } else {
        String::new()
    }
}

fn overview(summaries: &[(String, Summary)]) -> Section {
    let rows: Vec<Vec<String>> = summaries
        .iter()
        .map(|(label, s)| {
            let models: Vec<String> = match s.answered_by.as_slice() {
                [one] => vec![one.model.clone()],
                several => several
                    .iter()
                    .map(|a| format!("{} ({} rows, {})", a.model, a.rows, pct(a.share)))
                    .collect(),
            };
            vec![
                label.clone(),
                s.rows.to_string(),
                s.failed_rows.to_string(),
                s.questions.len().to_string(),
                if models.is_empty() {
                    "—".to_string()
                } else {
                    models.join(", ")
                },
                cost_text(s),
                ms(s.latency_p50_ms),
                ms(s.latency_p95_ms),
            ]
        })
        .collect();
    let mut html = svg::table(
        &[
            "run",
            "rows",
            "failed rows",
            "questions",
            "models",
            "cost",
            "latency p50",
            "latency p95",
        ],
        &rows,
    );
    html.push_str(
        "\n<p>A failed row (an evaluation that errored) stays in the data: it counts in \
         <em>failed</em> and in no other figure. A cost is summed only when every row's \
         cost is known (reported by the backend, priced from a dated table, local, or a cache hit; \
         the sources are named beside it); an unknown cost is never counted as $0.</p>",
    );
    Section {
        heading: "Runs: rows, cost and latency".to_string(),
        html,
    }
}

/// The main figures of a question, as `(name, text)` rows.
fn figures(q: &QuestionSummary) -> Vec<(String, String)> {
    let mut rows = vec![
        ("kind".to_string(), q.kind.clone()),
        ("n (labelled and answered)".to_string(), q.n.to_string()),
        ("failed or unanswered".to_string(), q.failed.to_string()),
        ("accuracy".to_string(), over(q, q.accuracy, pct)),
        ("log loss".to_string(), over(q, q.log_loss, f3)),
        ("Brier".to_string(), over(q, q.brier, f3)),
        (
            format!("ECE ({} bins)", super::summary::ECE_BINS),
            over(q, q.ece, f3),
        ),
        ("adaptive ECE".to_string(), over(q, q.adaptive_ece, f3)),
        ("MCE".to_string(), over(q, q.mce, f3)),
    ];
    match q.kind.as_str() {
        "noul" => {
            rows.push(("AUROC".to_string(), opt(q.auroc, f3)));
            for p in &q.precision_at {
                rows.push((
                    format!("precision at P(yes) ≥ {}", p.cut),
                    match p.precision {
                        Some(x) => format!("{} of {}", pct(x), p.kept),
                        None => "— (no row)".to_string(),
                    },
                ));
            }
        }
        "choice" => {
            rows.push(("macro-F1".to_string(), opt(q.macro_f1, f3)));
            rows.push(("near-uniform".to_string(), opt(q.near_uniform_rate, pct)));
        }
        _ => {
            rows.push(("MAE (expected level)".to_string(), opt(q.mae, f3)));
            rows.push(("within one level".to_string(), opt(q.within_one, pct)));
            rows.push(("quadratic-weighted κ".to_string(), opt(q.kappa, f3)));
            rows.push(("near-uniform".to_string(), opt(q.near_uniform_rate, pct)));
        }
    }
    if let Some(a) = q.abstention_rate {
        rows.push(("abstains (with bands)".to_string(), pct(a)));
    }
    rows.push((
        "models".to_string(),
        if q.models.is_empty() {
            "—".to_string()
        } else {
            q.models.join(", ")
        },
    ));
    rows
}

/// What the reliability diagram of a kind of question plots.
fn reliability_note(kind: &str) -> &'static str {
    match kind {
        "noul" => {
            "Reliability: rows binned by P(yes); each bar is the share of the bin whose gold \
             answer was yes, the number above it the rows in the bin."
        }
        _ => {
            "Reliability: rows binned by the answer's confidence; each bar is the share of \
             the bin answered right, the number above it the rows in the bin."
        }
    }
}

fn question_block(label: &str, q: &QuestionSummary, several: bool) -> String {
    let mut out = run_heading(label, several);
    let rows: Vec<Vec<String>> = figures(q).into_iter().map(|(k, v)| vec![k, v]).collect();
    out.push_str(&svg::table(&["figure", "value"], &rows));
    out.push('\n');
    w!(out, "<p>{}</p>\n", escape(reliability_note(&q.kind)));
    out.push_str(&svg::reliability(
        &chart_title(
            &q.key,
            &format!("reliability (n = {})", q.n),
            label,
            several,
        ),
        &q.reliability,
    ));
    let points: Vec<(f64, f64)> = q
        .risk_coverage
        .iter()
        .map(|p| (p.coverage, p.accuracy))
        .collect();
    out.push_str(&svg::risk_coverage(
        &chart_title(&q.key, "risk-coverage", label, several),
        &points,
        None,
        None,
    ));
    if let Some(c) = &q.confusion {
        out.push_str(&svg::confusion(
            &chart_title(&q.key, "confusion", label, several),
            &c.labels,
            &c.counts,
        ));
        if q.kind == "choice" {
            let per: Vec<Vec<String>> = c
                .per_class()
                .into_iter()
                .map(|s| {
                    vec![
                        s.label,
                        f3(s.precision),
                        f3(s.recall),
                        f3(s.f1),
                        s.support.to_string(),
                    ]
                })
                .collect();
            out.push('\n');
            out.push_str(&svg::table(
                &["option", "precision", "recall", "F1", "gold rows"],
                &per,
            ));
        }
    }
    if q.kind == "score" {
        out.push_str(&svg::histogram(
            &chart_title(
                &q.key,
                "score error (predicted − gold level)",
                label,
                several,
            ),
            &error_buckets(&q.score_errors),
        ));
    }
    out
}

/// Score errors as histogram buckets: every error from the lowest to the
/// highest seen (and 0), the missing ones as empty bars.
fn error_buckets(errors: &[(i64, usize)]) -> Vec<(String, usize)> {
    let lo = errors.iter().map(|e| e.0).min().unwrap_or(0).min(0);
    let hi = errors.iter().map(|e| e.0).max().unwrap_or(0).max(0);
    (lo..=hi)
        .map(|d| {
            let count = errors.iter().filter(|e| e.0 == d).map(|e| e.1).sum();
            let name = match d {
                0 => "0".to_string(),
                d if d > 0 => format!("+{d}"),
                d => format!("−{}", d.unsigned_abs()),
            };
            (name, count)
        })
        .collect()
}

fn question_section(key: &str, summaries: &[(String, Summary)]) -> Section {
    let several = summaries.len() > 1;
    let kind = summaries
        .iter()
        .find_map(|(_, s)| s.question(key).map(|q| q.kind.clone()))
        .unwrap_or_default();
    let blocks: Vec<String> = summaries
        .iter()
        .map(|(label, s)| match s.question(key) {
            Some(q) => question_block(label, q, several),
            None => format!(
                "{}<p>No labelled row of this run asks {}.</p>",
                run_heading(label, several),
                escape(&format!("{key:?}"))
            ),
        })
        .collect();
    Section {
        heading: format!("Question {key} ({kind})"),
        html: side_by_side(&blocks),
    }
}

/// The main figures of every question, one column per run.
fn comparison(summaries: &[(String, Summary)], keys: &BTreeSet<String>) -> Section {
    type Figure = fn(&QuestionSummary) -> String;
    let figures: [(&str, Figure); 12] = [
        ("n", |q| q.n.to_string()),
        ("failed", |q| q.failed.to_string()),
        ("accuracy", |q| over(q, q.accuracy, pct)),
        ("log loss", |q| over(q, q.log_loss, f3)),
        ("Brier", |q| over(q, q.brier, f3)),
        ("ECE", |q| over(q, q.ece, f3)),
        ("adaptive ECE", |q| over(q, q.adaptive_ece, f3)),
        ("MCE", |q| over(q, q.mce, f3)),
        ("AUROC", |q| opt(q.auroc, f3)),
        ("macro-F1", |q| opt(q.macro_f1, f3)),
        ("MAE", |q| opt(q.mae, f3)),
        ("κ", |q| opt(q.kappa, f3)),
    ];
    let applies = |name: &str, kind: &str| match name {
        "AUROC" => kind == "noul",
        "macro-F1" => kind == "choice",
        "MAE" | "κ" => kind == "score",
        _ => true,
    };
    let mut rows = Vec::new();
    for key in keys {
        let kind = summaries
            .iter()
            .find_map(|(_, s)| s.question(key).map(|q| q.kind.clone()))
            .unwrap_or_default();
        for (name, f) in &figures {
            if !applies(name, &kind) {
                continue;
            }
            let mut row = vec![key.clone(), name.to_string()];
            for (_, s) in summaries {
                row.push(s.question(key).map_or_else(|| "—".to_string(), f));
            }
            rows.push(row);
        }
    }
    let mut row = vec!["(all)".to_string(), "cost".to_string()];
    row.extend(summaries.iter().map(|(_, s)| cost_text(s)));
    rows.push(row);
    let mut row = vec!["(all)".to_string(), "latency p95".to_string()];
    row.extend(summaries.iter().map(|(_, s)| ms(s.latency_p95_ms)));
    rows.push(row);
    let mut header: Vec<&str> = vec!["question", "figure"];
    header.extend(summaries.iter().map(|(l, _)| l.as_str()));
    Section {
        heading: "Side by side".to_string(),
        html: svg::table(&header, &rows),
    }
}

fn gate_section(summaries: &[(String, Summary)]) -> Section {
    let several = summaries.len() > 1;
    let blocks: Vec<String> = summaries
        .iter()
        .map(|(label, s)| {
            let mut out = run_heading(label, several);
            match &s.gate {
                None => {
                    out.push_str("<p>No row is labelled and answered on every gated question.</p>")
                }
                Some(g) => {
                    out.push_str(&svg::table(
                        &["figure", "value"],
                        &[
                            vec!["gated questions".to_string(), g.keys.join(", ")],
                            vec!["rows".to_string(), g.n.to_string()],
                            vec!["all gated answers right".to_string(), pct(g.accuracy)],
                        ],
                    ));
                    let points: Vec<(f64, f64)> = g
                        .risk_coverage
                        .iter()
                        .map(|p| (p.coverage, p.accuracy))
                        .collect();
                    out.push_str(&svg::risk_coverage(
                        &chart_title("row gate", "risk-coverage", label, several),
                        &points,
                        None,
                        None,
                    ));
                }
            }
            out
        })
        .collect();
    let mut html = String::from(
        "<p>A row is kept when its lowest confidence over the gated questions clears the \
         cut, and right when every gated answer is.</p>\n",
    );
    html.push_str(&side_by_side(&blocks));
    Section {
        heading: "Row gate".to_string(),
        html,
    }
}

fn slices_section(summaries: &[(String, Summary)]) -> Section {
    let several = summaries.len() > 1;
    let blocks: Vec<String> = summaries
        .iter()
        .map(|(label, s)| {
            let rows: Vec<Vec<String>> = s
                .slices
                .iter()
                .flat_map(|sl| {
                    sl.questions.iter().map(move |q| {
                        vec![
                            format!("{}={}", sl.by, sl.value),
                            sl.rows.to_string(),
                            q.key.clone(),
                            q.n.to_string(),
                            over(q, q.accuracy, pct),
                            over(q, q.log_loss, f3),
                            over(q, q.ece, f3),
                        ]
                    })
                })
                .collect();
            let mut out = run_heading(label, several);
            out.push_str(&svg::table(
                &[
                    "slice", "rows", "question", "n", "accuracy", "log loss", "ECE",
                ],
                &rows,
            ));
            out
        })
        .collect();
    Section {
        heading: "Slices".to_string(),
        html: side_by_side(&blocks),
    }
}

/// One self-contained HTML page for `summaries`, each `(run label, summary)`.
/// Several summaries are laid out side by side (the `--compare` view), with a
/// table of the main figures of every question in one column per run.
///
/// Per run and per question the page holds the figures table, a reliability
/// diagram with bin counts, a risk-coverage curve, a confusion matrix (choice
/// and score) and a score-error histogram (score); then the row-gate curve when
/// a summary has one, slices when asked for, and cost and latency. No external
/// assets, no scripts; all text is escaped.
///
/// ```
/// use std::collections::BTreeMap;
/// use serde_json::json;
/// use toolnexus::assess::report::report_html;
/// use toolnexus::assess::*;
/// use toolnexus::classifier::Decision;
/// use toolnexus::judge::{noul, questions};
///
/// let qs = questions(&[noul("spam", "Is it spam?")])?;
/// let row = |id: &str, p: f64, y: bool| Row::new(id, BTreeMap::from([("spam".to_string(), Gold::Noul(y))]),
///     Outcome::Decided(Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}})).unwrap()));
/// let run = Run::new(qs, vec![row("a", 0.9, true), row("b", 0.2, false), row("c", 0.7, false)]);
/// let summary = summarize(&run, &SummaryOptions::default());
/// let html = report_html("Spam filter", &[("prompt v2".to_string(), summary)]);
/// assert!(html.starts_with("<!DOCTYPE html>"));
/// assert!(html.contains(r#"class="reliability" data-n="3""#));
/// assert!(!html.contains("<script"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn report_html(title: &str, summaries: &[(String, Summary)]) -> String {
    let keys: BTreeSet<String> = summaries
        .iter()
        .flat_map(|(_, s)| s.questions.iter().map(|q| q.key.clone()))
        .collect();
    let mut sections = vec![overview(summaries)];
    if summaries.len() > 1 {
        sections.push(comparison(summaries, &keys));
    }
    for key in &keys {
        sections.push(question_section(key, summaries));
    }
    if summaries.iter().any(|(_, s)| s.gate.is_some()) {
        sections.push(gate_section(summaries));
    }
    if summaries.iter().any(|(_, s)| !s.slices.is_empty()) {
        sections.push(slices_section(summaries));
    }
    svg::page(title, &sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_buckets_fill_the_range_through_zero() {
        let b = error_buckets(&[(-2, 1), (1, 4)]);
        let names: Vec<&str> = b.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(names, ["−2", "−1", "0", "+1"]);
        let counts: Vec<usize> = b.iter().map(|x| x.1).collect();
        assert_eq!(counts, [1, 0, 0, 4]);
        assert_eq!(error_buckets(&[]), [("0".to_string(), 0)]);
        assert_eq!(error_buckets(&[(2, 3)]).len(), 3);
    }

    #[test]
    fn chart_titles_name_the_run_only_when_there_are_several() {
        assert_eq!(
            chart_title("spam", "confusion", "a", false),
            "spam: confusion"
        );
        assert_eq!(
            chart_title("spam", "confusion", "a", true),
            "spam: confusion · a"
        );
    }
}
