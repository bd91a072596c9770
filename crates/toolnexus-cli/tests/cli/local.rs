//! The embedded model on the command line, on the tiny random test model:
//! `--style local`, `distill` into a student file, `--style student` and
//! `--cascade`; a missing model names the directory and `toolnexus model fetch`, once.

use crate::support::{Out, TempDir, cascade_eval, demo, demo_student, no_bf16_unit, tn};

/// The tiny test model written into `dir/model`: its path.
fn tiny_model(dir: &TempDir) -> String {
    let model = dir.join("model");
    toolnexus_local::tiny_model_for_tests(&model).unwrap();
    model.display().to_string()
}

/// `eval` of `questions` over `state` by the embedded model in `model`, as JSON.
fn eval_local(dir: &TempDir, model: &str, questions: &str, state: &str) -> Out {
    tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "local",
            "--model-dir",
            model,
            "--questions",
            questions,
            "--state",
            state,
            "--json",
        ],
    )
}

#[test]
fn local_distill_student_and_cascade_run_offline() {
    let dir = TempDir::new("local");
    let model = tiny_model(&dir);
    let questions = demo("questions.json");
    let state = r#"{"message": "my parcel is late"}"#;

    let out = eval_local(&dir, &model, &questions, state);
    assert_eq!(out.code, 0, "{out:?}");
    let d: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(d["model"], "local-minilm-zero-shot");
    assert_eq!(d["calibrated"], false);
    // Said on stderr with --json, so stdout stays one decision.
    assert!(
        out.stderr.contains("heuristic: the zero-shot style"),
        "{}",
        out.stderr
    );

    let (student, out) = demo_student(&dir, &model);
    assert!(out.stdout.contains("cascade threshold"), "{}", out.stdout);
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&student).unwrap()).unwrap();
    assert_eq!(file["format"], "toolnexus.student");
    assert_eq!(file["teacher_model"], "labels");

    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "student",
            "--student",
            &student,
            "--model-dir",
            &model,
            "--questions",
            &questions,
            "--state",
            state,
            "--json",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let d: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert!(
        d["model"]
            .as_str()
            .unwrap()
            .starts_with("toolnexus-student"),
        "{d}"
    );

    // In front of the offline demo tape: the student or the tape answers.
    let out = cascade_eval(
        dir.path(),
        &student,
        &model,
        &["--call", "triage", "--json"],
    );
    assert_eq!(out.code, 0, "{out:?}");

    // `batch` over the cascade says how the calls split.
    let labels = std::fs::read_to_string(demo("labels.jsonl")).unwrap();
    let states: String = labels
        .lines()
        .filter(|l| l.starts_with('{'))
        .take(3)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!("{}\n", v["state"])
        })
        .collect();
    std::fs::write(dir.join("states.jsonl"), states).unwrap();
    // The student in front of the offline demo tape, for batch and assess.
    let tape = demo("tape.json");
    let cascade = [
        "--cascade",
        "--student",
        &student,
        "--model-dir",
        &model,
        "--tape",
        &tape,
        "--questions",
        &questions,
    ];
    let args = [
        &["batch"][..],
        &cascade,
        &["--states", "states.jsonl", "--out", "batch.jsonl"],
    ]
    .concat();
    let out = tn(dir.path(), &args);
    assert_eq!(out.code, 0, "{out:?}");
    let line = out.stdout.lines().last().unwrap_or_default();
    let split = line
        .split_once("; the student answered ")
        .and_then(|(_, rest)| rest.split_once("; "))
        .map(|(counts, _)| counts.to_string())
        .unwrap_or_else(|| panic!("no cascade split: {line}"));
    let (local, passed) = split.split_once(" and passed ").unwrap();
    let local: u64 = local.parse().unwrap();
    let passed: u64 = passed.trim_end_matches(" on").parse().unwrap();
    assert_eq!(local + passed, 3, "{line}");

    // `assess run` over the cascade says who answered each row: the shares
    // add up to every answered row.
    let run = dir.join("cascade.run.jsonl").display().to_string();
    let examples = demo("labels.jsonl");
    let args = [
        &["assess", "run"][..],
        &cascade,
        &["--examples", &examples, "--out", &run],
    ]
    .concat();
    let out = tn(dir.path(), &args);
    assert_eq!(out.code, 0, "{out:?}");
    let line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("answered by: "))
        .unwrap_or_else(|| panic!("no answered-by line: {}", out.stdout));
    let rows: usize = line
        .trim_start_matches("answered by: ")
        .split(", ")
        // "MODEL ROWS (SHARE)": the rows are the second word from the end.
        .map(|part| {
            part.split(' ')
                .rev()
                .nth(1)
                .unwrap()
                .parse::<usize>()
                .unwrap()
        })
        .sum();
    assert_eq!(rows, 120, "{line}");
    let out = tn(dir.path(), &["assess", "report", &run, "--json"]);
    assert_eq!(out.code, 0, "{out:?}");
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let shares: f64 = report["answered_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["share"].as_f64().unwrap())
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "{report}");
}

#[test]
fn a_missing_model_names_the_directory_and_the_fetch_command_once() {
    let dir = TempDir::new("local-missing");
    let missing = dir.join("nowhere").display().to_string();
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "local",
            "--model-dir",
            &missing,
            "--questions",
            &demo("questions.json"),
            "--state",
            "{}",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("nowhere"), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("toolnexus model fetch").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("scripts/fetch-model"),
        "{}",
        out.stderr
    );
}

