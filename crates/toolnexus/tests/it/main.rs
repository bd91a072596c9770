//! The one integration-test binary: loopback servers, fixtures and tapes.

mod decisions;
mod judge;
mod llm;
mod support;
mod systemone;
