//! The mapping from a finished call to OpenTelemetry attributes: the GenAI
//! client span's and each `gen_ai.evaluation.result` event's. Pure, so it is
//! tested without a collector.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::sync::{LazyLock, Mutex};

use opentelemetry::{Array, KeyValue, StringValue, Value as OtelValue};

use crate::classifier::{
    ClassifierError, DecisionAnswer, Evaluated, GuardVerdict, Identity, Question,
};

/// What the span of one finished call is made from.
///
/// ```
/// use toolnexus::classifier::{ClassifierError, Evaluated, Identity};
/// use toolnexus::otel::{CallRecord, span_attributes};
///
/// let id = Identity::new("systemone", "jev-1", Some("https://api.example.com/v1/systemone".into()));
/// let result: Result<Evaluated, ClassifierError> = Err(ClassifierError::cancelled());
/// let record = CallRecord {
///     identity: &id, asked: "jev-1", call_name: "triage", result: &result,
///     answered: "", cascade_stage: None, state: None,
/// };
/// let attrs = span_attributes(&record);
/// assert!(attrs.iter().any(|kv| kv.key.as_str() == "error.type"
///     && kv.value.as_str() == "cancelled"));
/// assert!(attrs.iter().any(|kv| kv.key.as_str() == "server.address"
///     && kv.value.as_str() == "api.example.com"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct CallRecord<'a> {
    /// What the bottom of the stack is.
    pub identity: &'a Identity,
    /// The model the call asked for.
    pub asked: &'a str,
    /// The call's `EvalContext::call_name`, possibly empty.
    pub call_name: &'a str,
    /// How the call ended.
    pub result: &'a Result<Evaluated, ClassifierError>,
    /// The model that answered, scrubbed of secrets (empty for a failure).
    pub answered: &'a str,
    /// Which stage of a cascade answered, if a cascade did.
    pub cascade_stage: Option<&'static str>,
    /// The state's JSON text, only when content export was asked for.
    pub state: Option<&'a str>,
}

/// The span's attributes: the GenAI client convention's, then `toolnexus.*`
/// for what the convention lacks.
///
/// ```
/// # use toolnexus::classifier::{ClassifierError, Evaluated, Identity};
/// # use toolnexus::otel::{CallRecord, span_attributes};
/// # let id = Identity::local("laya", "laya-1");
/// # let result: Result<Evaluated, ClassifierError> = Err(ClassifierError::cancelled());
/// # let record = CallRecord { identity: &id, asked: "laya-1", call_name: "", result: &result,
/// #     answered: "", cascade_stage: None, state: None };
/// let attrs = span_attributes(&record);
/// assert_eq!(attrs[0].key.as_str(), "gen_ai.operation.name");
/// ```
pub fn span_attributes(r: &CallRecord<'_>) -> Vec<KeyValue> {
    // Room for every attribute a call can carry, and a guard's five: the
    // vector is never grown.
    let mut a = Vec::with_capacity(24);
    write_span_attributes(r, &mut a);
    a
}

/// A string attribute's value, by how long it lives: a `KeyValue` shares a
/// `'static` text as it is, a repeated one through [`shared`], and copies
/// the rest; the protobuf writer copies the bytes of each the same way.
#[derive(Debug, Clone, Copy)]
pub(super) enum Text<'a> {
    /// A text of the program's own.
    Static(&'static str),
    /// A text many calls repeat: a model, a style, a key, an option id.
    Shared(&'a str),
    /// A text of this call only: the state, instructions.
    Owned(&'a str),
}

impl Text<'_> {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Text::Static(s) => s,
            Text::Shared(s) | Text::Owned(s) => s,
        }
    }
}

