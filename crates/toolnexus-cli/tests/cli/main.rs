//! End-to-end tests of the `toolnexus` binary: every test runs the built
//! executable, on loopback only, with no API key in its environment.

mod assess;
mod batch;
mod cache;
mod caps;
mod cost;
mod distill;
mod drift;
mod errors;
mod eval;
mod faithful;
mod gates;
mod guard;
mod inputs;
mod install;
mod laya;
mod lint;
mod local;
mod mcp;
mod model;
mod otel;
mod pinning;
mod probe;
mod readme;
mod serve;
mod serve_bounds;
mod streams;
mod support;
mod tables;
mod tape;
mod tape_match;
mod tls;
