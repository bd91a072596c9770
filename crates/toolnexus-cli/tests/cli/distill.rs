//! `toolnexus distill` refuses teachers that do not fit the questions, naming
//! the tape entry or the labelled line; refuses a question with one answer;
//! never prints an impossible figure; never writes over one of its inputs.

use serde_json::{Value, json};
use toolnexus::classifier::{Decision, Questions, questions_from_wire};
use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};

use crate::support::{Out, TempDir, tn};

/// A choice between two desks.
fn desk_questions(options: &[&str]) -> Value {
    let criteria: serde_json::Map<String, Value> = options
        .iter()
        .map(|o| {
            (
                o.to_string(),
                Value::from(format!("the {o} desk handles it")),
            )
        })
        .collect();
    json!({"desk": {"type": "choice", "instructions": "Which desk?", "criteria": criteria}})
}

/// A teacher's choice answer, sure of `pick` among `options`.
fn choice(pick: &str, options: &[&str], sure: f64) -> Value {
    let probs: serde_json::Map<String, Value> = options
        .iter()
        .map(|o| {
            let p = if *o == pick {
                sure
            } else {
                (1.0 - sure) / (options.len() - 1) as f64
            };
            (o.to_string(), Value::from(p))
        })
        .collect();
    json!({"type": "choice", "choice": pick, "confidence": sure, "probabilities": probs})
}

/// A tape of 40 recordings under call `route`, answers from `answer(i)`,
/// asked `questions`.
fn tape(dir: &TempDir, questions: &Value, answer: impl Fn(usize) -> Value) -> String {
    let qs: Questions = questions_from_wire(questions).unwrap();
    let tape = Tape::new();
    for i in 0..40 {
        let d = json!({"model": "teacher-1", "answers": {"desk": answer(i)}});
        tape.record(TapeEntry {
            call_name: "route".into(),
            model: "teacher-1".into(),
            state: json!({"message": format!("ticket {i} about {}", if i % 2 == 0 { "a refund" } else { "a parcel" })}),
            questions: qs.clone(),
            outcome: TapeOutcome::Decision(Decision::from_value(&d).unwrap()),
            request_id: None,
        });
    }
    let path = dir.join("teacher.tape.json");
    tape.save(&path).unwrap();
    path.display().to_string()
}

fn model(dir: &TempDir) -> String {
    let m = dir.join("model");
    toolnexus_local::tiny_model_for_tests(&m).unwrap();
    m.display().to_string()
}

fn distill(dir: &TempDir, args: &[&str]) -> Out {
    let model = model(dir);
    let out = dir.join("student.json").display().to_string();
    let mut all = vec!["distill", "--model-dir", &model, "--out", &out];
    all.extend(args);
    tn(dir.path(), &all)
}

