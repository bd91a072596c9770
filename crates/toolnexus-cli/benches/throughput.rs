//! Throughput figures for serve and batch.
fn main() {}