/// `serve --style local`: the library's System One style gets, over loopback,
/// the zero-shot answers the library computes in process, marked uncalibrated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_with_the_local_style() {
    use toolnexus::classifier::{
        ClassifierOptions, ClassifierStyle, Questions, choice_over, create_classifier,
    };
    let dir = TempDir::new("serve-local");
    let model = tiny_model(&dir);
    let server =
        crate::support::Server::start(dir.path(), &["--style", "local", "--model-dir", &model]);
    let remote = create_classifier(ClassifierOptions {
        style: ClassifierStyle::SystemOne,
        base_url: format!("{}/v1", server.url),
        model: toolnexus_local::ZERO_SHOT_MODEL.into(),
        retries: -1,
        ..Default::default()
    })
    .unwrap();
    let qs = Questions::from([(
        "desk".to_string(),
        choice_over(
            "Which desk owns this ticket?",
            [
                ("billing", "money moved: a double charge, a refund owed"),
                ("shipping", "a physical parcel is late or damaged"),
            ],
        )
        .into(),
    )]);
    let state = serde_json::json!({"message": "my parcel is late"});
    let got = remote.evaluate(state.clone(), &qs).await.unwrap();
    let here = toolnexus_local::zero_shot(toolnexus_local::Embedder::load(&model).unwrap());
    let want = here.evaluate(state, &qs).await.unwrap();
    assert_eq!(got.model, toolnexus_local::ZERO_SHOT_MODEL);
    assert!(!got.calibrated);
    assert_eq!(got.answers, want.answers);
}

#[test]
fn a_question_with_nothing_to_read_is_refused_by_its_key() {
    // The local styles answered a noul with empty instructions p = 1.00.
    let dir = TempDir::new("local-blank");
    let model = tiny_model(&dir);
    for (questions, says) in [
        (
            r#"{"spam": {"type": "noul", "instructions": "  "}}"#,
            r#"question "spam": a noul needs instructions: there is nothing to read"#,
        ),
        (
            r#"{"spam": {"type": "noul"}}"#,
            r#"question "spam": a noul needs instructions: there is nothing to read"#,
        ),
        (
            r#"{"desk": {"type": "choice", "instructions": "", "criteria": {"a": null, "b": ""}}}"#,
            r#"question "desk": a choice needs instructions or an option's description: there is nothing to read"#,
        ),
        (
            r#"{"risk": {"type": "score", "instructions": "", "criteria": ["", " "]}}"#,
            r#"question "risk": a score needs instructions or a level's text: there is nothing to read"#,
        ),
    ] {
        let out = eval_local(&dir, &model, questions, r#"{"message": "hello"}"#);
        assert_eq!(out.code, 2, "{questions}: {out:?}");
        assert!(out.stderr.contains(says), "{questions}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{questions}: {}", out.stdout);
    }

    // A choice read by its options' descriptions needs no instructions.
    let desk = r#"{"desk": {"type": "choice", "criteria": {"billing": "money moved", "shipping": "a parcel is late"}}}"#;
    let out = eval_local(&dir, &model, desk, r#"{"message": "my parcel is late"}"#);
    assert_eq!(out.code, 0, "{out:?}");
}

/// `--precision`: auto answers as f32 does (bf16 where it outruns f32 here);
/// bf16 answers, or exits 2 saying the CPU has no bf16 unit; a style with no
/// encoder here, or a bad value, is bad usage (exit 2) naming the flag.
#[test]
fn precision_picks_the_encoders_arithmetic_and_bad_usage_exits_2() {
    let dir = TempDir::new("local-precision");
    let model = tiny_model(&dir);
    let questions = r#"{"desk":{"type":"choice","instructions":"Which desk?","criteria":{"billing":"money moved","shipping":"a parcel is late"}}}"#;
    let run = |extra: &[&str]| {
        let mut args = vec!["eval", "--model-dir", &model, "--questions", questions];
        args.extend_from_slice(&["--state", r#""my parcel is late""#, "--json"]);
        args.extend_from_slice(extra);
        tn(dir.path(), &args)
    };
    let choice = |out: &Out| {
        let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
        v["answers"]["desk"]["choice"].as_str().unwrap().to_string()
    };
    let plain = run(&["--style", "local"]);
    assert_eq!(plain.code, 0, "{plain:?}");
    let auto = run(&["--style", "local", "--precision", "auto"]);
    assert_eq!(auto.code, 0, "{auto:?}");
    assert_eq!(choice(&auto), choice(&plain));
    let bf16 = run(&["--style", "local", "--precision", "bf16"]);
    match bf16.code {
        0 => assert_eq!(choice(&bf16), choice(&plain)),
        _ => {
            no_bf16_unit(&bf16);
        }
    }
    let tape = run(&["--style", "tape", "--precision", "bf16"]);
    assert_eq!(tape.code, 2, "{tape:?}");
    assert!(
        tape.stderr
            .contains("--precision bf16: --style tape runs no encoder"),
        "{}",
        tape.stderr
    );
    let bad = run(&["--style", "local", "--precision", "fp16"]);
    assert_eq!(bad.code, 2, "{bad:?}");
    assert!(
        bad.stderr.contains("\"fp16\" is not a precision"),
        "{}",
        bad.stderr
    );
}
