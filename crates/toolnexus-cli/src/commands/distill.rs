//! `toolnexus distill`: a student trained on a teacher's decisions (a tape, or
//! labelled examples whose gold labels stand for the teacher), on the embedded
//! model; prints each head's held-out agreement and calibration and the cascade
//! threshold, and writes the student file.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use toolnexus::assess::check_examples;
use toolnexus::classifier::{Decision, Question, Questions};
use toolnexus::judge::Tape;
use toolnexus_local::StateText;
use toolnexus_local::student::{Teacher, TeacherError, TeacherRows, TrainOptions, distill_rows};

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
    let mut inputs: Vec<(&str, &Path)> = [("--tape", &a.tape), ("--labels", &a.labels)]
        .into_iter()
        .filter_map(|(flag, file)| Some((flag, file.as_deref()?)))
        .collect();
    if let Some(q) = a.questions.as_deref().filter(|q| Path::new(q).is_file()) {
        inputs.push(("--questions", Path::new(q)));
    }
    input::refuse_overwrite("--out", &a.out, &inputs)?;
    let (questions, items, n, source) = match (&a.tape, &a.labels) {
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
        n,
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
    let mut rows = TeacherRows::new(&questions);
    let mut embed = |items: &[(Value, Decision)]| {
        rows.embed(&embedder, items, state_text)
            .map_err(|e| exit::usage(e.to_string()))
    };
    match &items {
        Items::Tape(all) => all.chunks(64).try_for_each(embed)?,
        Items::Labels(path) => examples(path, &questions)?.try_for_each(|c| embed(&c?.items))?,
    }
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
    let (student, report) = distill_rows(rows, embedder.model_hash(), &options)
        .map_err(|e| exit::usage(e.to_string()))?;
    put!("{}", report.table());
    student
        .save(&a.out)
        .map_err(|e| exit::io(format!("--out: {e}")))?;
    tell!("wrote {}", a.out.display());
    Ok(Exit::Success)
}

/// The teacher's decisions: a tape's, held whole, or a checked labelled
/// examples file, read again 64 at a time; with how many there are.
enum Items {
    Tape(Vec<(Value, Decision)>),
    Labels(PathBuf),
}

/// Every recorded decision of the tape (of `--call`), with its questions.
fn from_tape(a: &DistillArgs, path: &Path) -> Result<(Questions, Items, usize, String)> {
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
    let (source, n) = (format!("tape {}", path.display()), teacher.items.len());
    Ok((teacher.questions, Items::Tape(teacher.items), n, source))
}

/// Labelled examples, each gold label a certain teacher answer: every error a
/// whole read gives, in its order, before any is embedded.
fn from_labels(a: &DistillArgs, path: &Path) -> Result<(Questions, Items, usize, String)> {
    let q = a
        .questions
        .as_ref()
        .ok_or_else(|| exit::usage("--labels needs --questions"))?;
    let questions = input::read_questions(q)?;
    let n = check_examples(path, &questions).map_err(|e| exit::usage(e.to_string()))?;
    examples(path, &questions)?.try_for_each(|c| c.map(drop))?;
    let source = format!("labels {}", path.display());
    Ok((questions, Items::Labels(path.to_path_buf()), n, source))
}

/// A checked labelled examples file, 64 examples at a time.
fn examples<'q>(
    path: &'q Path,
    questions: &'q Questions,
) -> Result<impl Iterator<Item = Result<Teacher>> + 'q> {
    let fail = move |e| match e {
        TeacherError::Examples(e) => exit::usage(e.to_string()),
        TeacherError::Label { .. } => exit::usage(format!("{}:{e}", path.display())),
        e => exit::usage(format!("--labels {}:{e}", path.display())),
    };
    Ok(Teacher::example_chunks(path, questions, 64)
        .map_err(fail)?
        .map(move |c| c.map_err(fail)))
}
