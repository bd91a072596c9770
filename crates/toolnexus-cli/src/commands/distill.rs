//! `toolnexus distill`: a student trained on a teacher's decisions (a tape, or
//! labelled examples whose gold labels stand for the teacher), on the embedded
//! model; prints each head's held-out agreement and calibration and the cascade
//! threshold, and writes the student file.

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::classifier::{Decision, Question, Questions};
use toolnexus::judge::{Tape, TapeOutcome};
use toolnexus_local::StateText;
use toolnexus_local::student::{self, TrainOptions, distill, teacher_rows_as};

use crate::args::DistillArgs;
use crate::exit::{self, Exit};
use crate::{input, style};

/// Runs `toolnexus distill`.
pub fn run(a: DistillArgs) -> Result<Exit> {
    if !(0.0..=1.0).contains(&a.target_agreement) {
        return Err(exit::usage(format!(
            "--target-agreement {}: a share between 0 and 1",
            a.target_agreement
        )));
    }
    if !(a.holdout > 0.0 && a.holdout < 1.0) {
        return Err(exit::usage(format!(
            "--holdout {}: a share between 0 and 1, both excluded",
            a.holdout
        )));
    }
    let mut inputs: Vec<(&str, &std::path::Path)> = Vec::new();
    for (flag, file) in [("--tape", &a.tape), ("--labels", &a.labels)] {
        if let Some(f) = file {
            inputs.push((flag, f));
        }
    }
    if let Some(q) = a
        .questions
        .as_deref()
        .filter(|q| std::path::Path::new(q).is_file())
    {
        inputs.push(("--questions", std::path::Path::new(q)));
    }
    input::refuse_overwrite("--out", &a.out, &inputs)?;
    let (questions, items, source) = match (&a.tape, &a.labels) {
        (Some(tape), _) => from_tape(&a, tape)?,
        (None, Some(labels)) => from_labels(&a, labels)?,
        (None, None) => {
            return Err(exit::usage(
                "--tape or --labels is required (the teacher's decisions)",
            ));
        }
    };
    let embedder = style::embedder(a.model_dir.as_deref())?;
    tell!(
        "distill: embedding {} states from {source}; heads start from {}",
        items.len(),
        if a.from_scratch {
            "zero"
        } else {
            "the zero-shot answer"
        }
    );
    let state_text = if a.state_text == "lines" {
        StateText::Lines
    } else {
        StateText::Json
    };
    let rows =
        teacher_rows_as(&embedder, &items, state_text).map_err(|e| exit::usage(e.to_string()))?;
    let priors = if a.from_scratch {
        Default::default()
    } else {
        let zero_shot = toolnexus_local::ZeroShot::new(embedder.clone());
        questions
            .iter()
            // A box question has no head: distill names it.
            .filter(|(_, q)| !matches!(q, Question::Box(_)))
            .map(|(key, q)| {
                let head = zero_shot
                    .linear_head(key, q)
                    .map_err(|e| exit::usage(e.to_string()))?;
                Ok((key.clone(), head))
            })
            .collect::<Result<_>>()?
    };
    let options = TrainOptions {
        holdout: a.holdout,
        seed: a.seed,
        target_agreement: a.target_agreement,
        priors,
        state_text,
        ..Default::default()
    };
    let (student, report) = distill(&rows, &questions, embedder.model_hash(), &options)
        .map_err(|e| exit::usage(e.to_string()))?;
    put!("{}", report.table());
    student
        .save(&a.out)
        .map_err(|e| exit::io(format!("--out: {e}")))?;
    tell!("wrote {}", a.out.display());
    Ok(Exit::Success)
}

type Items = (Questions, Vec<(Value, Decision)>, String);

