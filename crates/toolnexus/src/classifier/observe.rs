//! What a call reports: the one span, log line and metric the outermost
//! classifier of a stack opens, and the warnings about questions and answers.

use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, Ordering};

use super::*;

mod scope;

pub(crate) use scope::current_trace_parent;
pub use scope::{GuardVerdict, TraceParent, guard_call, with_trace_parent};

/// Receives every call an outermost classifier opens, process-wide: the
/// OpenTelemetry export (`otel` feature) installs one. The classifier calls
/// down into it through this seam, so the export stands above the classifier.
pub(crate) trait CallExport: Send + Sync {
    /// A call starts: what to keep until it ends.
    fn start(&self, state: &Value, questions: &Questions) -> Box<dyn CallWatch>;
    /// One call of an outermost classifier, or a warning.
    fn count(&self, count: &Count<'_>);
    /// A guard judgment that asked no judge: its own span, from `started`.
    fn guard(
        &self,
        started: std::time::SystemTime,
        took: std::time::Duration,
        verdict: &GuardVerdict,
    );
}

/// A watched call, finished once.
pub(crate) trait CallWatch: Send {
    /// The call ended: its span, built, to export now or once the guard
    /// judging the tool call it was made for has decided.
    fn finish(self: Box<Self>, end: CallEnd<'_>) -> Box<dyn EndedCall>;
}

/// A call's span, built when the call ended (its times are its own, so it
/// may be exported later).
pub(crate) trait EndedCall: Send {
    /// Exports the span, with the verdict of the guard it was made for.
    fn export(self: Box<Self>, guard: Option<&GuardVerdict>);
}

/// One call or warning as the call export counts it, borrowed from the call:
/// made for every outermost call (a [`MetricEvent`], which owns its texts,
/// is made only for a [`MetricFn`]).
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct Count<'a> {
    /// A warning: nothing else is read.
    pub(crate) warning: bool,
    /// The call succeeded.
    pub(crate) ok: bool,
    /// The `EvalContext::call_name` of the call, possibly empty (the
    /// metrics do not label by it; an export that tells calls apart does).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) call_name: &'a str,
    pub(crate) style: &'a str,
    /// The model that answered, or the one asked for a failure.
    pub(crate) model: &'a str,
    pub(crate) answers: Answers<'a>,
    pub(crate) error_kind: Option<crate::error::ErrorKind>,
    pub(crate) input_tokens: i64,
    pub(crate) output_tokens: i64,
    pub(crate) cost: Option<f64>,
    pub(crate) cache_hit: bool,
    pub(crate) duration: std::time::Duration,
}

/// The answer types of a counted call.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) enum Answers<'a> {
    /// Those of the decision (none for a failure).
    Of(Option<&'a Decision>),
    /// As listed.
    Listed(&'a [&'static str]),
}

#[cfg_attr(not(feature = "otel"), allow(dead_code))]
impl Answers<'_> {
    /// Calls `f` with each answer's type, in key order.
    pub(crate) fn each(&self, mut f: impl FnMut(&'static str)) {
        match self {
            Answers::Of(d) => d
                .iter()
                .flat_map(|d| d.answers.values())
                .for_each(|a| f(a.answer_type())),
            Answers::Listed(types) => types.iter().for_each(|t| f(t)),
        }
    }
}

#[cfg(all(test, feature = "otel"))]
impl<'a> Count<'a> {
    /// What `e` counts.
    pub(crate) fn of(e: &'a MetricEvent) -> Count<'a> {
        Count {
            warning: e.name == MetricName::Warning || e.status == MetricStatus::Warning,
            ok: e.status == MetricStatus::Ok,
            call_name: &e.call_name,
            style: &e.style,
            model: &e.model,
            answers: Answers::Listed(&e.answers),
            error_kind: e.error_kind,
            input_tokens: e.input_tokens,
            output_tokens: e.output_tokens,
            cost: e.cost,
            cache_hit: e.cache_hit,
            duration: e.duration,
        }
    }
}

/// How a watched call ended.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) struct CallEnd<'a> {
    pub(crate) identity: &'a Identity,
    /// The model asked for.
    pub(crate) asked: &'a str,
    pub(crate) call_name: &'a str,
    pub(crate) duration: std::time::Duration,
    pub(crate) result: &'a Result<Evaluated, ClassifierError>,
    pub(crate) cascade_stage: Option<&'static str>,
    /// The answering model, scrubbed of secrets (empty for a failure).
    pub(crate) answered: &'a str,
}

/// The installed export; `None` when there is none.
static EXPORT: RwLock<Option<Arc<dyn CallExport>>> = RwLock::new(None);
/// A lock-free "is there an export?" for every call.
static EXPORT_ON: AtomicBool = AtomicBool::new(false);

/// Installs `export` for every classifier of the process, replacing any.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) fn set_call_export(export: Arc<dyn CallExport>) {
    // A poisoned lock held an `Option` that is whole either way.
    *EXPORT.write().unwrap_or_else(|p| p.into_inner()) = Some(export);
    EXPORT_ON.store(true, Ordering::Release);
}

