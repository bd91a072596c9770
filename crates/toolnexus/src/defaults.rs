//! The defaults every transport and classifier falls back to. A leaf.

/// The default time one attempt may take.
pub const DEFAULT_TIMEOUT_MS: u64 = 10_000;
/// The default number of retries after the first attempt.
pub const DEFAULT_RETRIES: u32 = 2;
/// The default backoff base: retry `n` waits `base × 2^n`.
pub const DEFAULT_RETRY_BASE_MS: u64 = 500;
/// The default total retry budget of one call: attempts and waits together.
/// A retry whose wait would reach it is not made.
pub const DEFAULT_RETRY_BUDGET_MS: u64 = 30_000;
/// The default cap on a response body.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;
/// The default number of states `evaluate_batch` keeps in flight.
pub const DEFAULT_BATCH_CONCURRENCY: usize = 16;
