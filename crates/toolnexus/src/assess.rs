//! Measure judgment quality: labelled examples, metrics, thresholds and calibration
//! (SPEC §13). Everything here is a pure function of recorded answers and labels;
//! only the CLI's `assess run` calls a backend.
//!
//! Two file formats live here: the run file ([`Run`], written by
//! [`run_examples`]) and the batch out file ([`out`]: its header and
//! fingerprint, resume, and a reader for the result lines).

mod answers;
pub mod calibrate;
mod calibration;
mod compare;
mod drift;
mod error;
mod examples;
mod file;
pub mod gates;
pub mod metrics;
pub mod out;
pub mod report;
pub(crate) mod rng;
mod run;
mod samples;
mod sorted;
mod stream;
mod summary;
pub(crate) mod svg;
pub mod synthetic;
mod tally;
mod text;
mod thresholds;

pub use answers::{Answers, AnswersKind, read_answers};
pub use calibration::{
    CALIBRATION_FORMAT, CALIBRATION_VERSION, CalibrateOptions, CalibratedQuestion, Calibration,
    CalibrationReport, QuestionCalibration, QuestionMap, calibrate_run, calibrating,
};
pub use compare::{
    CheckReport, CheckStatus, Comparison, CutCheck, QuestionComparison, check_thresholds,
    compare_runs,
};
pub use drift::{
    Answered, Change, Drift, DriftOptions, QuestionDrift, answer_shift, answer_text, drift,
};
pub use error::{AssessError, AssessErrorKind};
pub use examples::{Example, ExampleReader, Gold, check_examples, parse_examples, read_examples};
pub use run::{Outcome, Progress, RUN_FORMAT, RUN_VERSION, Row, Run, RunOptions, run_examples};
pub use samples::{
    RunSample, RunSamples, RunsFit, SampleCounts, fit_runs, fit_samples, read_fit_samples,
};
pub use sorted::TempFile;
pub use stream::{FileRun, RunIds, RunReader, run_examples_file, summarize_file};
pub use summary::{
    AnsweredBy, CURVE_POINTS, CostSummary, ECE_BINS, GateSummary, PRECISION_CUTS, PrecisionAt,
    QuestionSummary, Slice, SliceBy, Summary, SummaryOptions, table,
};
pub use tally::summarize;
pub(crate) use thresholds::wilson;
pub use thresholds::{
    GatePick, Honest, MIN_ROWS, Measured, Method, PROVISIONAL_ROWS, Pick, Status, Target,
    ThresholdOptions, ThresholdReport, choose_thresholds,
};
