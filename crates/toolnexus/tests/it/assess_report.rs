//! The assess HTML report, read back: every chart on the page parses and
//! renders, and each reliability diagram's bin counts add up to its question's n.

use std::collections::BTreeMap;

use resvg::{tiny_skia, usvg};
use serde_json::{Value, json};
use toolnexus::assess::report::report_html;
use toolnexus::assess::{Gold, Outcome, Row, Run, SliceBy, Summary, SummaryOptions, summarize};
use toolnexus::classifier::Decision;
use toolnexus::judge::{choice, noul, questions, score};

const DESKS: [&str; 3] = ["billing", "shipping", "technical"];

/// A run over noul, choice and score questions: 60 rows, some answers wrong,
/// some rows unlabelled on a question, and three failed rows.
fn run() -> Run {
    let qs = questions(&[
        noul("refund", "Does the customer ask for money back?"),
        choice(
            "desk",
            "Which desk should handle this?",
            [
                ("billing", "charges, refunds, invoices"),
                ("shipping", "late, lost or damaged parcels"),
                ("technical", "the product does not work"),
            ],
        ),
        score(
            "urgency",
            "How urgent is it?",
            ["low", "normal", "high", "critical"],
        ),
    ])
    .unwrap();
    let mut rows = Vec::new();
    for i in 0..60usize {
        let mut labels = BTreeMap::new();
        let refund = i % 3 == 0;
        labels.insert("refund".to_string(), Gold::Noul(refund));
        let desk = DESKS[i % 3];
        if i % 7 != 0 {
            labels.insert("desk".to_string(), Gold::Choice(desk.to_string()));
        }
        let level = i % 4;
        if i % 5 != 0 {
            labels.insert("urgency".to_string(), Gold::Score(level));
        }
        let outcome = if i % 20 == 19 {
            Outcome::Failed {
                kind: "timeout".into(),
                message: "the backend took too long".into(),
            }
        } else {
            // Mostly right and sure; every fourth row unsure, every ninth wrong.
            let wrong = i % 9 == 4;
            let p_yes = match (refund != wrong, i % 4 == 0) {
                (true, false) => 0.93,
                (true, true) => 0.62,
                (false, false) => 0.08,
                (false, true) => 0.41,
            };
            let said = if wrong { DESKS[(i + 1) % 3] } else { desk };
            let top = if i % 4 == 0 { 0.5 } else { 0.86 };
            let mut probs = serde_json::Map::new();
            for d in DESKS {
                let p = if d == said { top } else { (1.0 - top) / 2.0 };
                probs.insert(d.to_string(), json!(p));
            }
            let said_level = if wrong { (level + 1) % 4 } else { level };
            let mut levels = serde_json::Map::new();
            let mut expected = 0.0;
            for l in 0..4usize {
                let p = if l == said_level { 0.7 } else { 0.1 };
                expected += p * l as f64;
                levels.insert(l.to_string(), json!(p));
            }
            let d = json!({
                "model": "jev-test",
                "answers": {
                    "refund": {"type": "noul", "noul": p_yes},
                    "desk": {"type": "choice", "choice": said, "probabilities": probs, "confidence": top},
                    "urgency": {"type": "score", "score": expected, "probabilities": levels, "confidence": 0.7}
                },
                "usage": {"input_tokens": 100, "output_tokens": 9, "cost": 0.00002}
            });
            Outcome::Decided(Decision::from_value(&d).unwrap())
        };
        let mut row = Row::new(format!("r{i}"), labels, outcome);
        row.meta = json!({"channel": if i % 2 == 0 { "email" } else { "chat" }})
            .as_object()
            .unwrap()
            .clone();
        row.latency_ms = Some(10.0 + i as f64);
        rows.push(row);
    }
    Run::new(qs, rows)
}

/// Rows labelled on `key` whose decision answers it: what n must be.
fn answered(run: &Run, key: &str) -> usize {
    run.rows
        .iter()
        .filter(|r| r.labels.contains_key(key))
        .filter(|r| r.decision().is_some_and(|d| d.answers.contains_key(key)))
        .count()
}

/// The outermost `<svg>…</svg>` blocks of a page, in order.
fn svgs(html: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(rel) = html[pos..].find("<svg") {
        let start = pos + rel;
        let after = html.as_bytes().get(start + 4).copied();
        if !matches!(after, Some(b' ' | b'>' | b'/' | b'\n')) {
            pos = start + 4;
            continue;
        }
        let (mut depth, mut at) = (0usize, start);
        loop {
            let open = html[at..].find("<svg").map(|o| at + o);
            let close = html[at..].find("</svg>").map(|c| at + c).expect("closed");
            match open {
                Some(o) if o < close => {
                    depth += 1;
                    at = o + 4;
                }
                _ => {
                    depth -= 1;
                    at = close + "</svg>".len();
                    if depth == 0 {
                        break;
                    }
                }
            }
        }
        out.push(&html[start..at]);
        pos = at;
    }
    out
}

/// Parses and renders one chart; returns its pixmap.
fn render(svg: &str) -> tiny_skia::Pixmap {
    let tree = usvg::Tree::from_str(svg, &usvg::Options::default())
        .unwrap_or_else(|e| panic!("usvg: {e}: {svg}"));
    let size = tree.size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width().ceil() as u32, size.height().ceil() as u32)
            .expect("a non-zero size");
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
}

