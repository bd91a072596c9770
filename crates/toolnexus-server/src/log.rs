//! Where a server's own lines go. The caller hands in a [`Log`], so a command
//! line prints them its way and a binding sends them where it likes; nothing
//! in this crate writes to a standard stream but [`Stderr`].

use std::collections::HashSet;
use std::io::Write as _;
use std::sync::Mutex;

/// What a server says on its own, outside any answer: one line per request
/// served (the access log), what a request asked that a style ignored, why a
/// replay missed (when asked), connections refused, tool errors, and
/// warnings about what a request asked for.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use toolnexus_server::Log;
///
/// /// Keeps every line, for a test to read.
/// #[derive(Default)]
/// struct Kept(Mutex<Vec<String>>);
///
/// impl Log for Kept {
///     fn line(&self, line: &str) {
///         self.0.lock().unwrap().push(line.to_string());
///     }
///     fn warn(&self, text: &str) {
///         self.line(&format!("warning: {text}"));
///     }
/// }
///
/// let kept = Arc::new(Kept::default());
/// kept.line("serve: stopped");
/// assert_eq!(kept.0.lock().unwrap().as_slice(), ["serve: stopped"]);
/// let _as_a_server_takes_it: Arc<dyn Log> = kept;
/// ```
pub trait Log: Send + Sync + 'static {
    /// One line of the server's log, whole and without its newline
    /// (`serve: req_… POST "/v1/systemone" 200 3ms`).
    fn line(&self, line: &str);

    /// A warning about something a request asked for (a floating model
    /// alias), given every time it applies, without a `warning:` prefix: the
    /// caller decides how often to say it.
    fn warn(&self, text: &str);
}

/// Lines to standard error as they come; each distinct warning once, as
/// `warning: …`. A closed standard error drops them: output never stops a
/// server.
///
/// ```
/// use toolnexus_server::{Log, Stderr};
/// let log = Stderr::default();
/// log.line("serve: a line on standard error");
/// log.warn("said once");
/// log.warn("said once");
/// ```
#[derive(Debug, Default)]
pub struct Stderr {
    warned: Mutex<HashSet<String>>,
}

impl Log for Stderr {
    fn line(&self, line: &str) {
        let _ = writeln!(std::io::stderr().lock(), "{line}");
    }

    fn warn(&self, text: &str) {
        let first = self
            .warned
            .lock()
            .map(|mut w| w.insert(text.to_string()))
            .unwrap_or(false);
        if first {
            self.line(&format!("warning: {text}"));
        }
    }
}
