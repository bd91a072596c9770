//! The one integration-test binary: loopback servers, fixtures and tapes.

mod judge;
mod llm;
