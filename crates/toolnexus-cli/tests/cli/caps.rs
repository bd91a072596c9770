//! `--max-cost`, `--max-tokens`, `--max-time` on `batch`, `assess run` and
//! `tape record`: a reached cap starts nothing new, writes every finished
//! answer, exits 6 naming the cap and the resume command, and that command
//! carries the run on to the end without asking anything twice.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use toolnexus::judge::Tape;

use crate::support::{
    Bulk, Out, TempDir, Upstream, batch_args, out_lines, spam_questions, tn, tn_args,
};

/// A System One upstream billing `tokens` input tokens (and `cost` dollars
/// when given) per call, after `delay`.
fn billing(tokens: u64, cost: Option<f64>, delay: Duration) -> Upstream {
    Upstream::start(move |got| {
        std::thread::sleep(delay);
        let n = got.json()["state"]["n"].as_u64().unwrap_or(0);
        let mut usage = json!({"input_tokens": tokens, "output_tokens": 0});
        if let Some(c) = cost {
            usage["cost"] = json!(c);
        }
        // Answers as the model asked for (a listed price for jev-*).
        let model = got.json()["model"]
            .as_str()
            .unwrap_or("jev-1.13")
            .to_string();
        let body = json!({"model": model,
            "answers": {"spam": {"type": "noul", "noul": (n % 10) as f64 / 10.0}},
            "usage": usage});
        (200, vec![], body.to_string())
    })
}

fn states(n: usize) -> String {
    (0..n).map(|i| format!("{{\"n\": {i}}}\n")).collect()
}

/// The spam question and `n` states, written into `dir`: `(questions, states)`.
fn inputs(dir: &TempDir, n: usize) -> (String, String) {
    let q = dir.write("q.json", &spam_questions().to_string());
    (q, dir.write("in.jsonl", &states(n)))
}

/// The command a cap's message says resumes the run, as words (the test
/// directories need no quoting).
fn resume_words(out: &Out) -> Vec<String> {
    let line = out
        .stderr
        .lines()
        .find(|l| l.contains("resume with: "))
        .unwrap_or_else(|| panic!("no resume command: {out:?}"));
    let command = line.split("resume with: ").nth(1).unwrap();
    let words: Vec<String> = command.split_whitespace().map(String::from).collect();
    assert_eq!(words[0], env!("CARGO_BIN_EXE_toolnexus"), "{line}");
    assert!(!command.contains('\''), "nothing needed quoting: {line}");
    words[1..].to_vec()
}

/// Reruns the printed resume command: the cap holds for the job, so it asks
/// nothing (`sent` counts what the run asked of its backend) and stops at
/// the cap again, saying earlier runs spent it. Then raises `flag` to
/// `raised` and reruns until the run ends; returns how many runs that took.
fn resume_to_the_end(
    dir: &TempDir,
    first: &Out,
    args: &[String],
    flag: &str,
    raised: &str,
    sent: &dyn Fn() -> usize,
) -> usize {
    let words = resume_words(first);
    assert_eq!(words, args, "the resume command is the command itself");
    let before = sent();
    let again = tn_args(dir.path(), &words);
    assert_eq!(again.code, 6, "the cap holds for the job: {again:?}");
    assert_eq!(sent(), before, "a resume spends nothing beyond the cap");
    assert!(
        again.stderr.contains("by earlier runs of this job")
            && again
                .stderr
                .contains(&format!("raise {flag} to ask the rest")),
        "{}",
        again.stderr
    );
    let mut words = resume_words(&again);
    let at = words.iter().position(|w| w == flag).expect(flag);
    words[at + 1] = raised.to_string();
    for rerun in 1..=30 {
        let out = tn_args(dir.path(), &words);
        match out.code {
            0 => return rerun,
            6 => words = resume_words(&out),
            _ => panic!("rerun {rerun}: {out:?}"),
        }
    }
    panic!("the run never finished");
}

/// The input lines a batch out file answers: each once, every one a decision.
fn decided_lines(path: &Path) -> Vec<u64> {
    let lines = out_lines(path);
    assert!(
        lines.iter().all(|v| v.get("decision").is_some()),
        "a refused state was written: {lines:?}"
    );
    let mut seen: Vec<u64> = lines.iter().map(|v| v["line"].as_u64().unwrap()).collect();
    seen.sort_unstable();
    let before = seen.len();
    seen.dedup();
    assert_eq!(seen.len(), before, "a line written twice");
    seen
}