/// Every recorded decision of the tape (of `--call`), with its questions.
fn from_tape(a: &DistillArgs, path: &std::path::Path) -> Result<Items> {
    let tape = Tape::load(path).map_err(|e| exit::usage(format!("--tape: {e}")))?;
    let questions = match &a.questions {
        Some(q) => Some(input::read_questions(q)?),
        None => None,
    };
    let mut asked: Option<Questions> = questions.clone();
    let mut items = Vec::new();
    // Entries are named as `tape replay` names them: call name and index in
    // recording order.
    for call in tape.call_names() {
        if a.call.as_ref().is_some_and(|c| *c != call) {
            continue;
        }
        for (index, e) in tape.call_entries(&call).into_iter().enumerate() {
            let TapeOutcome::Decision(d) = e.outcome else {
                continue;
            };
            let want = asked.get_or_insert_with(|| e.questions.clone());
            if questions.is_none() && *want != e.questions {
                return Err(exit::usage(format!(
                    "--tape {}: the recordings ask different question sets; name one with --questions (and --call)",
                    path.display()
                )));
            }
            student::check_teacher(&d, want, Some(&e.questions)).map_err(|err| {
                exit::usage(format!(
                    "--tape {}: call {call:?} entry {index}: the teacher's decision does not fit: {err}",
                    path.display()
                ))
            })?;
            items.push((e.state, d));
        }
    }
    let questions = asked.ok_or_else(|| {
        exit::usage(format!(
            "--tape {}: no recorded decisions{}",
            path.display(),
            match &a.call {
                Some(c) => format!(" under call {c:?}"),
                None => String::new(),
            }
        ))
    })?;
    Ok((questions, items, format!("tape {}", path.display())))
}

/// Labelled examples, each gold label a certain teacher answer.
fn from_labels(a: &DistillArgs, path: &std::path::Path) -> Result<Items> {
    let q = a
        .questions
        .as_ref()
        .ok_or_else(|| exit::usage("--labels needs --questions"))?;
    let questions = input::read_questions(q)?;
    let examples = toolnexus::assess::read_examples(path, &questions)
        .map_err(|e| exit::usage(e.to_string()))?;
    let mut items = Vec::new();
    for ex in examples {
        let mut answers = serde_json::Map::new();
        for (key, gold) in &ex.labels {
            let Some(q) = questions.get(key) else {
                continue;
            };
            answers.insert(key.clone(), certain(q, gold));
        }
        let d = Decision::from_value(&json!({"model": "labels", "answers": answers}))
            .map_err(|e| exit::usage(format!("{}:{}: {}", path.display(), ex.line, e.detail())))?;
        student::check_teacher(&d, &questions, None).map_err(|e| {
            exit::usage(format!(
                "--labels {}:{}: the label does not fit: {e}",
                path.display(),
                ex.line
            ))
        })?;
        items.push((ex.state, d));
    }
    Ok((questions, items, format!("labels {}", path.display())))
}

/// A gold label as the answer of a teacher that is sure of it.
fn certain(q: &Question, gold: &toolnexus::assess::Gold) -> Value {
    use toolnexus::assess::Gold;
    match (q, gold) {
        (_, Gold::Noul(y)) => json!({"type": "noul", "noul": if *y { 1.0 } else { 0.0 }}),
        (Question::Choice(c), Gold::Choice(id)) => {
            let probs: serde_json::Map<String, Value> = c
                .criteria
                .keys()
                .map(|k| (k.clone(), Value::from(if k == id { 1.0 } else { 0.0 })))
                .collect();
            json!({"type": "choice", "choice": id, "confidence": 1.0, "probabilities": probs})
        }
        (Question::Score(s), Gold::Score(level)) => {
            let n = s.criteria.len();
            let probs: serde_json::Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        i.to_string(),
                        Value::from(if i == *level { 1.0 } else { 0.0 }),
                    )
                })
                .collect();
            let legend: serde_json::Map<String, Value> = (0..n)
                .map(|i| (i.to_string(), Value::from(format!("level {i}"))))
                .collect();
            json!({"type": "score", "score": *level as f64, "confidence": 1.0, "legend": legend, "probabilities": probs})
        }
        _ => Value::Null,
    }
}