/// Removes `export` if it is still the installed one.
#[cfg_attr(not(feature = "otel"), allow(dead_code))]
pub(crate) fn clear_call_export(export: &Arc<dyn CallExport>) {
    let mut slot = EXPORT.write().unwrap_or_else(|p| p.into_inner());
    if slot.as_ref().is_some_and(|e| Arc::ptr_eq(e, export)) {
        *slot = None;
        EXPORT_ON.store(false, Ordering::Release);
    }
}

fn call_export() -> Option<Arc<dyn CallExport>> {
    if !EXPORT_ON.load(Ordering::Acquire) {
        return None;
    }
    EXPORT.read().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Starts watching a call for the installed export, if there is one.
pub(super) fn start_watch(state: &Value, questions: &Questions) -> Option<Box<dyn CallWatch>> {
    call_export().map(|e| e.start(state, questions))
}

impl Classifier {
    pub(super) fn warn_degenerate(&self, ctx: &EvalContext, questions: &Questions) {
        for (key, q) in questions {
            let Question::Choice(c) = q else { continue };
            let Some(why) = degenerate_criteria(&c.criteria) else {
                continue;
            };
            let first = self
                .inner
                .warned
                .lock()
                .map(|mut w| w.insert(key.clone()))
                .unwrap_or(false);
            if first {
                self.warning(ctx, key, msg::degenerate(key, why));
            }
        }
    }

    pub(super) fn warning(&self, ctx: &EvalContext, key: &str, text: String) {
        // A dropped answer's key came from the backend: it may echo a secret.
        let (key, text) = (&*self.scrub(key), self.scrub(&text));
        tracing::warn!(target: "toolnexus::classifier", key, call_name = %ctx.call_name, "{text}");
        if !self.watched() {
            return;
        }
        let event = || MetricEvent {
            name: MetricName::Warning,
            model: self.inner.model.clone(),
            call_name: ctx.call_name.clone(),
            status: MetricStatus::Warning,
            duration: std::time::Duration::ZERO,
            input_tokens: 0,
            output_tokens: 0,
            cost: None,
            cost_source: None,
            error: Some(text),
            key: Some(key.to_string()),
            request_id: None,
            cache_hit: false,
            style: self.identity.style.clone(),
            error_kind: None,
            answers: Vec::new(),
        };
        let count = Count {
            warning: true,
            ok: false,
            call_name: &ctx.call_name,
            style: &self.identity.style,
            model: &self.inner.model,
            answers: Answers::Listed(&[]),
            error_kind: None,
            input_tokens: 0,
            output_tokens: 0,
            cost: None,
            cache_hit: false,
            duration: std::time::Duration::ZERO,
        };
        self.emit(&count, event, true);
    }

    /// Whether anyone receives this classifier's metric events: its
    /// [`MetricFn`], or the installed call export.
    fn watched(&self) -> bool {
        EXPORT_ON.load(Ordering::Acquire) || self.on_metric.is_some()
    }

    /// Hands one call or warning to its receivers: the OpenTelemetry
    /// metrics count it once, at the outermost classifier that opened it (a
    /// warning once, where it was found); the [`MetricFn`] gets the event
    /// `event` makes, made only for it.
    fn emit(&self, count: &Count<'_>, event: impl FnOnce() -> MetricEvent, outermost: bool) {
        if let Some(export) = outermost.then(call_export).flatten() {
            export.count(count);
        }
        if let Some(f) = &self.on_metric {
            f(&event());
        }
    }

    pub(super) fn report(
        &self,
        ctx: &EvalContext,
        asked: &str,
        started: Instant,
        result: &Result<Evaluated, ClassifierError>,
        place: Place<'_>,
        watch: Option<Box<dyn CallWatch>>,
    ) {
        let duration = started.elapsed();
        let request_id = match result {
            Ok(e) => e.request_id.clone(),
            Err(e) => e.request_id().map(str::to_string),
        };
        let cache_hit = matches!(result, Ok(e) if e.cache_hit);
        let cost = match result {
            Ok(e) => e.cost.clone(),
            Err(_) => crate::price::Cost::UNKNOWN,
        };
        let full = result;
        let result = &result.as_ref().map(|e| &e.decision);
        // The answering model's name is backend text too.
        let answered = match result {
            Ok(d) => self.scrub(&d.model),
            Err(_) => String::new(),
        };
        if let Place::Outermost(span) = place {
            let shown = if cache_hit {
                crate::price::Cost::cache_hit()
            } else {
                cost.clone()
            };
            close_span(span, duration, cache_hit, &shown, result, &answered);
        }
        match result {
            _ if matches!(place, Place::Inside) => {}
            Ok(d) => tracing::info!(
                target: "toolnexus::classifier",
                model = %answered,
                ms = duration.as_millis() as u64,
                input_tokens = d.usage.input_tokens,
                output_tokens = d.usage.output_tokens,
                request_id = request_id.as_deref().unwrap_or(""),
                "classifier.evaluate ok"
            ),
            Err(e) => tracing::warn!(
                target: "toolnexus::classifier",
                ms = duration.as_millis() as u64,
                request_id = request_id.as_deref().unwrap_or(""),
                error = %e,
                "classifier.evaluate error"
            ),
        }
        if let Some(watch) = watch {
            let stage = IN_CALL.try_with(CallNotes::cascade_stage).ok().flatten();
            scope::export_ended(watch.finish(CallEnd {
                identity: &self.identity,
                asked,
                call_name: &ctx.call_name,
                duration,
                result: full,
                cascade_stage: stage,
                answered: &answered,
            }));
        }
        let outermost = matches!(place, Place::Outermost(_));
        if !(self.on_metric.is_some() || outermost && self.watched()) {
            return;
        }
        let error_kind = result.as_ref().err().map(|e| e.kind());
        let (model, ok, input_tokens, output_tokens, cost) = match result {
            // A hit spent nothing: no tokens, and a cost that is known to be 0.
            Ok(_) if cache_hit => (
                answered.as_str(),
                true,
                0,
                0,
                crate::price::Cost::cache_hit(),
            ),
            Ok(d) => (
                answered.as_str(),
                true,
                d.usage.input_tokens,
                d.usage.output_tokens,
                cost,
            ),
            Err(_) => (
                self.inner.model.as_str(),
                false,
                0,
                0,
                crate::price::Cost::UNKNOWN,
            ),
        };
        let count = Count {
            warning: false,
            ok,
            call_name: &ctx.call_name,
            style: &self.identity.style,
            model,
            answers: Answers::Of(result.as_ref().ok().copied()),
            error_kind,
            input_tokens,
            output_tokens,
            cost: cost.usd,
            cache_hit,
            duration,
        };
        let event = || MetricEvent {
            name: MetricName::Evaluate,
            model: model.to_string(),
            call_name: ctx.call_name.clone(),
            status: if ok {
                MetricStatus::Ok
            } else {
                MetricStatus::Error
            },
            duration,
            input_tokens,
            output_tokens,
            cost: cost.usd,
            cost_source: cost.source.clone(),
            error: result.as_ref().err().map(ToString::to_string),
            key: None,
            request_id: request_id.clone(),
            cache_hit,
            style: self.identity.style.clone(),
            error_kind,
            answers: {
                let mut types = Vec::new();
                count.answers.each(|t| types.push(t));
                types
            },
        };
        self.emit(&count, event, outermost);
    }
}

/// Where a classifier's `run` stands in the call: the outermost classifier of
/// a stack opens the call's one span, log line and metric; the layers and the
/// style beneath it run inside them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Place<'a> {
    /// The call's own span, which this classifier opened.
    Outermost(&'a tracing::Span),
    Inside,
}

tokio::task_local! {
    /// Set while the outermost classifier of a stack runs a call: a
    /// classifier that finds it set is a layer (or the style) inside that call.
    /// It carries what the layers inside note about the call for its export.
    pub(super) static IN_CALL: CallNotes;
}

/// What the layers inside a call note about it for the outermost classifier:
/// the cascade's stage, which only the cascade knows.
#[derive(Debug, Default)]
pub(super) struct CallNotes {
    cascade_stage: std::sync::Mutex<Option<&'static str>>,
}

impl CallNotes {
    fn cascade_stage(&self) -> Option<&'static str> {
        self.cascade_stage.lock().map(|s| *s).unwrap_or(None)
    }
}