/// `batch` against the upstream at `base_url`, `concurrency` calls at a
/// time, no retries, no progress, then the test's own flags (its cap).
fn capped(
    q: &str,
    s: &str,
    out: &str,
    base_url: &str,
    concurrency: &str,
    extra: &[&str],
) -> Vec<String> {
    let quiet = [
        "--retries",
        "-1",
        "--no-progress",
        "--concurrency",
        concurrency,
    ];
    batch_args(q, s, out, base_url, &[&quiet[..], extra].concat())
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn batch_stops_at_the_cost_cap_within_one_call_and_resumes_to_the_end() {
    let dir = TempDir::new("caps-batch-cost");
    let up = billing(300, Some(0.01), Duration::from_millis(30));
    let n = 20;
    let (q, s) = inputs(&dir, n);
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let args = capped(
        &q,
        &s,
        &out,
        &up.base_url,
        "4",
        &[
            "--max-cost",
            "0.05",
            // The limiter in the transport composes with the budget in front.
            "--rpm",
            "60000",
            "--tpm",
            "100000000",
        ],
    );
    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 6, "{first:?}");
    let calls = up.requests().len();
    // $0.01 a call: stopped once $0.05 was spent, the calls in flight
    // overshooting by at most one call's cost.
    assert!((5..=6).contains(&calls), "{calls} calls for a $0.05 cap");
    assert_eq!(
        decided_lines(&out_path).len(),
        calls,
        "every finished call written"
    );
    let said = &first.stderr;
    assert!(
        said.contains("batch: stopped at --max-cost 0.05: spent $0.0")
            && said.contains(&format!("on {calls} calls ({} tokens", 300 * calls))
            && said.contains(&format!("{calls} results written to {out} this run")),
        "{said}"
    );
    assert!(!said.contains("unknown"), "every cost was reported: {said}");

    resume_to_the_end(&dir, &first, &args, "--max-cost", "1", &|| {
        up.requests().len()
    });
    assert_eq!(decided_lines(&out_path), (1..=n as u64).collect::<Vec<_>>());
    assert_eq!(up.requests().len(), n, "no state asked twice");
}

#[test]
fn a_shadow_spends_from_the_same_cap_as_the_primary() {
    let dir = TempDir::new("caps-batch-shadow");
    // The primary costs nothing; the shadow $0.01 a call.
    let primary = billing(300, Some(0.0), Duration::from_millis(5));
    let second = billing(300, Some(0.01), Duration::from_millis(5));
    let n = 20;
    let (q, s) = inputs(&dir, n);
    let out = dir.join("out.jsonl").display().to_string();
    let shadow_out = dir.join("shadow.jsonl").display().to_string();
    let r = tn_args(
        dir.path(),
        &batch_args(
            &q,
            &s,
            &out,
            &primary.base_url,
            &[
                "--shadow-style",
                "systemone",
                "--shadow-base-url",
                &second.base_url,
                "--shadow-out",
                &shadow_out,
                "--no-progress",
                "--concurrency",
                "1",
                "--max-cost",
                "0.03",
            ],
        ),
    );
    // Stopped by what the shadow spent: the run's cap bounds both.
    assert_eq!(r.code, 6, "{r:?}");
    assert!(
        r.stderr.contains("stopped at --max-cost 0.03"),
        "{}",
        r.stderr
    );
    let shadowed = second.requests().len();
    assert!(
        (3..=5).contains(&shadowed),
        "{shadowed} shadow calls for a $0.03 cap"
    );
    assert!(primary.requests().len() < n, "{}", primary.requests().len());
}

#[test]
fn batch_on_a_tape_rehearses_a_cap_offline_with_the_recorded_usage() {
    let dir = TempDir::new("caps-batch-tape");
    let bulk = Bulk::new(&dir, 12);
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    // Each recording says 11 tokens and $0.00002: the fifth call takes the
    // run over $0.00009.
    let args = bulk.batch(&out, &["--no-progress", "--max-cost", "0.00009"]);
    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 6, "{first:?}");
    assert_eq!(decided_lines(&out_path).len(), 5);
    assert!(
        first
            .stderr
            .contains("stopped at --max-cost 0.00009: spent $0.0001 on 5 calls (55 tokens"),
        "{}",
        first.stderr
    );
    let reruns = resume_to_the_end(&dir, &first, &args, "--max-cost", "1", &|| {
        decided_lines(&out_path).len()
    });
    assert_eq!(reruns, 1, "the last 7 under the raised cap");
    assert_eq!(decided_lines(&out_path), (1..=12).collect::<Vec<_>>());
}

