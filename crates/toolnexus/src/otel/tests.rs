use std::collections::BTreeMap;

use serde_json::json;

use super::attributes::host_and_port_for_tests as host_and_port;
use super::*;
use crate::classifier::{ClassifierError, Decision, Evaluated, Identity};

/// A decision with a noul, a choice and a score (shared with `fast`'s tests).
pub(super) fn decision() -> Decision {
    Decision::from_value(&json!({
        "model": "jev-1.13",
        "answers": {
            "spam": {"type": "noul", "noul": 0.25},
            "topic": {"type": "choice", "choice": "billing",
                      "probabilities": {"billing": 0.7, "other": 0.3},
                      "confidence": 0.4, "near_uniform": false},
            "tone": {"type": "score", "score": 1.8,
                     "legend": {"0": "calm", "1": "tense", "2": "angry"},
                     "probabilities": {"0": 0.05, "1": 0.1, "2": 0.85},
                     "confidence": 0.6}
        },
        "usage": {"input_tokens": 120, "output_tokens": 3},
        "calibrated": true
    }))
    .expect("a well-formed decision")
}

/// [`decision`] evaluated at a priced cost of $0.002 (shared with `fast`'s
/// tests).
pub(super) fn priced() -> Evaluated {
    let mut e = Evaluated::new(decision());
    e.cost = crate::price::Cost::new(
        0.002,
        crate::price::CostSource::Priced {
            table: "toolnexus".into(),
            checked: "2026-12-05".into(),
        },
    );
    e
}

fn get<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a opentelemetry::Value> {
    attrs
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(attrs: &[KeyValue], key: &str) -> String {
    get(attrs, key)
        .unwrap_or_else(|| panic!("no {key} in {attrs:?}"))
        .as_str()
        .into_owned()
}

fn ok_record<'a>(
    id: &'a Identity,
    result: &'a Result<Evaluated, ClassifierError>,
    state: Option<&'a str>,
) -> CallRecord<'a> {
    CallRecord {
        identity: id,
        asked: "jev-latest",
        call_name: "triage",
        result,
        answered: "jev-1.13",
        cascade_stage: Some("teacher"),
        state,
    }
}

#[test]
fn a_call_maps_to_the_genai_client_span() {
    let id = Identity::new(
        "systemone",
        "jev-latest",
        Some("https://api.example.com:8443/v1/systemone".into()),
    );
    let result = Ok(priced());
    let attrs = span_attributes(&ok_record(&id, &result, None));
    assert_eq!(text(&attrs, "gen_ai.operation.name"), "evaluate");
    assert_eq!(text(&attrs, "gen_ai.provider.name"), "systemone");
    assert_eq!(text(&attrs, "gen_ai.request.model"), "jev-latest");
    assert_eq!(text(&attrs, "gen_ai.response.model"), "jev-1.13");
    assert_eq!(
        get(&attrs, "gen_ai.usage.input_tokens"),
        Some(&120i64.into())
    );
    assert_eq!(
        get(&attrs, "gen_ai.usage.output_tokens"),
        Some(&3i64.into())
    );
    assert_eq!(text(&attrs, "server.address"), "api.example.com");
    assert_eq!(get(&attrs, "server.port"), Some(&8443i64.into()));
    assert_eq!(get(&attrs, "toolnexus.calibrated"), Some(&true.into()));
    assert_eq!(get(&attrs, "toolnexus.cache_hit"), Some(&false.into()));
    assert_eq!(get(&attrs, "toolnexus.cost_usd"), Some(&0.002.into()));
    assert_eq!(text(&attrs, "toolnexus.cost_source"), "priced");
    assert_eq!(text(&attrs, "toolnexus.cost_table"), "toolnexus");
    assert_eq!(text(&attrs, "toolnexus.cascade_stage"), "teacher");
    assert_eq!(text(&attrs, "toolnexus.call_name"), "triage");
    assert!(get(&attrs, "error.type").is_none());
    assert!(
        get(&attrs, "toolnexus.state").is_none(),
        "no content unless asked"
    );
}

#[test]
fn a_cache_hit_spent_nothing() {
    let id = Identity::new("systemone", "jev-latest", None);
    let mut e = Evaluated::new(decision());
    e.cache_hit = true;
    let result = Ok(e);
    let attrs = span_attributes(&ok_record(&id, &result, None));
    assert_eq!(get(&attrs, "toolnexus.cache_hit"), Some(&true.into()));
    assert_eq!(get(&attrs, "gen_ai.usage.input_tokens"), Some(&0i64.into()));
    assert_eq!(get(&attrs, "toolnexus.cost_usd"), Some(&0.0.into()));
    assert_eq!(text(&attrs, "toolnexus.cost_source"), "cache");
    assert!(
        get(&attrs, "server.address").is_none(),
        "no endpoint, no address"
    );
}

