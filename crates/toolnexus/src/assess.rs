//! Measure judgment quality: labelled examples, metrics, thresholds and calibration
//! (SPEC §13). Everything here is a pure function of recorded answers and labels;
//! only the CLI's `assess run` calls a backend.

pub mod calibrate;
pub mod metrics;
pub(crate) mod rng;
pub(crate) mod svg;
