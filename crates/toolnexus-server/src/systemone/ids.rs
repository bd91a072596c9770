//! Request ids: one per request, unique across restarts, cheap to make.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The request id of the request being answered (set around every request).
#[derive(Clone)]
pub(super) struct RequestId(pub(super) String);

/// `req_` + 24 hex digits: 8 from the start time, 16 from a bijective mix of a
/// per-process seed and a counter, so no two requests of one server share one.
pub(super) struct RequestIds {
    stamp: u32,
    seed: u64,
    next: AtomicU64,
}

impl RequestIds {
    pub(super) fn new() -> RequestIds {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        RequestIds {
            stamp: now.as_secs() as u32,
            seed: (now.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32),
            next: AtomicU64::new(0),
        }
    }

    pub(super) fn next(&self) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        format!(
            "req_{:08x}{:016x}",
            self.stamp,
            splitmix64(self.seed.wrapping_add(n))
        )
    }
}

/// A bijection on u64 (SplitMix64's finaliser): distinct inputs, distinct outputs.
pub(super) fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