#[test]
fn a_failure_names_its_kind_and_no_text() {
    let id = Identity::new("systemone", "jev-latest", None);
    let result = Err(ClassifierError::cancelled());
    let record = CallRecord {
        answered: "",
        ..ok_record(&id, &result, None)
    };
    let attrs = span_attributes(&record);
    assert_eq!(text(&attrs, "error.type"), "cancelled");
    assert!(get(&attrs, "gen_ai.response.model").is_none());
    assert!(evaluation_events(&record, &[]).is_empty());
}

#[test]
fn each_answer_is_one_evaluation_result() {
    let id = Identity::new("systemone", "jev-latest", None);
    let result = Ok(Evaluated::new(decision()));
    let instructions = vec![("spam".to_string(), "Is it spam?".to_string())];
    let record = ok_record(&id, &result, Some("{\"x\":1}"));
    let events = evaluation_events(&record, &instructions);
    let by_key: BTreeMap<String, &Vec<KeyValue>> = events
        .iter()
        .map(|a| (text(a, "gen_ai.evaluation.name"), a))
        .collect();
    assert_eq!(by_key.len(), 3);

    let noul = by_key["spam"];
    assert_eq!(
        get(noul, "gen_ai.evaluation.score.value"),
        Some(&0.25.into())
    );
    assert_eq!(text(noul, "gen_ai.evaluation.score.label"), "false");
    assert_eq!(text(noul, "toolnexus.instructions"), "Is it spam?");

    let choice = by_key["topic"];
    assert_eq!(text(choice, "gen_ai.evaluation.score.label"), "billing");
    assert_eq!(
        get(choice, "gen_ai.evaluation.score.value"),
        Some(&0.7.into())
    );
    assert_eq!(get(choice, "toolnexus.confidence"), Some(&0.4.into()));
    assert_eq!(get(choice, "toolnexus.near_uniform"), Some(&false.into()));
    assert_eq!(
        get(choice, "toolnexus.probabilities"),
        Some(&opentelemetry::Value::Array(vec![0.7, 0.3].into()))
    );
    assert!(get(choice, "toolnexus.instructions").is_none());

    let score = by_key["tone"];
    assert_eq!(text(score, "gen_ai.evaluation.score.label"), "2");
    assert_eq!(
        get(score, "gen_ai.evaluation.score.value"),
        Some(&1.8.into())
    );
    assert_eq!(text(score, "toolnexus.answer_type"), "score");

    let span = span_attributes(&record);
    assert_eq!(text(&span, "toolnexus.state"), "{\"x\":1}");
}

#[test]
fn an_endpoint_is_exported_as_its_host_only() {
    assert_eq!(
        host_and_port("https://user:sekret@api.example.com/v1?key=sekret"),
        Some(("api.example.com".into(), None))
    );
    assert_eq!(
        host_and_port("http://127.0.0.1:8080/v1/systemone"),
        Some(("127.0.0.1".into(), Some(8080)))
    );
    assert_eq!(
        host_and_port("http://[::1]:9/v1"),
        Some(("::1".into(), Some(9)))
    );
    assert_eq!(host_and_port("http:///v1"), None);
}

#[test]
fn a_guard_verdict_maps_to_guard_attributes() {
    let v = GuardVerdict {
        tool: "Bash".into(),
        verdict: "ask",
        rule: Some("project:no-deploys".into()),
        decided_by: "rule",
        judge_asked: true,
    };
    let a = guard_attributes(&v);
    assert_eq!(text(&a, "toolnexus.guard.verdict"), "ask");
    assert_eq!(text(&a, "toolnexus.guard.rule"), "project:no-deploys");
    assert_eq!(text(&a, "toolnexus.guard.decided_by"), "rule");
    assert_eq!(text(&a, "toolnexus.guard.tool"), "Bash");
    assert_eq!(
        get(&a, "toolnexus.guard.judge_asked"),
        Some(&opentelemetry::Value::Bool(true))
    );
    let judged = guard_attributes(&GuardVerdict {
        rule: None,
        decided_by: "judge",
        ..v
    });
    assert!(get(&judged, "toolnexus.guard.rule").is_none());
}

