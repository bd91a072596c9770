//! The Llm style's pure halves: rendering the prompt for three questions and
//! decoding a three-answer reply.
//!
//! `cargo bench -p toolnexus --bench llm`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use toolnexus::classifier::{Questions, choice_over};
use toolnexus::classifier::{decode_reply, render_prompt};

/// The support desk's three questions, its desk choosing among three teams.
fn questions() -> Questions {
    let mut qs = toolnexus::testing::three_questions();
    qs.insert(
        "desk".into(),
        choice_over(
            "Which team should handle this ticket?",
            [
                ("billing", "money moved or should move"),
                ("shipping", "a parcel is late, lost or damaged"),
                ("account", "logins, passwords, profile settings"),
            ],
        )
        .into(),
    );
    qs
}

const REPLY: &str = r#"Here is my judgment:
```json
{"answers":{
  "refund":{"type":"noul","noul":0.94},
  "desk":{"type":"choice","choice":"billing","probabilities":{"billing":0.86,"shipping":0.08,"account":0.06},"confidence":0.85},
  "urgency":{"type":"score","score":1.2,"legend":{"0":"can wait","1":"today","2":"now"},"probabilities":{"0":0.1,"1":0.6,"2":0.3},"confidence":0.6}}}
```"#;

fn bench(c: &mut Criterion) {
    let qs = questions();
    let state =
        json!({"message": "I was charged twice for order 1182, please refund one", "tier": "gold"});
    c.bench_function("llm/render_prompt_3_questions", |b| {
        b.iter(|| render_prompt(black_box(&state), black_box(&qs)))
    });
    c.bench_function("llm/decode_reply_3_answers", |b| {
        b.iter(|| decode_reply(black_box(REPLY), black_box("gpt-4o-mini")).unwrap())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
