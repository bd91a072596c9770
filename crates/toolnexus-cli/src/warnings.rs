//! The library's warnings, on stderr, once each.
//!
//! The library reports what it could not do but worked around — option
//! descriptions too alike to tell apart, answers to keys nobody asked, a cache
//! entry that could not be read or stored, a calibration that did not apply,
//! a fallback taken — as `tracing` warnings. The command line installs
//! [`Warnings`] as the process's subscriber: each distinct warning is printed
//! once as `toolnexus: warning: …` (never with a secret: the library scrubs its
//! texts before they reach tracing), `--quiet` silences them, and the cache's
//! failures are counted so a command can end with exit 4 instead of reporting
//! zero hits as if nothing went wrong.
//!
//! Failed evaluations are not warnings here: each command reports them itself
//! (an error line, an exit code).

use std::collections::HashSet;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

/// Cache failures seen (open, read or write), for the exit code.
static CACHE_FAILURES: AtomicUsize = AtomicUsize::new(0);
/// Set by `--quiet`: count, but print nothing.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Installs the subscriber for the whole process; `quiet` prints nothing (the
/// counts still run). Call once, first thing in `main`.
pub fn install(quiet: bool) {
    QUIET.store(quiet, Ordering::Relaxed);
    let _ = tracing::subscriber::set_global_default(Warnings::default());
}

/// How many cache operations failed in this process (a cache file that could
/// not be opened counts too, through [`cache_failed`]).
pub fn cache_failures() -> usize {
    CACHE_FAILURES.load(Ordering::Relaxed)
}

/// Reports a cache failure the command saw itself (the file could not be
/// opened): printed once like the library's, and counted.
pub fn cache_failed(text: &str) {
    CACHE_FAILURES.fetch_add(1, Ordering::Relaxed);
    print_once(text);
}

/// A warning the command raises itself (a floating alias, a file fitted on
/// another model): printed once like the library's.
pub fn warn(text: &str) {
    print_once(text);
}

/// The servers' own lines (`serve`'s access log, `mcp`'s tool errors) on
/// stderr as they come, and their warnings once each like the library's.
pub struct ServerLog;

impl toolnexus_server::Log for ServerLog {
    fn line(&self, line: &str) {
        // A closed stderr never stops a server.
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn warn(&self, text: &str) {
        warn(text);
    }
}

/// Which distinct warnings were printed already.
fn seen() -> &'static Mutex<HashSet<String>> {
    static SEEN: std::sync::OnceLock<Mutex<HashSet<String>>> = std::sync::OnceLock::new();
    SEEN.get_or_init(Default::default)
}

fn print_once(text: &str) {
    let first = seen()
        .lock()
        .map(|mut s| s.insert(text.to_string()))
        .unwrap_or(false);
    if first && !QUIET.load(Ordering::Relaxed) {
        // A closed stderr never stops a command over a warning.
        let _ = writeln!(std::io::stderr().lock(), "toolnexus: warning: {text}");
    }
}

/// The subscriber: warnings of the toolnexus crates only, no spans.
#[derive(Default)]
pub struct Warnings {
    next_span: AtomicU64,
}

impl Subscriber for Warnings {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.is_event()
            && *metadata.level() <= Level::WARN
            && metadata.target().starts_with("toolnexus")
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut text = Text::default();
        event.record(&mut text);
        if text.message == "classifier.evaluate error" {
            return;
        }
        let target = event.metadata().target();
        if target == "toolnexus::cache" {
            CACHE_FAILURES.fetch_add(1, Ordering::Relaxed);
        }
        print_once(&text.render());
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// An event's message and the fields worth showing a user.
#[derive(Default)]
struct Text {
    message: String,
    key: Option<String>,
    fields: Vec<(&'static str, String)>,
}

/// Fields that vary per call and would defeat "once each", or say nothing to
/// a user at a terminal.
const HIDDEN: &[&str] = &["call_name", "ms", "request_id", "status", "kind", "backend"];

impl Text {
    fn render(&self) -> String {
        let mut out = String::new();
        if let Some(key) = &self.key
            && !self.message.contains(&format!("\"{key}\""))
        {
            let _ = write!(out, "question \"{key}\": ");
        }
        out.push_str(&self.message);
        if !self.fields.is_empty() {
            let shown: Vec<String> = self
                .fields
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = write!(out, " ({})", shown.join(", "));
        }
        out
    }
}

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.record_str(field, &format!("{value:?}"));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "message" => self.message = value.to_string(),
            "key" => self.key = Some(value.to_string()),
            name if HIDDEN.contains(&name) => {}
            name => self.fields.push((name, value.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_renders_its_key_once_and_hides_per_call_fields() {
        let t = Text {
            message: "descriptions too alike".into(),
            key: Some("route".into()),
            fields: vec![("model", "m".into())],
        };
        assert_eq!(
            t.render(),
            "question \"route\": descriptions too alike (model m)"
        );
        let t = Text {
            message: "question \"route\": descriptions too alike".into(),
            key: Some("route".into()),
            fields: vec![],
        };
        assert_eq!(t.render(), "question \"route\": descriptions too alike");
    }
}
