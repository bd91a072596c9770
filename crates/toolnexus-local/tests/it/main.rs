//! toolnexus-local's integration tests, one binary: the embedded model
//! against its reference, Laya and DecisionTune against theirs, students and
//! cascades through the library, the engine registry, the fetch script, and
//! the embedded model in bf16 against f32.

mod fetch;
mod laya;
mod model;
mod precision;
mod registry;
mod student;