#[test]
fn an_unknown_cost_is_said_not_counted_and_the_token_cap_still_stops() {
    let dir = TempDir::new("caps-batch-unknown");
    let up = billing(400, None, Duration::ZERO);
    let (q, s) = inputs(&dir, 10);
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    // A model no price table lists: its cost stays unknown.
    let unpriced = ["--model", "acme-judge-2", "--max-tokens", "1000"];
    let first = tn_args(
        dir.path(),
        &capped(&q, &s, &out, &up.base_url, "1", &unpriced),
    );
    assert_eq!(first.code, 6, "{first:?}");
    assert_eq!(
        up.requests().len(),
        3,
        "400 tokens a call: the third reaches 1000"
    );
    assert_eq!(decided_lines(&out_path).len(), 3);
    assert!(
        first.stderr.contains(
            "stopped at --max-tokens 1000: spent an unknown amount on 3 calls (1200 tokens"
        ) && first
            .stderr
            .contains("the cost of 3 calls is unknown (not reported, no price) and not counted; "),
        "{}",
        first.stderr
    );
}

#[test]
fn batch_stops_at_the_time_cap() {
    let dir = TempDir::new("caps-batch-time");
    let up = billing(10, None, Duration::from_millis(200));
    let n = 40;
    let (q, s) = inputs(&dir, n);
    let out_path = dir.join("out.jsonl");
    let out = out_path.display().to_string();
    let first = tn_args(
        dir.path(),
        &capped(&q, &s, &out, &up.base_url, "1", &["--max-time", "1s"]),
    );
    assert_eq!(first.code, 6, "{first:?}");
    let calls = up.requests().len();
    assert!(calls < n, "{calls} of {n} states asked after the time cap");
    assert_eq!(decided_lines(&out_path).len(), calls);
    assert!(
        first
            .stderr
            .contains("batch: stopped at --max-time 1s: spent"),
        "{}",
        first.stderr
    );
}

#[test]
fn assess_run_stops_at_the_token_cap_on_a_tape_and_resumes() {
    let dir = TempDir::new("caps-assess");
    let bulk = Bulk::new(&dir, 9);
    let examples: String = (0..9)
        .map(|i| {
            format!(
                "{}\n",
                json!({"id": format!("e{i}"), "state": {"n": i}, "labels": {"spam": i % 2 == 0}})
            )
        })
        .collect();
    let examples = dir.write("labels.jsonl", &examples);
    let run = dir.join("run.jsonl").display().to_string();
    let args = strings(&[
        "assess",
        "run",
        "--style",
        "tape",
        "--tape",
        &bulk.tape,
        "--call",
        "bulk",
        "--questions",
        &bulk.questions,
        "--examples",
        &examples,
        "--out",
        &run,
        "--no-progress",
        "--max-tokens",
        "30",
    ]);
    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 6, "{first:?}");
    let rows = |path: &str| -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .skip(1)
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    assert_eq!(rows(&run).len(), 3, "11 tokens a row: the third reaches 30");
    assert!(
        first.stderr.contains(
            "assess run: stopped at --max-tokens 30: spent $0.00006 on 3 calls (33 tokens"
        ) && first.stderr.contains("holds 3 rows, 6 examples not asked"),
        "{}",
        first.stderr
    );
    resume_to_the_end(&dir, &first, &args, "--max-tokens", "1000", &|| {
        rows(&run).len()
    });
    let mut ids: Vec<String> = rows(&run)
        .iter()
        .map(|r| {
            assert!(r.get("decision").is_some(), "{r}");
            r["id"].as_str().unwrap().to_string()
        })
        .collect();
    ids.sort();
    assert_eq!(ids, (0..9).map(|i| format!("e{i}")).collect::<Vec<_>>());
}

