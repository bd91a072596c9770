//! What a call returns beyond the decision: its cost, request id, cache hit
//! and the answers dropped on the way.

use super::*;

/// What [`Classifier::evaluate_request`] returns: the decision, the backend's
/// request id when it sent one (`x-typesafe-request-id`), and the keys of
/// answers dropped because no question asked them (each also reported as a
/// `classifier.warning`).
///
/// ```
/// use std::collections::BTreeMap;
/// use toolnexus::classifier::{ClassifierUsage, Decision, Evaluated};
///
/// let e = Evaluated::new(Decision {
///     model: "m".into(),
///     answers: BTreeMap::new(),
///     usage: ClassifierUsage::default(),
///     calibrated: true,
/// });
/// assert!(e.request_id.is_none() && e.dropped.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Evaluated {
    /// The decision, checked against the questions asked.
    pub decision: Decision,
    /// The request id the backend answered with, if any.
    pub request_id: Option<String>,
    /// Keys of answers dropped because nobody asked them.
    pub dropped: Vec<String>,
    /// The decision came from a cache ([`crate::cache::caching`]): nothing was
    /// sent and nothing spent.
    pub cache_hit: bool,
    /// For a request forwarded as sent ([`EvalRequest::with_wire`]), the System
    /// One backend's answer exactly as it arrived — its order and its form —
    /// after it was decoded and checked into `decision`. `None` otherwise.
    pub wire_body: Option<Vec<u8>>,
    /// What the call cost and where that figure came from: `reported` when the
    /// backend said so, `cache` (0) for a hit, otherwise unknown unless a
    /// pricing layer ([`crate::cost::pricing`]) settled it. The decision's
    /// `usage` stays as the backend sent it.
    pub cost: crate::price::Cost,
    /// Numbers a style reports beyond the answer types' own fields, by answer
    /// key: each an object of named extras (Laya's `answer_confidence` and
    /// `action.act_probability`, say). Empty for every style that has none.
    /// `toolnexus serve` merges each object into its answer; nothing else
    /// reads them. A cache keeps them with the decision and gives them back
    /// on a hit; a wrapper that rebuilds the decision drops them.
    pub extensions: BTreeMap<String, Map<String, Value>>,
}

impl Evaluated {
    /// A decision with no request id and nothing dropped.
    pub fn new(decision: Decision) -> Evaluated {
        Evaluated {
            cost: crate::price::Cost::of_usage(&decision.usage),
            decision,
            request_id: None,
            dropped: Vec::new(),
            cache_hit: false,
            wire_body: None,
            extensions: BTreeMap::new(),
        }
    }

    /// With this request id.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use toolnexus::classifier::{ClassifierUsage, Decision, Evaluated};
    /// # let d = Decision { model: "m".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// let e = Evaluated::new(d).with_request_id(Some("req_1".into()));
    /// assert_eq!(e.request_id.as_deref(), Some("req_1"));
    /// ```
    pub fn with_request_id(mut self, request_id: Option<String>) -> Evaluated {
        self.request_id = request_id;
        self
    }

    /// Settles this call's cost in place with `pricing`: a cache hit stays 0, a reported cost stays, an
    /// answer a layer beneath marked `local` (a cascade's student in front of
    /// a live style) stays an explicit 0, the rest is priced on the answering
    /// model (or `asked`, when the answering model is not in the table).
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use toolnexus::classifier::{ClassifierUsage, Decision, Evaluated};
    /// use toolnexus::cost::{Cost, CostSource, Pricing, Prices};
    ///
    /// let d = Decision { model: "m".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// let mut e = Evaluated::new(d);
    /// e.price_with(&Pricing::Local, "m");
    /// assert_eq!(e.cost.source, Some(CostSource::Local));
    ///
    /// // Answered on this machine beneath a priced layer: still local, never unknown.
    /// let d = Decision { model: "student".into(), answers: BTreeMap::new(),
    ///     usage: ClassifierUsage { input_tokens: 40, output_tokens: 0, cost: None }, calibrated: false };
    /// let mut e = Evaluated::new(d);
    /// e.cost = Cost::new(0.0, CostSource::Local);
    /// e.price_with(&Pricing::Table(Prices::builtin().into()), "jev-1.13");
    /// assert_eq!(e.cost, Cost::new(0.0, CostSource::Local));
    /// ```
    pub fn price_with(&mut self, pricing: &Pricing, asked: &str) {
        if self.cache_hit {
            self.cost = Cost::cache_hit();
            return;
        }
        if self.decision.usage.cost.is_none() && self.cost.source == Some(CostSource::Local) {
            return;
        }
        let answered = pricing.settle(&self.decision.usage, &self.decision.model);
        self.cost = if answered.usd.is_none() && asked != self.decision.model {
            pricing.settle(&self.decision.usage, asked)
        } else {
            answered
        };
    }

    /// Marks the decision as served from a cache (nothing sent, nothing spent).
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use toolnexus::classifier::{ClassifierUsage, Decision, Evaluated};
    /// # let d = Decision { model: "m".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// assert!(Evaluated::new(d).with_cache_hit(true).cache_hit);
    /// ```
    pub fn with_cache_hit(mut self, cache_hit: bool) -> Evaluated {
        self.cache_hit = cache_hit;
        if cache_hit {
            self.cost = crate::price::Cost::cache_hit();
        }
        self
    }

    /// With these extras by answer key (see [`Evaluated::extensions`]).
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use serde_json::json;
    /// # use toolnexus::classifier::{ClassifierUsage, Decision, Evaluated};
    /// # let d = Decision { model: "m".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// let extra = json!({"answer_confidence": 0.93}).as_object().unwrap().clone();
    /// let e = Evaluated::new(d).with_extensions(BTreeMap::from([("desk".to_string(), extra)]));
    /// assert_eq!(e.extensions["desk"]["answer_confidence"], 0.93);
    /// ```
    pub fn with_extensions(
        mut self,
        extensions: BTreeMap<String, Map<String, Value>>,
    ) -> Evaluated {
        self.extensions = extensions;
        self
    }
}
