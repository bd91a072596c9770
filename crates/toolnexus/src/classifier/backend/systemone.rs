//! The System One style: `POST {base_url}/systemone` through the shared transport.

use bytes::Bytes;
use serde_json::{Map, Value};

use crate::classifier::asset::assets_wire;
use crate::classifier::canonical::{canonical_json, write_canonical, write_questions_sent};
use crate::classifier::options::{BodyTransformFn, ClassifierOptions, Resolved};
use crate::classifier::question::{Questions, questions_wire};
use crate::classifier::wire::decode_slice_for;
use crate::classifier::{EvalContext, Evaluated, Extras};
use crate::error::{ClassifierError, Scope};
use crate::http::{Auth, Transport};

/// A System One model behind HTTP.
pub(crate) struct HttpBackend {
    transport: Transport,
    model: String,
    request_params: Map<String, Value>,
    body_transform: Option<BodyTransformFn>,
}

impl HttpBackend {
    pub(crate) fn new(o: &ClassifierOptions, r: &Resolved) -> Result<HttpBackend, ClassifierError> {
        // The preset's key variable when the options name none.
        let mut transport = o.transport();
        transport.api_key_env = r.api_key_env.clone();
        let endpoint = crate::http::endpoint_url(Scope::Classifier, &r.base_url, "systemone")?;
        let transport = Transport::new(transport.resolve(
            Scope::Classifier,
            endpoint,
            Auth::Bearer,
            Vec::new(),
        ))?;
        Ok(HttpBackend {
            transport,
            model: r.model.clone(),
            request_params: o.request_params.clone(),
            body_transform: o.body_transform.clone(),
        })
    }

    pub(crate) fn endpoint(&self) -> &str {
        self.transport.shown()
    }

    /// `text` without this backend's secrets (see [`Transport::scrub`]).
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.transport.scrub(text)
    }

    /// The exact bytes posted for this state and these questions: `model`,
    /// `questions`, `state` and any `assets`, then `request_params`, then the
    /// call's extra fields (each shallow-merged, a later key winning), then
    /// `body_transform`.
    pub(crate) fn body(&self, state: &Value, questions: &Questions, extras: Extras<'_>) -> String {
        let model = extras.model.unwrap_or(&self.model);
        if let Some(Value::Object(sent)) = extras.wire {
            // Forwarded as sent: the caller's order and fields; only a model
            // the caller left out is added.
            let mut sent = sent.clone();
            if !sent.contains_key("model") {
                sent.insert("model".into(), Value::from(model));
            }
            return Value::Object(sent).to_string();
        }
        if self.request_params.is_empty()
            && self.body_transform.is_none()
            && extras.assets.is_empty()
            && extras.extra.is_empty()
        {
            // Fast path: the canonical body written directly, keys already in
            // order, a choice's options as the caller gave them (SPEC §16).
            let mut out = String::with_capacity(256);
            out.push_str("{\"model\":");
            write_canonical(&mut out, &Value::from(model));
            out.push_str(",\"questions\":");
            write_questions_sent(&mut out, questions);
            out.push_str(",\"state\":");
            write_canonical(&mut out, state);
            out.push('}');
            return out;
        }
        let mut body = Map::new();
        body.insert("model".into(), Value::from(model));
        body.insert("questions".into(), questions_wire(questions));
        body.insert("state".into(), state.clone());
        if !extras.assets.is_empty() {
            body.insert("assets".into(), assets_wire(extras.assets));
        }
        for (k, v) in self.request_params.iter().chain(extras.extra) {
            body.insert(k.clone(), v.clone());
        }
        if let Some(t) = &self.body_transform {
            return canonical_json(&t(Value::Object(body)));
        }
        // Canonical, but for the questions, written as sent (their options in
        // the caller's order) unless a request parameter or extra field
        // replaced them.
        let replaced =
            self.request_params.contains_key("questions") || extras.extra.contains_key("questions");
        let mut out = String::with_capacity(256);
        out.push('{');
        let mut keys: Vec<&String> = body.keys().collect();
        keys.sort_unstable();
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_canonical(&mut out, &Value::from(key.as_str()));
            out.push(':');
            match key.as_str() {
                "questions" if !replaced => write_questions_sent(&mut out, questions),
                _ => write_canonical(&mut out, &body[key]),
            }
        }
        out.push('}');
        out
    }

    pub(crate) async fn evaluate(
        &self,
        ctx: &EvalContext,
        state: &Value,
        questions: &Questions,
        extras: Extras<'_>,
    ) -> Result<Evaluated, ClassifierError> {
        let body = Bytes::from(self.body(state, questions, extras));
        let resp = self.transport.post_json(&ctx.cancel, body).await?;
        let model = extras.model.unwrap_or(&self.model);
        let decoded = decode_slice_for(&resp.body, Some(model), Some(questions), |e| {
            format!(
                "POST {}: response is not valid JSON: {e}",
                self.transport.shown()
            )
        })
        .map_err(|e| e.with_request_id_opt(resp.request_id.clone()))?;
        if let Some(l) = self.transport.limiter() {
            l.correct(
                resp.estimated_tokens,
                decoded.decision.usage.input_tokens.max(0) as u64,
            );
        }
        Ok(Evaluated {
            cost: crate::cost::Cost::of_usage(&decoded.decision.usage),
            decision: decoded.decision,
            request_id: resp.request_id,
            dropped: decoded.dropped,
            cache_hit: false,
            wire_body: extras.wire.map(|_| resp.body.to_vec()),
            extensions: Default::default(),
        })
    }
}