/// The text of the chart's `<title>`.
fn title(doc: &roxmltree::Document) -> String {
    doc.root_element()
        .children()
        .find(|c| c.has_tag_name("title"))
        .and_then(|t| t.text())
        .unwrap_or_default()
        .to_string()
}

/// Checks every chart of a page made from `summaries` of `runs` (in the same
/// order); returns `(class, title)` per chart.
fn check_page(html: &str, summaries: &[(String, Summary)], runs: &[&Run]) -> Vec<(String, String)> {
    assert!(html.starts_with("<!DOCTYPE html>"));
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "no scripts");
    assert!(!lower.contains("<link"), "no external stylesheets");
    assert!(!lower.contains("https://"), "no outside fetch");
    assert!(!lower.contains(" src="), "no external assets");
    let charts = svgs(html);
    assert!(!charts.is_empty());
    let several = summaries.len() > 1;
    let mut seen = Vec::new();
    for svg in charts {
        let pixmap = render(svg);
        assert!(
            pixmap.pixels().iter().any(|p| p.alpha() > 0),
            "nothing painted"
        );
        let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
        let root = doc.root_element();
        let class = root.attribute("class").unwrap_or_default().to_string();
        let t = title(&doc);
        if class == "reliability" {
            let key = t.split(':').next().unwrap().to_string();
            let label = if several {
                t.rsplit(" · ").next().unwrap().to_string()
            } else {
                summaries[0].0.clone()
            };
            let at = summaries.iter().position(|(l, _)| *l == label).unwrap();
            let (summary, run) = (&summaries[at].1, runs[at]);
            let q = summary.question(&key).unwrap_or_else(|| panic!("{key}"));
            let n: usize = root.attribute("data-n").unwrap().parse().unwrap();
            let counts: usize = doc
                .descendants()
                .filter(|e| e.has_tag_name("rect") && e.attribute("class") == Some("bin"))
                .map(|e| e.attribute("data-count").unwrap().parse::<usize>().unwrap())
                .sum();
            assert_eq!(counts, n, "{t}: bin counts add up to data-n");
            assert_eq!(n, q.n, "{t}: data-n is the question's n");
            assert_eq!(
                n,
                answered(run, &key),
                "{t}: n counts labelled, answered rows"
            );
            assert!(t.contains(&format!("(n = {n})")), "{t}");
        }
        seen.push((class, t));
    }
    seen
}

#[test]
fn every_chart_renders_and_reliability_counts_add_up() {
    let run = run();
    let mut options = SummaryOptions::default();
    options.slices = vec![SliceBy::Meta("channel".into())];
    let summary = summarize(&run, &options);
    assert_eq!(summary.failed_rows, 3);
    let summaries = vec![("prompt v1".to_string(), summary)];
    let html = report_html("Support triage <v1>", &summaries);
    assert!(html.contains("<title>Support triage &lt;v1&gt;</title>"));
    let seen = check_page(&html, &summaries, &[&run]);
    let count = |class: &str| seen.iter().filter(|(c, _)| c == class).count();
    assert_eq!(count("reliability"), 3, "one per question");
    assert_eq!(
        count("risk-coverage"),
        4,
        "one per question and the row gate"
    );
    assert_eq!(count("confusion"), 2, "choice and score");
    assert_eq!(count("histogram"), 1, "score only");
    let titles: Vec<&str> = seen.iter().map(|(_, t)| t.as_str()).collect();
    for want in [
        "desk: confusion",
        "urgency: confusion",
        "urgency: score error (predicted − gold level)",
        "row gate: risk-coverage",
    ] {
        assert!(titles.contains(&want), "{want:?} in {titles:?}");
    }
    for want in [
        "<h2>Question desk (choice)</h2>",
        "<h2>Question refund (noul)</h2>",
        "<h2>Question urgency (score)</h2>",
        "<h2>Row gate</h2>",
        "<h2>Slices</h2>",
        "meta.channel=email",
        "latency p95",
        "$0.0011",
    ] {
        assert!(html.contains(want), "{want:?} in the page");
    }
    assert_eq!(html, report_html("Support triage <v1>", &summaries), "pure");
}

#[test]
fn several_runs_are_side_by_side() {
    let a = run();
    let mut b = run();
    // The second run lost its urgency answers.
    for r in &mut b.rows {
        if let Outcome::Decided(d) = &mut r.outcome {
            d.answers.remove("urgency");
        }
    }
    let summaries = vec![
        (
            "before".to_string(),
            summarize(&a, &SummaryOptions::default()),
        ),
        (
            "after".to_string(),
            summarize(&b, &SummaryOptions::default()),
        ),
    ];
    let html = report_html("Before and after", &summaries);
    assert!(html.contains("<h2>Side by side</h2>"));
    assert!(html.contains("<th>before</th><th>after</th>"));
    // Each run's charts are checked against its own run.
    let seen = check_page(&html, &summaries, &[&a, &b]);
    assert!(!seen.is_empty());
    let reliability: Vec<&str> = seen
        .iter()
        .filter(|(c, _)| c == "reliability")
        .map(|(_, t)| t.as_str())
        .collect();
    // refund, desk on both; urgency on "before" only (n = 0 after).
    assert_eq!(reliability.len(), 6, "{reliability:?}");
    assert!(reliability.contains(&"urgency: reliability (n = 0) · after"));
    let v: Value = serde_json::to_value(&summaries[1].1).unwrap();
    assert_eq!(v["questions"][2]["n"], 0);
}