/// Where the attribute builders put each attribute, in order: a vector of
/// `KeyValue`s (the public functions, the SDK's path) or the protobuf of the
/// OTLP `KeyValue` messages written straight into a span's bytes.
pub(super) trait Sink {
    /// A string attribute.
    fn text(&mut self, key: &'static str, value: Text<'_>);
    /// A boolean attribute.
    fn flag(&mut self, key: &'static str, value: bool);
    /// An integer attribute.
    fn int(&mut self, key: &'static str, value: i64);
    /// A floating-point attribute.
    fn float(&mut self, key: &'static str, value: f64);
    /// An array of repeated strings.
    fn texts<'a, I>(&mut self, key: &'static str, values: I)
    where
        I: Iterator<Item = &'a str> + Clone;
    /// An array of floating-point numbers.
    fn floats<I>(&mut self, key: &'static str, values: I)
    where
        I: Iterator<Item = f64> + Clone;
    /// The attributes `write` adds, which depend on `of` and nothing else:
    /// a sink may keep what they came to and give it again for the same
    /// `of`. By default it writes them each time.
    fn repeated(&mut self, of: &Repeated<'_>, write: impl FnOnce(&mut Self))
    where
        Self: Sized,
    {
        let _ = of;
        write(self);
    }
    /// An event's first attributes, which `write` adds and which depend on
    /// the question's `key` and the `answer_type` and nothing else: as
    /// [`Sink::repeated`], a sink may give them again. By default it writes
    /// them each time.
    fn event_head(&mut self, key: &str, answer_type: &'static str, write: impl FnOnce(&mut Self))
    where
        Self: Sized,
    {
        let _ = (key, answer_type);
        write(self);
    }
}

/// What the first attributes of a call's span depend on: the same for every
/// call of one classifier under one call name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Repeated<'a> {
    pub(super) style: &'a str,
    pub(super) asked: &'a str,
    pub(super) local: bool,
    pub(super) endpoint: Option<&'a str>,
    pub(super) call_name: &'a str,
}

impl Sink for Vec<KeyValue> {
    fn text(&mut self, key: &'static str, value: Text<'_>) {
        let value = match value {
            Text::Static(s) => StringValue::from(s),
            Text::Shared(s) => shared(s),
            Text::Owned(s) => StringValue::from(s.to_string()),
        };
        self.push(KeyValue::new(key, value));
    }

    fn flag(&mut self, key: &'static str, value: bool) {
        self.push(KeyValue::new(key, value));
    }

    fn int(&mut self, key: &'static str, value: i64) {
        self.push(KeyValue::new(key, value));
    }

    fn float(&mut self, key: &'static str, value: f64) {
        self.push(KeyValue::new(key, value));
    }

    fn texts<'a, I>(&mut self, key: &'static str, values: I)
    where
        I: Iterator<Item = &'a str> + Clone,
    {
        let values: Vec<StringValue> = values.map(shared).collect();
        self.push(KeyValue::new(key, OtelValue::Array(Array::String(values))));
    }

    fn floats<I>(&mut self, key: &'static str, values: I)
    where
        I: Iterator<Item = f64> + Clone,
    {
        self.push(KeyValue::new(
            key,
            OtelValue::Array(Array::F64(values.collect())),
        ));
    }
}

/// [`span_attributes`] into any [`Sink`].
pub(super) fn write_span_attributes(r: &CallRecord<'_>, a: &mut impl Sink) {
    let id = r.identity;
    let of = Repeated {
        style: &id.style,
        asked: r.asked,
        local: id.local,
        endpoint: id.endpoint.as_deref(),
        call_name: r.call_name,
    };
    a.repeated(&of, |a| {
        a.text("gen_ai.operation.name", Text::Static("evaluate"));
        a.text("gen_ai.provider.name", Text::Shared(of.style));
        a.text("gen_ai.request.model", Text::Shared(of.asked));
        a.text("toolnexus.style", Text::Shared(of.style));
        a.flag("toolnexus.local", of.local);
        if let Some((host, port)) = of.endpoint.and_then(host_and_port) {
            a.text("server.address", Text::Shared(host));
            if let Some(port) = port {
                a.int("server.port", i64::from(port));
            }
        }
        if !of.call_name.is_empty() {
            a.text("toolnexus.call_name", Text::Shared(of.call_name));
        }
    });
    if let Some(stage) = r.cascade_stage {
        a.text("toolnexus.cascade_stage", Text::Static(stage));
    }
    if let Some(state) = r.state {
        a.text("toolnexus.state", Text::Owned(state));
    }
    match r.result {
        Ok(e) => {
            let d = &e.decision;
            a.text("gen_ai.response.model", Text::Shared(r.answered));
            let (input, output) = if e.cache_hit {
                (0, 0)
            } else {
                (d.usage.input_tokens, d.usage.output_tokens)
            };
            a.int("gen_ai.usage.input_tokens", input);
            a.int("gen_ai.usage.output_tokens", output);
            a.flag("toolnexus.calibrated", d.calibrated);
            a.flag("toolnexus.cache_hit", e.cache_hit);
            if e.cache_hit {
                let hit = crate::price::Cost::cache_hit();
                cost_attributes(&hit, a);
            } else {
                cost_attributes(&e.cost, a);
            }
        }
        Err(e) => a.text("error.type", Text::Static(e.kind().as_str())),
    }
}

/// The cost's figure and where it came from.
fn cost_attributes(cost: &crate::price::Cost, a: &mut impl Sink) {
    if let Some(usd) = cost.usd {
        a.float("toolnexus.cost_usd", usd);
    }
    match &cost.source {
        Some(crate::price::CostSource::Priced { table, checked }) => {
            a.text("toolnexus.cost_source", Text::Static("priced"));
            a.text("toolnexus.cost_table", Text::Shared(table));
            a.text("toolnexus.cost_checked", Text::Shared(checked));
        }
        Some(source) => a.text("toolnexus.cost_source", Text::Static(source.as_str())),
        None => {}
    }
}

/// A guard's verdict as span attributes: `toolnexus.guard.verdict`, `.rule`
/// (when a rule or check set it), `.decided_by`, `.tool` and `.judge_asked`.
///
/// ```
/// use toolnexus::classifier::GuardVerdict;
/// use toolnexus::otel::guard_attributes;
///
/// let v = GuardVerdict {
///     tool: "Bash".into(),
///     verdict: "deny",
///     rule: Some("force-push".into()),
///     decided_by: "rule",
///     judge_asked: false,
/// };
/// let attrs = guard_attributes(&v);
/// assert!(attrs.iter().any(|kv| kv.key.as_str() == "toolnexus.guard.rule"
///     && kv.value.as_str() == "force-push"));
/// ```
pub fn guard_attributes(v: &GuardVerdict) -> Vec<KeyValue> {
    let mut a = Vec::with_capacity(5);
    write_guard_attributes(v, &mut a);
    a
}

/// [`guard_attributes`] into any [`Sink`].
pub(super) fn write_guard_attributes(v: &GuardVerdict, a: &mut impl Sink) {
    a.text("toolnexus.guard.verdict", Text::Static(v.verdict));
    a.text("toolnexus.guard.decided_by", Text::Static(v.decided_by));
    a.text("toolnexus.guard.tool", Text::Shared(&v.tool));
    a.flag("toolnexus.guard.judge_asked", v.judge_asked);
    if let Some(rule) = &v.rule {
        a.text("toolnexus.guard.rule", Text::Shared(rule));
    }
}

/// One `gen_ai.evaluation.result` event's attributes per answer, in key
/// order; `instructions` (key, text) are added only when given (content opt-in).
///
/// ```
/// # use toolnexus::classifier::{ClassifierError, Evaluated, Identity};
/// # use toolnexus::otel::{CallRecord, evaluation_events};
/// # let id = Identity::local("laya", "laya-1");
/// # let result: Result<Evaluated, ClassifierError> = Err(ClassifierError::cancelled());
/// # let record = CallRecord { identity: &id, asked: "laya-1", call_name: "", result: &result,
/// #     answered: "", cascade_stage: None, state: None };
/// // A failed call answered nothing.
/// assert!(evaluation_events(&record, &[]).is_empty());
/// ```
pub fn evaluation_events(
    r: &CallRecord<'_>,
    instructions: &[(String, String)],
) -> Vec<Vec<KeyValue>> {
    let Ok(e) = r.result else {
        return Vec::new();
    };
    e.decision
        .answers
        .iter()
        .map(|(key, answer)| {
            // The most an answer carries: name, type, value, label, labels,
            // probabilities, confidence, near_uniform, instructions.
            let mut a = Vec::with_capacity(9);
            write_event_attributes(key, answer, instructions, &mut a);
            a
        })
        .collect()
}

/// The answers of a call, each with its key: one event each (none for a
/// failed call).
pub(super) fn answers<'a>(
    r: &CallRecord<'a>,
) -> impl Iterator<Item = (&'a String, &'a DecisionAnswer)> + 'a {
    r.result.iter().flat_map(|e| e.decision.answers.iter())
}

/// One answer's event attributes ([`evaluation_events`]) into any [`Sink`].
pub(super) fn write_event_attributes(
    key: &str,
    answer: &DecisionAnswer,
    instructions: &[(String, String)],
    a: &mut impl Sink,
) {
    let answer_type = answer.answer_type();
    a.event_head(key, answer_type, |a| {
        a.text("gen_ai.evaluation.name", Text::Shared(key));
        a.text("toolnexus.answer_type", Text::Static(answer_type));
    });
    answer_attributes(answer, a);
    // Only given with content export on: a handful of questions.
    if let Some((_, text)) = instructions.iter().find(|(k, _)| k == key) {
        a.text("toolnexus.instructions", Text::Owned(text));
    }
}

fn answer_attributes(answer: &DecisionAnswer, a: &mut impl Sink) {
    match answer {
        DecisionAnswer::Noul(n) => {
            a.float("gen_ai.evaluation.score.value", n.noul);
            let label = if n.noul >= 0.5 { "true" } else { "false" };
            a.text("gen_ai.evaluation.score.label", Text::Static(label));
        }
        DecisionAnswer::Choice(c) => {
            let p = c
                .probabilities
                .get(&c.choice)
                .copied()
                .unwrap_or(c.confidence);
            a.float("gen_ai.evaluation.score.value", p);
            a.text("gen_ai.evaluation.score.label", Text::Shared(&c.choice));
            probabilities(&c.probabilities, a);
            a.float("toolnexus.confidence", c.confidence);
            a.flag("toolnexus.near_uniform", c.near_uniform);
        }
        DecisionAnswer::Score(s) => {
            a.float("gen_ai.evaluation.score.value", s.score);
            let level = s.score.round().max(0.0) as i64;
            match level_label(level) {
                Some(l) => a.text("gen_ai.evaluation.score.label", Text::Static(l)),
                None => a.text(
                    "gen_ai.evaluation.score.label",
                    Text::Owned(&level.to_string()),
                ),
            }
            probabilities(&s.probabilities, a);
            a.float("toolnexus.confidence", s.confidence);
        }
        DecisionAnswer::Box(b) => {
            if let Some(c) = b.confidence {
                a.float("gen_ai.evaluation.score.value", c);
                a.float("toolnexus.confidence", c);
            }
            let c = &b.coordinates;
            a.floats(
                "toolnexus.box",
                [c.top, c.bottom, c.left, c.right].into_iter(),
            );
        }
    }
}

/// A score's level as its label, for the first levels (the rest are
/// written out).
fn level_label(level: i64) -> Option<&'static str> {
    const LEVELS: [&str; 11] = ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10"];
    usize::try_from(level)
        .ok()
        .and_then(|l| LEVELS.get(l))
        .copied()
}

/// The distribution as two parallel arrays: `toolnexus.labels` (option ids or
/// level indices) and `toolnexus.probabilities`.
fn probabilities(p: &BTreeMap<String, f64>, a: &mut impl Sink) {
    a.texts("toolnexus.labels", p.keys().map(String::as_str));
    a.floats("toolnexus.probabilities", p.values().copied());
}

/// How many distinct strings [`intern`] keeps; past them a string is
/// copied as it would be without sharing. Models, styles, hosts, call names,
/// question keys and option ids of one process are far fewer.
const SHARED_MAX: usize = 4096;

/// How many of the strings a thread last used it finds without the lock.
const NEAR_MAX: usize = 32;

/// The strings already shared, by text.
static SHARED: LazyLock<Mutex<HashSet<&'static str>>> = LazyLock::new(Mutex::default);

thread_local! {
    /// The shared strings this thread used last: a call finds its model,
    /// style and keys here by comparing a few bytes, without the lock and
    /// the hash of the process-wide set.
    static NEAR: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// `text` as a string that lives as long as the process, shared by every
/// span that carries it; `None` once [`SHARED_MAX`] strings are kept. The
/// set holds each of its strings for the process's life either way: as
/// `&'static str` a copy costs nothing to make or to drop, where an `Arc`'s
/// count is an atomic on a cache line the exporter's thread, dropping the
/// span, shares with the calls.
pub(super) fn intern(text: &str) -> Option<&'static str> {
    let near = NEAR
        .try_with(|n| n.borrow().iter().copied().find(|s| *s == text))
        .ok()
        .flatten();
    if near.is_some() {
        return near;
    }
    let s = {
        // A poisoned lock holds a set of whole strings either way.
        let mut set = SHARED.lock().unwrap_or_else(|p| p.into_inner());
        match set.get(text) {
            Some(s) => *s,
            None if set.len() < SHARED_MAX => {
                let s: &'static str = Box::leak(Box::from(text));
                set.insert(s);
                s
            }
            None => return None,
        }
    };
    let _ = NEAR.try_with(|n| {
        let mut n = n.borrow_mut();
        if n.len() == NEAR_MAX {
            n.remove(0);
        }
        n.push(s);
    });
    Some(s)
}

/// `prefix` and `text` joined, shared as [`intern`] shares a string; found
/// among the strings this thread used last without joining them first.
pub(super) fn intern_joined(prefix: &str, text: &str) -> std::borrow::Cow<'static, str> {
    let joined = |s: &&'static str| {
        s.len() == prefix.len() + text.len() && s.starts_with(prefix) && s.ends_with(text)
    };
    let near = NEAR
        .try_with(|n| n.borrow().iter().copied().find(joined))
        .ok()
        .flatten();
    if let Some(s) = near {
        return s.into();
    }
    let name = format!("{prefix}{text}");
    intern(&name).map_or(name.into(), Into::into)
}