/// Notes which stage of a cascade answered the current call (`student` or
/// `teacher`): a field of the call's one span (`cascade_stage`), and the
/// `toolnexus.cascade_stage` attribute of its exported span. Outside a call
/// it does nothing.
///
/// ```
/// // Outside a classifier's call there is no span to fill: nothing happens.
/// toolnexus::classifier::record_cascade_stage("student");
/// ```
pub fn record_cascade_stage(stage: &'static str) {
    tracing::Span::current().record("cascade_stage", stage);
    let _ = IN_CALL.try_with(|notes| {
        if let Ok(mut s) = notes.cascade_stage.lock() {
            *s = Some(stage);
        }
    });
}

/// Fills the call's span with how it ended: what answered, the tokens, the
/// cost and its source, a cache hit, the latency, or the error's kind.
fn close_span(
    span: &tracing::Span,
    duration: std::time::Duration,
    cache_hit: bool,
    cost: &crate::price::Cost,
    result: &Result<&Decision, &ClassifierError>,
    answered: &str,
) {
    span.record("ms", duration.as_millis() as u64);
    match result {
        Ok(d) => {
            span.record("outcome", "ok");
            span.record("answered_model", answered);
            span.record("cache_hit", cache_hit);
            span.record("input_tokens", d.usage.input_tokens);
            span.record("output_tokens", d.usage.output_tokens);
            if let Some(usd) = cost.usd {
                span.record("cost_usd", usd);
            }
            if let Some(source) = &cost.source {
                span.record("cost_source", tracing::field::display(source));
            }
        }
        Err(e) => {
            span.record("outcome", "error");
            span.record("error_kind", e.kind().as_str());
        }
    }
}

#[cfg(test)]
mod tests;