/// The recording order of the tape: the index `tape replay` shows for a state.
fn entry_of(tape: &str, n: usize) -> usize {
    let t = Tape::load(tape).unwrap();
    t.call_entries("route")
        .iter()
        .position(|e| {
            e.state["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("ticket {n} "))
        })
        .unwrap()
}

#[test]
fn a_teacher_answer_outside_the_questions_is_refused_naming_the_entry() {
    let two = ["billing", "shipping"];
    type Case = (Box<dyn Fn(usize) -> Value>, &'static str);
    let cases: Vec<Case> = vec![
        (
            Box::new(move |i| {
                if i == 7 {
                    let mut c = choice("billing", &two, 0.9);
                    c["probabilities"]["billing"] = json!(1.4);
                    c
                } else {
                    choice(two[i % 2], &two, 0.9)
                }
            }),
            "probability \"billing\" 1.4 is outside [0, 1]",
        ),
        (
            Box::new(move |i| {
                if i == 7 {
                    choice("kitchen", &["billing", "kitchen"], 0.9)
                } else {
                    choice(two[i % 2], &two, 0.9)
                }
            }),
            "choice \"kitchen\" is not one of the options offered (\"billing\", \"shipping\")",
        ),
    ];
    for (answer, want) in cases {
        let dir = TempDir::new("distill-unfit");
        let t = tape(&dir, &desk_questions(&two), answer);
        let out = distill(&dir, &["--tape", &t]);
        assert_eq!(out.code, 2, "{out:?}");
        let entry = entry_of(&t, 7);
        assert!(
            out.stderr
                .contains(&format!("call \"route\" entry {entry}:")),
            "names the entry: {}",
            out.stderr
        );
        assert!(out.stderr.contains(want), "{want:?} in {}", out.stderr);
        assert!(!dir.join("student.json").exists(), "nothing written");
    }
}

#[test]
fn a_tape_recorded_over_another_option_set_is_refused() {
    let dir = TempDir::new("distill-options");
    let three = ["account", "billing", "shipping"];
    let t = tape(&dir, &desk_questions(&three), |i| {
        choice(three[i % 3], &three, 0.8)
    });
    let q = dir.write(
        "q.json",
        &desk_questions(&["billing", "shipping"]).to_string(),
    );
    let out = distill(&dir, &["--tape", &t, "--questions", &q]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("call \"route\" entry 0:"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "the teacher was offered options \"account\", \"billing\", \"shipping\", this question offers \"billing\", \"shipping\""
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_question_with_one_answer_in_the_training_set_is_refused() {
    let dir = TempDir::new("distill-one-class");
    let q = dir.write(
        "q.json",
        &desk_questions(&["billing", "shipping"]).to_string(),
    );
    let mut labels = String::new();
    for i in 0..30 {
        labels.push_str(
            &json!({"id": format!("t{i}"), "state": {"message": format!("ticket {i}")}, "labels": {"desk": "billing"}})
                .to_string(),
        );
        labels.push('\n');
    }
    let l = dir.write("labels.jsonl", &labels);
    let out = distill(&dir, &["--labels", &l, "--questions", &q]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(
            "question \"desk\": the teacher gave the same answer (\"billing\") on all 30 rows"
        ),
        "{}",
        out.stderr
    );
    assert!(!dir.join("student.json").exists());
}

#[test]
fn the_printed_figures_are_possible_ones() {
    let dir = TempDir::new("distill-figures");
    let two = ["billing", "shipping"];
    // Sure teachers: a probability of exactly 1 must not print a negative log loss.
    let t = tape(&dir, &desk_questions(&two), |i| {
        choice(two[i % 2], &two, 1.0)
    });
    let out = distill(&dir, &["--tape", &t]);
    assert_eq!(out.code, 0, "{out:?}");
    let row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("desk"))
        .unwrap_or_else(|| panic!("{}", out.stdout));
    let cells: Vec<&str> = row.split_whitespace().collect();
    let agreement: f64 = cells[4].trim_end_matches('%').parse().unwrap();
    let log_loss: f64 = cells[5].parse().unwrap();
    let ece: f64 = cells[6].parse().unwrap();
    assert!((0.0..=100.0).contains(&agreement), "{row}");
    assert!(log_loss >= 0.0 && !cells[5].starts_with('-'), "{row}");
    assert!((0.0..=1.0).contains(&ece), "{row}");
    assert!(
        cells[2].parse::<usize>().unwrap() > 0,
        "held-out rows: {row}"
    );
}

#[test]
fn distill_never_writes_over_its_inputs() {
    let dir = TempDir::new("distill-overwrite");
    let two = ["billing", "shipping"];
    let t = tape(&dir, &desk_questions(&two), |i| {
        choice(two[i % 2], &two, 0.9)
    });
    let before = std::fs::read(&t).unwrap();
    let model = model(&dir);
    let out = tn(
        dir.path(),
        &["distill", "--tape", &t, "--model-dir", &model, "--out", &t],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("is the --tape input"), "{}", out.stderr);
    assert_eq!(std::fs::read(&t).unwrap(), before);
}
