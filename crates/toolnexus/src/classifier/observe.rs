//! What a call reports: the one span, log line and metric the outermost
//! classifier of a stack opens, and the warnings about questions and answers.

use super::*;

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
        if let Some(f) = &self.on_metric {
            f(&MetricEvent {
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
            });
        }
    }

    pub(super) fn report(
        &self,
        ctx: &EvalContext,
        started: Instant,
        result: &Result<Evaluated, ClassifierError>,
        place: Place<'_>,
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
        let Some(f) = &self.on_metric else {
            return;
        };
        let (model, status, input_tokens, output_tokens, cost, error) = match result {
            // A hit spent nothing: no tokens, and a cost that is known to be 0.
            Ok(_) if cache_hit => (
                answered,
                MetricStatus::Ok,
                0,
                0,
                crate::price::Cost::cache_hit(),
                None,
            ),
            Ok(d) => (
                answered,
                MetricStatus::Ok,
                d.usage.input_tokens,
                d.usage.output_tokens,
                cost,
                None,
            ),
            Err(e) => (
                self.inner.model.clone(),
                MetricStatus::Error,
                0,
                0,
                crate::price::Cost::UNKNOWN,
                Some(e.to_string()),
            ),
        };
        f(&MetricEvent {
            name: MetricName::Evaluate,
            model,
            call_name: ctx.call_name.clone(),
            status,
            duration,
            input_tokens,
            output_tokens,
            cost: cost.usd,
            cost_source: cost.source,
            error,
            key: None,
            request_id,
            cache_hit,
        });
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
    pub(super) static IN_CALL: ();
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
