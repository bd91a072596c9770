//! The Static style: recorded responses, looked up by the canonical bytes of
//! (model, questions, state). Lookup cost depends on the request's size, never on
//! how many recordings there are.

use std::collections::HashMap;

use serde_json::Value;

use crate::classifier::canonical::{canonical_request, write_canonical};
use crate::classifier::decision::Decision;
use crate::classifier::error::{ClassifierError, msg};
use crate::classifier::options::RecordedDecision;
use crate::classifier::question::Questions;
use crate::classifier::wire::decode_slice;

/// Recorded decisions keyed by canonical request and state.
pub(crate) struct ReplayBackend {
    model: String,
    table: HashMap<String, Decision>,
}

/// The lookup key: canonical request, a newline, canonical state.
pub(crate) fn static_key(model: &str, questions: &Questions, state: &Value) -> String {
    let mut key = canonical_request(model, questions);
    key.push('\n');
    write_canonical(&mut key, state);
    key
}

impl ReplayBackend {
    /// Decodes every recording up front, so a broken one fails at construction,
    /// named by its index, rather than on the day it is first matched.
    pub(crate) fn new(
        model: &str,
        decisions: &[RecordedDecision],
    ) -> Result<ReplayBackend, ClassifierError> {
        let mut table = HashMap::with_capacity(decisions.len());
        let mut index_of: HashMap<String, usize> = HashMap::with_capacity(decisions.len());
        for (i, rec) in decisions.iter().enumerate() {
            let d = decode_slice(&rec.response, Some(model), |e| {
                format!("response is not valid JSON: {e}")
            })
            .map_err(|e| {
                let text = e.to_string();
                let text = text
                    .strip_prefix("classifier: ")
                    .unwrap_or(&text)
                    .to_string();
                msg::config(format!("static: recorded decision {i}: {text}"))
            })?;
            let key = static_key(model, &rec.questions, &rec.state);
            if let Some(j) = index_of.insert(key.clone(), i) {
                return Err(msg::config(format!(
                    "static: recorded decisions {j} and {i} answer the same request+state"
                )));
            }
            table.insert(key, d);
        }
        Ok(ReplayBackend {
            model: model.to_string(),
            table,
        })
    }

    pub(crate) fn evaluate(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Decision, ClassifierError> {
        self.table
            .get(&static_key(&self.model, questions, state))
            .cloned()
            .ok_or_else(msg::static_miss)
    }
}
