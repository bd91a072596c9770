//! What code above a call tells its export: the trace an incoming request
//! belongs to (a W3C `traceparent`), and a guard's verdict about the tool
//! call its judge was asked about. Both are task-local scopes set around the
//! calls, so they cost nothing when no export is installed and need no
//! OpenTelemetry type: the guard and the servers set them without the `otel`
//! feature, and the export reads them when it is there.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use super::{EndedCall, call_export};

/// The parent of the spans of the calls made for one incoming request: the
/// W3C Trace Context `traceparent` header (`00-<trace id>-<span id>-<flags>`),
/// read.
///
/// ```
/// use toolnexus::classifier::TraceParent;
///
/// let p = TraceParent::parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
/// assert_eq!(p.trace_id[0], 0x4b);
/// assert_eq!(p.span_id[7], 0xb7);
/// assert!(p.sampled);
/// assert!(TraceParent::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01").is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceParent {
    /// The trace the request belongs to (never all zeros).
    pub trace_id: [u8; 16],
    /// The caller's span, the parent of the calls' spans (never all zeros).
    pub span_id: [u8; 8],
    /// The caller's sampling decision (the `sampled` flag).
    pub sampled: bool,
}

impl TraceParent {
    /// Reads a `traceparent` header value as W3C Trace Context (level 1)
    /// defines it; `None` for anything else (the calls then start a trace of
    /// their own, as the recommendation says of an invalid header).
    ///
    /// ```
    /// use toolnexus::classifier::TraceParent;
    ///
    /// // Upper-case hex, version ff and a short id are not trace context.
    /// assert!(TraceParent::parse("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01").is_none());
    /// assert!(TraceParent::parse("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").is_none());
    /// assert!(TraceParent::parse("00-4bf92f3577b34da6-00f067aa0ba902b7-01").is_none());
    /// // A later version may add fields after a dash; the first four are read.
    /// let p = TraceParent::parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra");
    /// assert_eq!(p.map(|p| p.sampled), Some(false));
    /// ```
    pub fn parse(header: &str) -> Option<TraceParent> {
        let h = header.trim_matches([' ', '\t']).as_bytes();
        if h.len() < 55 || h[2] != b'-' || h[35] != b'-' || h[52] != b'-' {
            return None;
        }
        let version = hex_byte(&h[0..2])?;
        // Version 00 is exactly four fields; ff is forbidden; a later version
        // may carry more after a dash.
        let fits = match version {
            0 => h.len() == 55,
            0xff => false,
            _ => h.len() == 55 || h[55] == b'-',
        };
        if !fits {
            return None;
        }
        let mut trace_id = [0u8; 16];
        for (i, b) in trace_id.iter_mut().enumerate() {
            *b = hex_byte(&h[3 + 2 * i..5 + 2 * i])?;
        }
        let mut span_id = [0u8; 8];
        for (i, b) in span_id.iter_mut().enumerate() {
            *b = hex_byte(&h[36 + 2 * i..38 + 2 * i])?;
        }
        let flags = hex_byte(&h[53..55])?;
        if trace_id == [0; 16] || span_id == [0; 8] {
            return None;
        }
        Some(TraceParent {
            trace_id,
            span_id,
            sampled: flags & 1 == 1,
        })
    }
}

/// Two lower-case hex digits as a byte (the only case trace context allows).
fn hex_byte(two: &[u8]) -> Option<u8> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    Some(digit(two[0])? << 4 | digit(two[1])?)
}

tokio::task_local! {
    /// The incoming request's trace, while its calls run.
    static TRACE_PARENT: TraceParent;
    /// The guard judgment the calls running now were made for.
    static GUARD_CALL: Arc<GuardNotes>;
}

/// Runs `calls` as part of the trace `parent` names: the exported span of
/// every call made inside becomes a child of the caller's span. `None` runs
/// them as they are (each call's span starts a trace of its own).
///
/// ```
/// use toolnexus::classifier::{TraceParent, with_trace_parent};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let header = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// let answer = with_trace_parent(TraceParent::parse(header), async {
///     // judge.evaluate(...).await: its span continues the caller's trace.
///     42
/// })
/// .await;
/// assert_eq!(answer, 42);
/// # }
/// ```
pub async fn with_trace_parent<F: Future>(parent: Option<TraceParent>, calls: F) -> F::Output {
    match parent {
        Some(p) => TRACE_PARENT.scope(p, calls).await,
        None => calls.await,
    }
}

