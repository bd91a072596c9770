//! The Static style: recorded responses, looked up by the canonical bytes of
//! (model, questions, state). Lookup cost depends on the request's size, never on
//! how many recordings there are.

use std::collections::HashMap;

use serde_json::Value;

use crate::classifier::Evaluated;
use crate::classifier::canonical::{canonical_request, write_canonical};
use crate::classifier::options::RecordedDecision;
use crate::classifier::question::Questions;
use crate::classifier::wire::decode_slice_for;
use crate::error::{ClassifierError, msg};

/// Recorded decisions keyed by canonical request and state.
pub(crate) struct ReplayBackend {
    table: HashMap<String, Evaluated>,
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
            let d = decode_slice_for(&rec.response, Some(model), Some(&rec.questions), |e| {
                format!("response is not valid JSON: {e}")
            })
            .map_err(|e| msg::config(format!("static: recorded decision {i}: {}", e.detail())))?;
            let d = Evaluated {
                cost: crate::price::Cost::of_usage(&d.decision.usage),
                decision: d.decision,
                request_id: None,
                dropped: d.dropped,
                cache_hit: false,
                wire_body: None,
                extensions: Default::default(),
            };
            let key = static_key(model, &rec.questions, &rec.state);
            if let Some(j) = index_of.insert(key.clone(), i) {
                return Err(msg::config(format!(
                    "static: recorded decisions {j} and {i} answer the same request+state"
                )));
            }
            table.insert(key, d);
        }
        Ok(ReplayBackend { table })
    }

    /// The recording for `model` (the classifier's, or the call's override),
    /// `questions` and `state`.
    pub(crate) fn evaluate(
        &self,
        model: &str,
        state: &Value,
        questions: &Questions,
    ) -> Result<Evaluated, ClassifierError> {
        self.table
            .get(&static_key(model, questions, state))
            .cloned()
            .ok_or_else(msg::static_miss)
    }
}