/// A span exporter that keeps what it is sent.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<std::sync::Mutex<Vec<opentelemetry_sdk::trace::SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for Kept {
    async fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.lock().expect("not poisoned").extend(batch);
        Ok(())
    }
}

fn draft(parent: Option<TraceParent>) -> spans::Draft {
    let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    spans::Draft {
        name: "evaluate jev-1".into(),
        kind: SpanKind::Client,
        started,
        ended: started + Duration::from_millis(40),
        parent,
        attributes: vec![KeyValue::new("gen_ai.operation.name", "evaluate")],
        events: vec![vec![KeyValue::new("gen_ai.evaluation.name", "spam")]],
        error: Some("timeout"),
    }
}

#[test]
fn a_span_goes_to_the_exporter_as_the_tracer_built_it() {
    let kept = Kept::default();
    let counts = Arc::new(delivery::Counts::default());
    let resource = opentelemetry_sdk::Resource::builder().build();
    let exporter = delivery::Warned::new(kept.clone(), "http://127.0.0.1:4318", counts.clone());
    let spans = spans::Spans::new(exporter, &resource, counts.clone());
    let parent = |sampled| TraceParent {
        trace_id: [7; 16],
        span_id: [9; 8],
        sampled,
    };
    spans.send(draft(None));
    spans.send(draft(Some(parent(true))));
    // The caller's unsampled trace is not exported, nor counted as waiting.
    spans.send(draft(Some(parent(false))));
    spans.shutdown(Duration::from_secs(5)).expect("flushed");
    assert_eq!(counts.give_up(), 0, "every queued span settled");
    let got = kept.0.lock().expect("not poisoned");
    assert_eq!(got.len(), 2, "{got:?}");
    let (own, child) = (&got[0], &got[1]);
    assert!(own.span_context.is_sampled());
    assert!(!own.parent_span_is_remote);
    assert_eq!(own.name, "evaluate jev-1");
    assert_eq!(own.span_kind, SpanKind::Client);
    assert_eq!(own.end_time, own.start_time + Duration::from_millis(40));
    assert_eq!(own.status, opentelemetry::trace::Status::error("timeout"));
    assert_eq!(own.events.len(), 1);
    assert_eq!(own.events[0].name, "gen_ai.evaluation.result");
    assert_eq!(own.events[0].timestamp, own.end_time);
    assert_eq!(own.instrumentation_scope.name(), "toolnexus");
    assert_eq!(child.span_context.trace_id().to_bytes(), [7; 16]);
    assert_eq!(child.parent_span_id.to_bytes(), [9; 8]);
    assert!(child.parent_span_is_remote);
    assert_ne!(child.span_context.span_id().to_bytes(), [9; 8]);
}

#[test]
fn a_repeated_string_is_shared_across_threads_not_copied() {
    let here = attributes::intern("jev-interned-1").expect("the set has room");
    let there = std::thread::spawn(|| attributes::intern("jev-interned-1"))
        .join()
        .expect("the thread")
        .expect("the set has room");
    assert!(std::ptr::eq(here, there), "one string for both threads");
    assert_eq!(
        attributes::shared("jev-interned-1").as_str(),
        "jev-interned-1"
    );
}

#[test]
fn a_joined_name_is_the_shared_string_of_the_whole() {
    let whole = attributes::intern("evaluate jev-joined-1").expect("the set has room");
    let joined = attributes::intern_joined("evaluate ", "jev-joined-1");
    assert!(
        matches!(joined, std::borrow::Cow::Borrowed(s) if std::ptr::eq(s, whole)),
        "found without a copy"
    );
    // A prefix and text that only end alike are not taken for it.
    assert_eq!(
        attributes::intern_joined("guard ", "jev-joined-1"),
        "guard jev-joined-1"
    );
    assert_eq!(
        attributes::intern_joined("evaluate", " jev-joined-1"),
        "evaluate jev-joined-1"
    );
}

#[test]
fn otel_sdk_disabled_is_read_as_the_specification_reads_a_boolean() {
    for on in ["true", "TRUE", "True", " true "] {
        assert!(super::sdk_disabled(Some(on)), "{on:?} turns the SDK off");
    }
    for off in [
        None,
        Some(""),
        Some("false"),
        Some("1"),
        Some("yes"),
        Some("truthy"),
    ] {
        assert!(!super::sdk_disabled(off), "{off:?} leaves it on");
    }
}
