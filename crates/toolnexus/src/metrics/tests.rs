use std::time::Duration;

use super::*;
use crate::classifier::ErrorKind;

fn call(style: &str, model: &str, ok: bool) -> MetricEvent {
    MetricEvent {
        name: MetricName::Evaluate,
        model: model.into(),
        call_name: String::new(),
        status: if ok {
            MetricStatus::Ok
        } else {
            MetricStatus::Error
        },
        duration: Duration::from_millis(30),
        input_tokens: if ok { 10 } else { 0 },
        output_tokens: if ok { 2 } else { 0 },
        cost: ok.then_some(0.25),
        cost_source: None,
        error: (!ok).then(|| "boom".into()),
        key: None,
        request_id: None,
        cache_hit: false,
        style: style.into(),
        error_kind: (!ok).then_some(ErrorKind::Timeout),
        answers: if ok { vec!["choice", "noul"] } else { vec![] },
    }
}

#[test]
fn renders_every_documented_metric_with_its_labels() {
    let m = Metrics::new();
    m.record(&call("systemone", "jev-1", true));
    m.record(&call("systemone", "jev-1", true));
    m.record(&call("systemone", "jev-1", false));
    let mut hit = call("systemone", "jev-1", true);
    hit.cache_hit = true;
    hit.cost = Some(0.0);
    hit.duration = Duration::from_secs(100);
    m.record(&hit);
    let mut warning = call("systemone", "jev-1", true);
    warning.name = MetricName::Warning;
    warning.status = MetricStatus::Warning;
    m.record(&warning);
    let text = m.render();
    for line in [
        "toolnexus_requests_total{style=\"systemone\",model=\"jev-1\",outcome=\"ok\"} 3",
        "toolnexus_requests_total{style=\"systemone\",model=\"jev-1\",outcome=\"error\"} 1",
        "toolnexus_answers_total{type=\"choice\"} 3",
        "toolnexus_answers_total{type=\"noul\"} 3",
        "toolnexus_errors_total{kind=\"timeout\"} 1",
        "toolnexus_warnings_total 1",
        "toolnexus_cache_hits_total 1",
        "toolnexus_tokens_total{direction=\"input\"} 30",
        "toolnexus_tokens_total{direction=\"output\"} 6",
        "toolnexus_cost_usd_total 0.5",
        "toolnexus_request_duration_seconds_bucket{le=\"0.025\"} 0",
        "toolnexus_request_duration_seconds_bucket{le=\"0.05\"} 3",
        "toolnexus_request_duration_seconds_bucket{le=\"30\"} 3",
        "toolnexus_request_duration_seconds_bucket{le=\"+Inf\"} 4",
        "toolnexus_request_duration_seconds_count 4",
        "# TYPE toolnexus_request_duration_seconds histogram",
        "# TYPE toolnexus_cost_usd_total counter",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    assert!(text.ends_with('\n'));
}

#[test]
fn label_values_are_escaped() {
    let m = Metrics::new();
    m.record(&call("custom", "a\"b\\c\nd", true));
    let text = m.render();
    assert!(
        text.contains(r#"model="a\"b\\c\nd""#),
        "escaped label in:\n{text}"
    );
}

#[test]
fn a_chained_receiver_still_gets_every_event() {
    let m = Metrics::new();
    let seen = Arc::new(Mutex::new(0));
    let s = seen.clone();
    let f = m.metric_fn_then(Some(Arc::new(move |_: &MetricEvent| {
        *s.lock().unwrap() += 1
    })));
    f(&call("custom", "m", true));
    assert_eq!(*seen.lock().unwrap(), 1);
    assert!(m.render().contains("outcome=\"ok\"} 1\n"));
}