/// `text` as an attribute value: shared ([`intern`]) while the set has
/// room, a copy after.
pub(super) fn shared(text: &str) -> StringValue {
    match intern(text) {
        Some(s) => StringValue::from(s),
        None => StringValue::from(text.to_string()),
    }
}

/// A question's instructions as text: plain text as is, structured content
/// as its JSON text.
pub(crate) fn instructions_text(q: &Question) -> String {
    let c = match q {
        Question::Noul(q) => &q.instructions,
        Question::Choice(q) => &q.instructions,
        Question::Score(q) => &q.instructions,
        Question::Box(q) => &q.instructions,
    };
    match c.as_str() {
        Some(s) => s.to_string(),
        None => c.as_value().to_string(),
    }
}

/// The host (and port, when given) of an endpoint URL; never its user,
/// password, path or query.
fn host_and_port(url: &str) -> Option<(&str, Option<u16>)> {
    // Byte scans: every separator is ASCII, and this runs for every call.
    let b = url.as_bytes();
    let rest = b
        .windows(3)
        .position(|w| w == b"://")
        .map_or(url, |i| &url[i + 3..]);
    let end = rest
        .bytes()
        .position(|b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..end];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host_port.is_empty() {
        return None;
    }
    if let Some(v6) = host_port.strip_prefix('[') {
        let (host, after) = v6.split_once(']')?;
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return Some((host, port));
    }
    match host_port.rsplit_once(':') {
        Some((h, p)) => Some((h, p.parse().ok())),
        None => Some((host_port, None)),
    }
}

#[cfg(test)]
pub(super) fn host_and_port_for_tests(url: &str) -> Option<(String, Option<u16>)> {
    host_and_port(url).map(|(h, p)| (h.to_string(), p))
}
