//! toolnexus-local's integration tests, one binary: the embedded model
//! against its reference, Laya and DecisionTune against theirs, students and
//! cascades through the library, the engine registry, and the fetch script.

mod fetch;
mod laya;
mod model;
mod registry;
mod student;