#[test]
fn tape_record_stops_at_the_token_cap_saves_and_resumes() {
    let dir = TempDir::new("caps-record");
    let up = billing(300, None, Duration::from_millis(20));
    let (q, s) = inputs(&dir, 10);
    let tape = dir.join("rec.tape.json");
    let args = strings(&[
        "tape",
        "record",
        "--style",
        "systemone",
        "--tape",
        &tape.display().to_string(),
        "--call",
        "rec",
        "--questions",
        &q,
        "--states",
        &s,
        "--base-url",
        &up.base_url,
        "--retries",
        "0",
        "--concurrency",
        "2",
        "--max-tokens",
        "1000",
    ]);
    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 6, "{first:?}");
    let calls = up.requests().len();
    assert!(
        (4..=5).contains(&calls),
        "{calls} calls of 300 tokens for a 1000 cap"
    );
    assert_eq!(
        Tape::load(&tape).unwrap().len(),
        calls,
        "every finished call saved"
    );
    assert!(
        first
            .stderr
            .contains("tape record: stopped at --max-tokens 1000")
            && first
                .stderr
                .contains(&format!("{} states not asked", 10 - calls)),
        "{}",
        first.stderr
    );
    assert!(
        !dir.join("rec.tape.json.journal").exists(),
        "the journal is folded in"
    );
    resume_to_the_end(&dir, &first, &args, "--max-tokens", "100000", &|| {
        up.requests().len()
    });
    assert_eq!(Tape::load(&tape).unwrap().len(), 10);
    assert_eq!(up.requests().len(), 10, "no state asked twice");
}

#[test]
fn cap_flags_are_checked_and_documented() {
    let dir = TempDir::new("caps-flags");
    let bulk = Bulk::new(&dir, 2);
    let out = dir.join("out.jsonl").display().to_string();
    for (flag, value, want) in [
        ("--max-cost", "0", "--max-cost"),
        ("--max-cost", "lots", "is not an amount of US dollars"),
        // A negative amount reaches the check, not clap's "unexpected argument".
        (
            "--max-cost",
            "-1",
            "\"-1\" is not an amount of US dollars above zero",
        ),
        ("--max-tokens", "0", "--max-tokens"),
        (
            "--max-tokens",
            "-5",
            "invalid value '-5' for '--max-tokens <N>'",
        ),
        ("--max-time", "soon", "is not a time"),
    ] {
        let args = bulk.batch(&out, &[flag, value]);
        let got = tn_args(dir.path(), &args);
        assert_eq!(got.code, 2, "{flag} {value}: {got:?}");
        assert!(got.stderr.contains(want), "{flag} {value}: {}", got.stderr);
    }
    let help = tn(dir.path(), &["batch", "--help"]);
    assert!(
        help.stdout.contains("rehearsed offline on a tape") && help.stdout.contains("  6 "),
        "{}",
        help.stdout
    );
    let help = tn(dir.path(), &["--help"]);
    assert!(
        help.stdout.contains("  6    a --max-cost"),
        "{}",
        help.stdout
    );
    // A cap that is never reached changes nothing.
    let args = bulk.batch(&out, &["--max-tokens", "1000000", "--max-time", "2h"]);
    let got = tn_args(dir.path(), &args);
    assert_eq!(got.code, 0, "{got:?}");
}

/// The regression of issue 32: each printed "resume with" command spent the
/// whole cap again. Stopped at the cap, then rerun as printed three times:
/// the upstream is asked no more than the cap allows in total.
#[test]
fn the_printed_resume_command_never_spends_beyond_the_cap_across_runs() {
    let dir = TempDir::new("caps-job");
    let up = billing(300, Some(0.01), Duration::ZERO);
    let (q, s) = inputs(&dir, 30);
    let out = dir.join("out.jsonl").display().to_string();
    let args = capped(&q, &s, &out, &up.base_url, "1", &["--max-cost", "0.04"]);
    let mut said = tn_args(dir.path(), &args);
    assert_eq!(said.code, 6, "{said:?}");
    assert_eq!(
        up.requests().len(),
        4,
        "$0.01 a call: the fourth reaches $0.04"
    );
    for _ in 0..3 {
        said = tn_args(dir.path(), &resume_words(&said));
        assert_eq!(said.code, 6, "{said:?}");
    }
    assert_eq!(
        up.requests().len(),
        4,
        "resumes spent nothing beyond the cap"
    );
    assert!(
        said.stderr
            .contains("stopped at --max-cost 0.04: spent $0.04 on 4 calls (1200 tokens, ")
            && said
                .stderr
                .contains("of which $0.04 and 1200 tokens on 4 calls by earlier runs of this job"),
        "{}",
        said.stderr
    );
}