/// The trace the calls running now belong to, if code above them named one.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) fn current_trace_parent() -> Option<TraceParent> {
    TRACE_PARENT.try_with(|p| *p).ok()
}

/// What a guard decided about one tool call, for the export: the
/// `toolnexus.guard.*` attributes of the call's span. It names the rule, the
/// tool and the verdict; never the call's arguments.
///
/// ```
/// use toolnexus::classifier::GuardVerdict;
///
/// let v = GuardVerdict {
///     tool: "Bash".into(),
///     verdict: "deny",
///     rule: Some("force-push".into()),
///     decided_by: "rule",
///     judge_asked: false,
/// };
/// assert_eq!(v.rule.as_deref(), Some("force-push"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardVerdict {
    /// The tool the call was for (`Bash`, `Write`, an MCP tool's name).
    pub tool: String,
    /// `allow`, `ask` or `deny`.
    pub verdict: &'static str,
    /// The rule or check that set the verdict (a policy rule's id,
    /// `project:<id>`, `unread`, `allowlist`, `self-protection`); `None` when
    /// the judge's answers, an error or a skipped tool did.
    pub rule: Option<String>,
    /// What set the verdict: `rule`, `unread` (the command could not be read
    /// statically), `judge` (the answers against the cuts), `error` (the
    /// policy's `on_error`), `policy` (no rule fired and no judge was needed:
    /// a project's allow list) or `skipped` (a tool the policy does not judge).
    pub decided_by: &'static str,
    /// Whether the judge was asked (and answered or failed).
    pub judge_asked: bool,
}

/// The spans of the judge's calls, ended and held until the guard decides.
#[derive(Default)]
struct GuardNotes {
    ended: Mutex<Vec<Box<dyn EndedCall>>>,
}

impl GuardNotes {
    fn take(&self) -> Vec<Box<dyn EndedCall>> {
        // A poisoned lock holds a whole list either way.
        std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for GuardNotes {
    /// A judgment dropped before it decided still exports its calls, without
    /// a verdict.
    fn drop(&mut self) {
        for call in self.take() {
            call.export(None);
        }
    }
}

/// Exports a call's span now, or, inside a guard's judgment, once the guard
/// has decided (with its verdict).
pub(super) fn export_ended(call: Box<dyn EndedCall>) {
    match GUARD_CALL.try_with(Arc::clone) {
        Ok(notes) => notes
            .ended
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call),
        Err(_) => call.export(None),
    }
}

/// Runs one guard judgment for the export: the spans of the judge's calls
/// made inside `judging` wait for the verdict it returns and carry it
/// (`toolnexus.guard.verdict`, `.rule`, `.decided_by`, `.tool`,
/// `.judge_asked`); a judgment that asked no judge (a rule settled it) is
/// exported as one span of its own, so every guard call is seen. Without an
/// installed export it only runs `judging`.
///
/// ```
/// use toolnexus::classifier::{GuardVerdict, guard_call};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let permission = guard_call(async {
///     // A rule denies: no judge is asked.
///     let verdict = GuardVerdict {
///         tool: "Bash".into(),
///         verdict: "deny",
///         rule: Some("force-push".into()),
///         decided_by: "rule",
///         judge_asked: false,
///     };
///     ("deny", verdict)
/// })
/// .await;
/// assert_eq!(permission, "deny");
/// # }
/// ```
pub async fn guard_call<T, F>(judging: F) -> T
where
    F: Future<Output = (T, GuardVerdict)>,
{
    if call_export().is_none() {
        return judging.await.0;
    }
    let (started, clock) = (SystemTime::now(), Instant::now());
    let notes = Arc::new(GuardNotes::default());
    let (out, verdict) = GUARD_CALL.scope(notes.clone(), judging).await;
    let ended = notes.take();
    if ended.is_empty() {
        if let Some(export) = call_export() {
            export.guard(started, clock.elapsed(), &verdict);
        }
    } else {
        for call in ended {
            call.export(Some(&verdict));
        }
    }
    out
}
