//! Criterion benches for the hot paths: decode, canonical request, Static lookup,
//! and System One over loopback against a bare reqwest POST of the same bytes.
//!
//! `cargo bench -p toolnexus --bench core`

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolnexus::classifier::*;
use toolnexus::testing::{Reply, Server};

mod common;
use common::{THREE_ANSWERS, three_questions};

const SEED_RESPONSE: &[u8] = br#"{"model":"typesafe/jev-1.13-20260917","calibrated":true,
        "answers":{"risk":{"type":"score","score":1.21,
            "legend":{"0":"harmless","1":"reversible","2":"destructive"},
            "probabilities":{"0":0.10,"1":0.59,"2":0.31},"confidence":0.71}},
        "usage":{"input_tokens":210,"output_tokens":24}}"#;

fn decode(c: &mut Criterion) {
    let mut g = c.benchmark_group("decode");
    for (name, bytes) in [
        ("seed_example_1", SEED_RESPONSE),
        ("three_answers", THREE_ANSWERS.as_bytes()),
    ] {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_with_input(
            BenchmarkId::new("Decision::from_slice", name),
            bytes,
            |b, bytes| b.iter(|| Decision::from_slice(black_box(bytes)).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("serde_json::Value (reference)", name),
            bytes,
            |b, bytes| b.iter(|| serde_json::from_slice::<Value>(black_box(bytes)).unwrap()),
        );
        g.bench_with_input(
            BenchmarkId::new("IgnoredAny floor", name),
            bytes,
            |b, bytes| {
                b.iter(|| {
                    serde_json::from_slice::<serde::de::IgnoredAny>(black_box(bytes)).unwrap()
                })
            },
        );
    }
    g.finish();
}

fn canonical(c: &mut Criterion) {
    let mut g = c.benchmark_group("canonical_request");
    let three = three_questions();
    g.bench_function("3 questions", |b| {
        b.iter(|| canonical_request(black_box("typesafe/jev-1.13"), black_box(&three)))
    });
    let wide = Questions::from([(
        "topic".to_string(),
        choice_over(
            "Which topic fits best?",
            (0..255).map(|i| {
                (
                    format!("topic_{i:03}"),
                    format!("the message is mainly about subject number {i}"),
                )
            }),
        )
        .into(),
    )]);
    g.bench_function("255-option choice", |b| {
        b.iter(|| canonical_request(black_box("typesafe/jev-1.13"), black_box(&wide)))
    });
    g.finish();
}

fn static_lookup(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let qs = three_questions();
    let mut g = c.benchmark_group("static_evaluate");
    for n in [1usize, 1000] {
        let decisions = (0..n)
            .map(|i| RecordedDecision {
                state: json!({"ticket": i, "text": "I was charged twice for order 1182"}),
                questions: qs.clone(),
                response: THREE_ANSWERS.as_bytes().to_vec(),
            })
            .collect();
        let judge = create_classifier(ClassifierOptions {
            style: ClassifierStyle::Static,
            decisions,
            ..Default::default()
        })
        .unwrap();
        let state = json!({"ticket": n / 2, "text": "I was charged twice for order 1182"});
        g.bench_function(BenchmarkId::new("recordings", n), |b| {
            b.iter(|| {
                rt.block_on(judge.evaluate(black_box(state.clone()), black_box(&qs)))
                    .unwrap()
            })
        });
    }
    g.finish();
}

fn systemone_loopback(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let server = rt.block_on(Server::start([Reply::json(200, THREE_ANSWERS)]));
    let qs = three_questions();
    let judge = create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        api_key_env: "TOOLNEXUS_BENCH_NO_KEY".into(),
        ..Default::default()
    })
    .unwrap();
    let state = json!({"ticket": 1, "text": "I was charged twice for order 1182"});
    // The same bytes the classifier posts.
    let body = format!(
        "{{\"model\":\"jev-latest\",\"questions\":{},\"state\":{}}}",
        canonical_json(&questions_wire(&qs)),
        canonical_json(&state)
    );
    let bare = reqwest::Client::new();
    let url = format!("{}/systemone", server.base_url());
    let post = |bare: &reqwest::Client| {
        bare.post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(body.clone())
    };

    let mut g = c.benchmark_group("systemone_loopback");
    g.bench_function("evaluate (sequential)", |b| {
        b.iter(|| rt.block_on(judge.evaluate(state.clone(), &qs)).unwrap())
    });
    g.bench_function("bare reqwest POST (sequential)", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = post(&bare).send().await.unwrap();
                black_box(r.bytes().await.unwrap())
            })
        })
    });
    // The same POST bounded by a per-request timeout, as every classifier attempt is:
    // this isolates what arming that timer costs on this runtime.
    g.bench_function("bare reqwest POST + 10 s timeout (sequential)", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = post(&bare)
                    .timeout(std::time::Duration::from_secs(10))
                    .send()
                    .await
                    .unwrap();
                black_box(r.bytes().await.unwrap())
            })
        })
    });
    const BATCH: usize = 256;
    g.throughput(Throughput::Elements(BATCH as u64));
    let states: Vec<Value> = (0..BATCH)
        .map(|i| json!({"ticket": i, "text": "charged twice"}))
        .collect();
    g.bench_function("evaluate_batch 256 (16 in flight)", |b| {
        b.iter(|| {
            rt.block_on(judge.evaluate_batch(states.clone(), &qs))
                .unwrap()
        })
    });
    g.bench_function("bare reqwest POST x256 (16 in flight)", |b| {
        b.iter(|| {
            rt.block_on(async {
                use futures::StreamExt;
                futures::stream::iter(0..BATCH)
                    .map(|_| {
                        let req = post(&bare);
                        async move { req.send().await.unwrap().bytes().await.unwrap() }
                    })
                    .buffered(16)
                    .collect::<Vec<_>>()
                    .await
            })
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    decode,
    canonical,
    static_lookup,
    systemone_loopback
);
criterion_main!(benches);