/// A priced model whose upstream reports no cost: the cap counts the price
/// table's figure, and a resume counts what the out file's lines were priced.
#[test]
fn a_cap_over_a_priced_model_holds_across_resumes() {
    let dir = TempDir::new("caps-priced");
    let up = billing(300, None, Duration::ZERO);
    let (q, s) = inputs(&dir, 30);
    let prices = dir.write(
        "prices.json",
        &json!({"format": "toolnexus.prices", "version": 1, "name": "ours",
            "prices": [{"model": "acme-*", "input_per_million": 100, "output_per_million": 0,
                "source": "our contract", "checked": "2026-12-01"}]})
        .to_string(),
    );
    let out = dir.join("out.jsonl").display().to_string();
    let priced = [
        "--model",
        "acme-judge-2",
        "--prices",
        &prices,
        "--max-cost",
        "0.1",
    ];
    let args = capped(&q, &s, &out, &up.base_url, "1", &priced);
    let first = tn_args(dir.path(), &args);
    assert_eq!(first.code, 6, "{first:?}");
    // 300 tokens at $100 per million: $0.03 a call, the fourth reaches $0.10.
    assert_eq!(up.requests().len(), 4, "{first:?}");
    let again = tn_args(dir.path(), &resume_words(&first));
    assert_eq!(again.code, 6, "{again:?}");
    assert_eq!(up.requests().len(), 4, "{again:?}");
}

/// `--max-cost` over a model no price table lists could not be enforced:
/// refused before anything is sent, naming the model and how to price it.
#[test]
fn a_cost_cap_over_an_unpriced_model_is_refused_before_anything_is_sent() {
    let dir = TempDir::new("caps-unpriced");
    let up = billing(300, None, Duration::ZERO);
    let (q, s) = inputs(&dir, 5);
    let out = dir.join("out.jsonl").display().to_string();
    let tape = dir.join("rec.tape.json").display().to_string();
    let live = [
        "--base-url",
        up.base_url.as_str(),
        "--model",
        "acme-judge-2",
        "--max-cost",
        "1",
    ];
    let batch = [
        &["batch", "--questions", &q, "--states", &s, "--out", &out][..],
        &["--style", "systemone", "--no-progress"],
        &live,
    ]
    .concat();
    let record = [
        &["tape", "record", "--tape", &tape, "--call", "rec"][..],
        &["--questions", &q, "--states", &s, "--style", "systemone"],
        &live,
    ]
    .concat();
    for args in [batch, record] {
        let got = tn(dir.path(), &args);
        assert_eq!(got.code, 2, "{args:?}: {got:?}");
        assert!(
            got.stderr
                .contains("--max-cost 1: no price for model \"acme-judge-2\"")
                && got.stderr.contains("--prices FILE")
                && got.stderr.contains("$TOOLNEXUS_PRICES"),
            "{}",
            got.stderr
        );
    }
    assert_eq!(up.requests().len(), 0, "nothing was sent");
    assert!(!dir.join("rec.tape.json").exists());
}

#[test]
fn max_time_takes_every_unit_its_help_names() {
    let dir = TempDir::new("caps-time-units");
    let bulk = Bulk::new(&dir, 2);
    let out = dir.join("out.jsonl").display().to_string();
    for ok in ["500ms", "90s", "15m", "2h", "1.5h", "30"] {
        let args = bulk.batch(&out, &["--no-progress", "--restart", "--max-time", ok]);
        let got = tn_args(dir.path(), &args);
        assert_eq!(got.code, 0, "--max-time {ok}: {got:?}");
    }
    for (bad, want) in [
        ("2d", "unknown unit \"d\" (want ms, s, m or h)"),
        ("soon", "units ms, s, m, h"),
        ("0", "want more than zero"),
        ("0h", "want more than zero"),
        ("9000h", "want more than zero and at most a year"),
    ] {
        let args = bulk.batch(&out, &["--max-time", bad]);
        let got = tn_args(dir.path(), &args);
        assert_eq!(got.code, 2, "--max-time {bad}: {got:?}");
        assert!(
            got.stderr.contains(want),
            "--max-time {bad}: {}",
            got.stderr
        );
    }
    for command in [&["batch"][..], &["assess", "run"], &["tape", "record"]] {
        let help = tn(dir.path(), &[command, &["--help"]].concat());
        let text = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            text.contains("units ms, s, m, h")
                && text.contains("Stop once the job has spent this many US dollars. The cap holds for the whole job, not each run")
                && text.contains("The cap holds for the whole job: a resume counts the tokens")
                && text.contains("--prices"),
            "{command:?}: {}",
            help.stdout
        );
    }
}
