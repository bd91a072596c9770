//! Students: per-question heads trained on a teacher's decisions.
//!
//! A student answers from a sentence embedding of the state with one small
//! softmax-regression head per question, trained to reproduce the teacher's
//! distributions (soft targets, L2, Adam, early stopping on a held-out split of
//! the rows). [`distill`] trains every head on one split, reports each head's
//! held-out agreement with the teacher and its calibration, and picks the
//! cascade threshold: the lowest row confidence (the least confident of the
//! asked keys) at which the rows answered locally still agree with the teacher
//! on every key at least `target_agreement` of the time.
//!
//! The student file (`toolnexus.student`, version 1) pins what it was trained
//! on: the embedding model's SHA-256, each question's canonical hash and the
//! teacher's model id. A student answers only questions whose hash matches.
//!
//! ```
//! use serde_json::json;
//! use toolnexus::classifier::{Decision, Questions, choice_over};
//! use toolnexus_local::student::{TeacherRow, TrainOptions, distill};
//!
//! let qs = Questions::from([(
//!     "desk".to_string(),
//!     choice_over("Which desk?", [("billing", "money"), ("shipping", "parcels")]).into(),
//! )]);
//! // Two clusters of embeddings; the teacher sends the first to billing.
//! let rows: Vec<TeacherRow> = (0..200)
//!     .map(|i| {
//!         let billing = i % 2 == 0;
//!         let x = if billing { 1.0 } else { -1.0 };
//!         let e = vec![x, 0.1 * ((i % 7) as f32 - 3.0), 0.3];
//!         let d = Decision::from_value(&json!({"model": "teacher-1", "answers": {"desk": {
//!             "type": "choice", "choice": if billing { "billing" } else { "shipping" },
//!             "confidence": 0.9,
//!             "probabilities": {"billing": if billing { 0.9 } else { 0.1 }, "shipping": if billing { 0.1 } else { 0.9 }}}}}))
//!             .unwrap();
//!         TeacherRow { embedding: e, decision: d }
//!     })
//!     .collect();
//! let (student, report) = distill(&rows, &qs, "sha256:model", &TrainOptions::default())?;
//! assert!(report.questions["desk"].agreement > 0.99, "{report:?}");
//! let (d, confidence) = student.answer(&[1.0, 0.0, 0.3], &qs)?;
//! assert_eq!(d.choice("desk").unwrap().choice, "billing");
//! assert!(confidence > 0.5 && !d.calibrated);
//! # Ok::<(), toolnexus_local::student::StudentError>(())
//! ```

mod cascade;
mod file;
mod fit;
mod rows;
mod runtime;
mod teacher;
#[cfg(test)]
mod tests;
mod train;

pub use cascade::{CascadeStats, cascade};
pub use file::{Head, HeadReport, STUDENT_FORMAT, STUDENT_VERSION, Student, StudentError};
pub use fit::{distill, distill_rows};
pub use rows::{MEMORY_ROWS, TeacherRows};
pub use runtime::{LocalStudent, STUDENT_ENGINE, STUDENT_STYLE, student};
pub use teacher::{ExampleChunks, Teacher, TeacherError};
pub use train::{
    DistillReport, MIN_ROWS, TeacherRow, TrainOptions, check_teacher, teacher_rows, teacher_rows_as,
};
