//! `toolnexus distill`: a student trained on a teacher's decisions (a tape, or
//! labelled examples whose gold labels stand for the teacher), on the embedded
//! model; prints each head's held-out agreement and calibration and the cascade
//! threshold, and writes the student file.

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::{Decision, Question, Questions};
use toolnexus::judge::Tape;
use toolnexus_local::StateText;
use toolnexus_local::student::{Teacher, TeacherError, TrainOptions, distill, teacher_rows_as};

use crate::args::DistillArgs;
use crate::exit::{self, Exit};
use crate::input;

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
    // A missing model names the directory and how to fetch it.
    let embedder = toolnexus_stack::embedder(a.model_dir.as_deref())
        .map_err(|e| exit::usage(e.to_string()))?;
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
    let questions = a
        .questions
        .as_deref()
        .map(input::read_questions)
        .transpose()?;
    let teacher = Teacher::from_tape(&tape, questions, a.call.as_deref()).map_err(|e| {
        exit::usage(match e {
            TeacherError::MixedQuestions => format!(
                "--tape {}: the recordings ask different question sets; name one with --questions (and --call)",
                path.display()
            ),
            e => format!("--tape {}: {e}", path.display()),
        })
    })?;
    Ok((
        teacher.questions,
        teacher.items,
        format!("tape {}", path.display()),
    ))
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
    let teacher = Teacher::from_examples(examples, questions).map_err(|e| {
        exit::usage(match e {
            TeacherError::Label { .. } => format!("{}:{e}", path.display()),
            e => format!("--labels {}:{e}", path.display()),
        })
    })?;
    Ok((
        teacher.questions,
        teacher.items,
        format!("labels {}", path.display()),
    ))
}
