//! The one integration-test binary: loopback servers, fixtures and tapes.

mod assess_report;
mod assess_sklearn;
mod assess_synthetic;
mod cache;
mod compose;
mod cost;
mod decisions;
mod faults;
mod judge;
mod layers;
mod limit;
mod llm;
mod observe;
#[cfg(feature = "otel")]
mod otel;
mod parity;
mod parity_http;
mod pinning;
mod probe;
mod props;
mod seams;
mod secrets;
mod support;
mod systemone;
mod tape_match;
mod transport;
