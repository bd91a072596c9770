//! `--cascade` and cost: the student's answers cost an explicit 0, the
//! teacher's are priced as the teacher's.

use super::*;

/// The least confident asked key's top probability: the cascade's gate.
fn least_top_probability(decision: &Value) -> f64 {
    decision["answers"]
        .as_object()
        .unwrap()
        .values()
        .map(|a| match a["type"].as_str() {
            Some("noul") => {
                let p = a["noul"].as_f64().unwrap();
                p.max(1.0 - p)
            }
            _ => a["probabilities"]
                .as_object()
                .unwrap()
                .values()
                .map(|p| p.as_f64().unwrap())
                .fold(0.0, f64::max),
        })
        .fold(f64::INFINITY, f64::min)
}

/// `--cascade` in front of a live teacher: the student's answers cost an
/// explicit 0 (`local`), never unknown; the teacher's are priced as the
/// teacher's. On every batch line, in the summary, in `eval` and in `serve`.
#[test]
fn cascade_students_are_local_and_teachers_priced() {
    use crate::support::{Server, demo, demo_student, request};
    let dir = TempDir::new("cost-cascade");
    let model = dir.join("model");
    toolnexus_local::tiny_model_for_tests(&model).unwrap();
    let model = model.display().to_string();
    let questions = demo("questions.json");
    let (student, _) = demo_student(&dir, &model);

    // Eight tickets of the demo set, and how sure the student is on each.
    let labels = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let states: Vec<Value> = labels
        .lines()
        .filter(|l| l.starts_with('{'))
        .take(8)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["state"].clone())
        .collect();
    let states_text: String = states.iter().map(|s| format!("{s}\n")).collect();
    let states_file = dir.write("states.jsonl", &states_text);
    let alone = dir.join("student.out.jsonl");
    let r = tn(
        dir.path(),
        &[
            "batch",
            "--style",
            "student",
            "--student",
            &student,
            "--model-dir",
            &model,
            "--questions",
            &questions,
            "--states",
            &states_file,
            "--out",
            &alone.display().to_string(),
            "--no-progress",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    // The student style alone is local too, and so is the zero-shot style.
    assert!(r.stdout.contains("(local 8)"), "{}", r.stdout);
    let ticket = states_text.lines().next().unwrap().to_string();
    let r = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "local",
            "--model-dir",
            &model,
            "--questions",
            &questions,
            "--state",
            &ticket,
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("cost        $0, local\n"), "{}", r.stdout);
    let mut sure: Vec<f64> = out_lines(&alone)
        .iter()
        .map(|l| least_top_probability(&l["decision"]))
        .collect();
    sure.sort_by(f64::total_cmp);
    // A cut in the widest gap: some tickets the student answers, the rest the teacher.
    let i = (1..sure.len())
        .max_by(|a, b| (sure[*a] - sure[*a - 1]).total_cmp(&(sure[*b] - sure[*b - 1])))
        .unwrap();
    assert!(
        sure[i] > sure[i - 1],
        "the student is equally sure of all: {sure:?}"
    );
    let threshold = (sure[i] + sure[i - 1]) / 2.0;
    let mut file: Value =
        serde_json::from_str(&std::fs::read_to_string(&student).unwrap()).unwrap();
    file["threshold"] = json!(threshold);
    std::fs::write(&student, file.to_string()).unwrap();
    let (local, taught) = (sure.len() - i, i);

    let teacher = billing_upstream();
    let cascade = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "--cascade",
            "--student",
            &student,
            "--model-dir",
            &model,
            "--style",
            "systemone",
            "--base-url",
            &teacher.base_url,
            "--model",
            "jev-1.13",
            "--retries",
            "0",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    // A batch of the eight tickets over the cascade into `out`.
    let batch = |out: &Path, extra: &[&str]| {
        let out = out.display().to_string();
        let mut args = vec!["batch".to_string()];
        let mut rest = vec![
            "--questions",
            &questions,
            "--states",
            &states_file,
            "--out",
            &out,
            "--no-progress",
        ];
        rest.extend_from_slice(extra);
        args.extend(cascade(&rest));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        tn(dir.path(), &args)
    };
    let out = dir.join("cascade.out.jsonl");
    let r = batch(&out, &[]);
    assert_eq!(r.code, 0, "{r:?}");
    let lines = out_lines(&out);
    assert_eq!(lines.len(), 8);
    let (mut seen_local, mut seen_taught) = (0, 0);
    for l in &lines {
        let by_student = l["decision"]["model"]
            .as_str()
            .unwrap()
            .starts_with("toolnexus-student");
        if by_student {
            seen_local += 1;
            assert_eq!(l["cost"], json!({"usd": 0.0, "source": "local"}), "{l}");
        } else {
            seen_taught += 1;
            assert_eq!(l["cost"]["source"], "priced", "{l}");
            assert_eq!(l["cost"]["table"], "toolnexus", "{l}");
            let tokens = l["decision"]["usage"]["input_tokens"].as_f64().unwrap();
            assert!((l["cost"]["usd"].as_f64().unwrap() - tokens * 0.042 / 1e6).abs() < 1e-15);
        }
    }
    assert_eq!((seen_local, seen_taught), (local, taught), "{lines:?}");
    assert_eq!(teacher.requests().len(), taught);
    assert!(
        r.stdout.contains(&format!("local {local}"))
            && r.stdout
                .contains(&format!("priced (toolnexus, checked 2026-12-05) {taught}")),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("unknown"), "{}", r.stdout);

    // Under a dollar cap the teacher's answers count at the teacher's price
    // (not as unknown, by the cascade's own name): the first one billed
    // reaches a cap below one call's cost, and nothing more is sent.
    let before = teacher.requests().len();
    let capped = dir.join("capped.out.jsonl");
    let r = batch(&capped, &["--max-cost", "0.000001"]);
    assert_eq!(r.code, 6, "{r:?}");
    assert!(r.stderr.contains("--max-cost"), "{}", r.stderr);
    assert!(!r.stderr.contains("unknown"), "{}", r.stderr);
    assert_eq!(teacher.requests().len(), before + 1);
    let written = out_lines(&capped);
    assert!(written.len() < lines.len(), "{written:?}");
    assert_eq!(
        written
            .iter()
            .filter(|l| l["cost"]["source"] == "priced")
            .count(),
        1
    );

    // `eval` on every ticket: the student's answers local, the teacher's priced.
    for (k, s) in states.iter().enumerate() {
        let state = s.to_string();
        let mut args = vec!["eval".to_string()];
        args.extend(cascade(&[
            "--questions",
            &questions,
            "--state",
            &state,
            "--json",
        ]));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = tn(dir.path(), &args);
        assert_eq!(r.code, 0, "{r:?}");
        let d: Value = serde_json::from_str(&r.stdout).unwrap();
        let by_student = d["model"]
            .as_str()
            .unwrap()
            .starts_with("toolnexus-student");
        let want = if by_student { "local" } else { "priced" };
        assert_eq!(d["usage"]["cost_source"], want, "ticket {k}: {d}");
        if by_student {
            assert_eq!(d["usage"]["cost"], 0.0, "{d}");
        }
    }

    // `serve` over the cascade: the student's answers say local, the teacher's priced.
    let args = cascade(&[]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = Server::start(dir.path(), &args);
    let qs: Value = serde_json::from_str(&std::fs::read_to_string(&questions).unwrap()).unwrap();
    let mut sources = std::collections::BTreeSet::new();
    for s in &states {
        let body = json!({"state": s, "questions": qs}).to_string();
        let r = request(&server.addr, "POST", "/v1/systemone", &[], body.as_bytes());
        assert_eq!(r.status, 200, "{}", r.body);
        let v = r.json();
        sources.insert(v["usage"]["cost_source"].as_str().unwrap().to_string());
    }
    assert_eq!(
        sources,
        ["local", "priced"].map(String::from).into(),
        "both kinds answered through serve"
    );
    server.terminate();
}
