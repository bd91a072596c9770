//! Training and file checks of the students, on small synthetic rows.

use serde_json::{Value, json};
use toolnexus::classifier::{Decision, Questions};

use super::fit::{distill, distill_rows};
use super::train::*;

fn qs() -> Questions {
    toolnexus::judge::questions(&[
        toolnexus::judge::noul("spam", "Is it spam?"),
        toolnexus::judge::noul("rude", "Is it rude?"),
    ])
    .unwrap()
}

/// 60 rows in two clusters; `answers(i)` is row i's answers object.
fn rows(answers: impl Fn(usize) -> Value) -> Vec<TeacherRow> {
    (0..60)
        .map(|i| {
            let x = if i % 2 == 0 { 1.0 } else { -1.0 };
            TeacherRow {
                embedding: vec![x, 0.1 * ((i % 7) as f32 - 3.0), 0.3],
                decision: Decision::from_value(&json!({"model": "t", "answers": answers(i)}))
                    .unwrap(),
            }
        })
        .collect()
}

fn noul(p: f64) -> Value {
    json!({"type": "noul", "noul": p})
}

fn split(i: usize) -> f64 {
    if i.is_multiple_of(2) { 0.9 } else { 0.1 }
}

#[test]
fn a_teacher_number_outside_zero_to_one_is_refused_naming_the_row() {
    let rows = rows(|i| {
        let spam = if i == 3 { 1.5 } else { split(i) };
        json!({"spam": noul(spam), "rude": noul(split(i + 1))})
    });
    let e = distill(&rows, &qs(), "m", &TrainOptions::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "distill: row 3: question \"spam\": noul 1.5 is outside [0, 1]"
    );
}

#[test]
fn a_question_with_one_answer_everywhere_is_refused_naming_it() {
    let rows = rows(|i| json!({"spam": noul(split(i)), "rude": noul(0.2 + 0.01 * (i % 5) as f64)}));
    let e = distill(&rows, &qs(), "m", &TrainOptions::default()).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "distill: question \"rude\": the teacher gave the same answer (\"false\") on all 60 rows"
        ),
        "{e}"
    );
}

#[test]
fn a_question_no_held_out_row_answers_is_refused_not_reported_as_zero() {
    let o = TrainOptions::default();
    let n_held = (60.0 * o.holdout).round() as usize;
    let held: Vec<usize> = shuffled(60, o.seed)[..n_held].to_vec();
    let rows = rows(|i| {
        if held.contains(&i) {
            json!({"spam": noul(split(i))})
        } else {
            json!({"spam": noul(split(i)), "rude": noul(split(i + 1))})
        }
    });
    let e = distill(&rows, &qs(), "m", &o).unwrap_err();
    assert!(
        e.to_string().starts_with(&format!(
            "distill: question \"rude\": none of the {n_held} held-out rows answers it"
        )),
        "{e}"
    );
}

#[test]
fn figures_are_possible_ones() {
    // Sure teachers: the held-out log loss is near 0 and never below it.
    let rows = rows(|i| {
        let y = if i % 2 == 0 { 1.0 } else { 0.0 };
        json!({"spam": noul(y), "rude": noul(1.0 - y)})
    });
    let (_, report) = distill(&rows, &qs(), "m", &TrainOptions::default()).unwrap();
    for (k, r) in &report.questions {
        assert!(
            r.log_loss >= 0.0 && r.log_loss.is_sign_positive(),
            "{k}: {r:?}"
        );
        assert!((0.0..=1.0).contains(&r.agreement), "{k}: {r:?}");
        assert!((0.0..=1.0).contains(&r.ece), "{k}: {r:?}");
        assert!(r.holdout > 0, "{k}: {r:?}");
    }
}

#[test]
fn check_teacher_names_another_level_count() {
    let now = toolnexus::judge::questions(&[toolnexus::judge::score(
        "urgency",
        "How soon?",
        ["low", "high"],
    )])
    .unwrap();
    let then = toolnexus::judge::questions(&[toolnexus::judge::score(
        "urgency",
        "How soon?",
        ["low", "normal", "high"],
    )])
    .unwrap();
    let d = Decision::from_value(&json!({"model": "t", "answers": {"urgency": {
        "type": "score", "score": 2.0, "confidence": 0.8,
        "legend": {"0": "low", "1": "normal", "2": "high"},
        "probabilities": {"0": 0.1, "1": 0.1, "2": 0.8}}}}))
    .unwrap();
    let e = check_teacher(&d, &now, Some(&then)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "question \"urgency\": the teacher was asked on 3 levels, this rubric has 2"
    );
    let e = check_teacher(&d, &now, None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "question \"urgency\": score 2 is outside the rubric's levels 0..=1"
    );
}

#[test]
fn a_run_whose_rows_spill_to_a_file_trains_the_same_student_byte_for_byte() {
    // Varied rows, some without "rude", so that the shuffled read-back order
    // and the left-out rows both matter.
    let mut rows = rows(|i| {
        if i % 5 == 0 {
            json!({"spam": noul(split(i))})
        } else {
            json!({"spam": noul(split(i)), "rude": noul(split(i / 3))})
        }
    });
    for (i, r) in rows.iter_mut().enumerate() {
        r.embedding[2] = 0.01 * (i as f32).sin();
    }
    let o = TrainOptions {
        seed: 7,
        ..TrainOptions::default()
    };
    let (held, report) = distill(&rows, &qs(), "m", &o).unwrap();
    for memory_rows in [1, 7, 59] {
        let mut flat = super::TeacherRows::new(&qs()).with_memory_rows(memory_rows);
        for r in &rows {
            flat.push(&r.embedding, &r.decision).unwrap();
        }
        assert!(flat.spilled(), "{memory_rows}");
        let (spilled, spilled_report) = distill_rows(flat, "m", &o).unwrap();
        assert_eq!(spilled.to_json(), held.to_json(), "{memory_rows}");
        assert_eq!(spilled_report, report, "{memory_rows}");
    }
}
