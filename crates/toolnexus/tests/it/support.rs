//! The suite's fake backend is the public one, `toolnexus::testing` (the
//! `test-util` feature, enabled for tests by the crate's dev-dependency on
//! itself); this adds only what belongs to this suite: its fixed environment.

pub use toolnexus::testing::*;

/// Every environment variable the suite reads, with its value. They are set
/// once, together, by the first [`suite_env`] call; nothing sets or removes a
/// variable after that.
const SUITE_ENV: &[(&str, &str)] = &[
    ("TOOLNEXUS_IT_BEARER_EMPTY", ""),
    ("TOOLNEXUS_IT_BEARER_KEY", "ts-key-123"),
    ("TOOLNEXUS_IT_HEADER_VALUE", "team-7"),
    ("TOOLNEXUS_IT_SENTINEL_KEY", "sk-SENTINEL-7f3a9c2e51d04b8e"),
    ("TOOLNEXUS_IT_SENTINEL_HDR", "hdr-SENTINEL-0b6e2d9a4c"),
    ("TOOLNEXUS_IT_FAULTS_KEY", "sk-FAULTS-4e1b7c90d2a35f68"),
    ("TOOLNEXUS_IT_SWEEP_KEY", "sk-SWEEP-91c4e07b3a6d25f8"),
    ("TOOLNEXUS_IT_SWEEP_HDR", "hdr-SWEEP-5d0a8e3f71c2"),
    ("TOOLNEXUS_IT_OTEL_KEY", "sk-OTEL-3b9d0e6a5c17f2"),
    ("TOOLNEXUS_IT_LLM_KEY_OPENAI", "sk-sentinel-openai-41d9"),
    ("TOOLNEXUS_IT_LLM_KEY_ANTHROPIC", "sk-ant-sentinel-77c1"),
    ("TOOLNEXUS_IT_LLM_KEY_PROVIDER", "sk-sentinel-provider-0b77"),
    ("TOOLNEXUS_IT_LLM_KEY_SECRET", "sk-sentinel-secret-c0ffee51"),
    ("TOOLNEXUS_IT_LLM_TEAM_SECRET", "team-token-sentinel-5eed"),
    (
        "TOOLNEXUS_IT_JUDGE_TAPE_SENTINEL_KEY",
        "sk-sentinel-5b1e0c77-never-in-a-tape",
    ),
];

/// Makes sure the suite's environment is in place before a test reads
/// `name`, and that `name` holds `value` there: a test calls it first thing
/// for every variable it reads. The whole table is written once, by the first
/// caller, so no test changes the environment while another reads it.
///
/// # Panics
///
/// When `(name, value)` is not in [`SUITE_ENV`]: add it there.
pub fn suite_env(name: &str, value: &str) {
    static SET: std::sync::Once = std::sync::Once::new();
    SET.call_once(|| {
        for (k, v) in SUITE_ENV {
            // SAFETY: this runs once, before any test that reads one of these
            // variables goes on (each waits here first), and nothing in the
            // suite writes the environment anywhere else. The other readers in
            // the process go through `std::env`, which takes the same lock.
            unsafe { std::env::set_var(k, v) };
        }
    });
    assert!(
        SUITE_ENV.contains(&(name, value)),
        "{name}={value:?} is not in the suite environment: add it to SUITE_ENV in tests/it/support.rs"
    );
}

/// A fresh directory under the system's temporary one, removed on drop.
pub struct Dir(std::path::PathBuf);

impl Dir {
    /// `toolnexus-it-<name>-<pid>-<n>`, empty.
    pub fn new(name: &str) -> Dir {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static N: AtomicUsize = AtomicUsize::new(0);
        let p = std::env::temp_dir().join(format!(
            "toolnexus-it-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        Dir(p)
    }

    /// A path inside it.
    pub fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
