//! A classifier the caller built at the bottom of a stack (a binding's
//! callable, recorded decisions): the builder puts the layers over it — here
//! a token cap and a cache — and refuses an option that would build a style.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolnexus::cache::MemoryCache;
use toolnexus::classifier::{ClassifierOptions, ClassifierStyle, Decision, create_classifier};
use toolnexus::judge::{noul, questions};
use toolnexus_stack::{Caps, StackSpec, build};

#[tokio::test]
async fn a_given_classifier_takes_the_layers() {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let own = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "rules-v1".into(),
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async {
                let v = json!({"model": "rules-v1", "answers": {"ok": {"type": "noul", "noul": 0.9}},
                               "usage": {"input_tokens": 10, "output_tokens": 1}});
                Decision::from_value(&v).map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    let spec = StackSpec {
        bottom: Some(own),
        caps: Some(Caps {
            max_tokens: Some(1_000),
            ..Default::default()
        }),
        cache: Some((Arc::new(MemoryCache::new()), Duration::from_secs(60))),
        ..Default::default()
    };
    let stack = build(&spec).unwrap();
    assert_eq!(stack.style, "custom");
    assert!(
        stack.budget.is_some(),
        "the cap is a layer over the given classifier"
    );
    let qs = questions(&[noul("ok", "Is it fine?")]).unwrap();
    for _ in 0..2 {
        let d = stack.classifier.evaluate(json!("hi"), &qs).await.unwrap();
        assert_eq!(d.noul("ok").unwrap().noul, 0.9);
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the second answer is the cache's"
    );
}

#[test]
fn a_style_option_over_a_given_classifier_is_refused_by_name() {
    let own = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            Box::pin(async { Err("unused".to_string()) })
        })),
        ..Default::default()
    })
    .unwrap();
    let spec = StackSpec {
        bottom: Some(own),
        model: Some("jev-1.13".into()),
        ..Default::default()
    };
    let e = build(&spec).unwrap_err().to_string();
    assert!(
        e.starts_with("--model: the stack's bottom is a classifier already built"),
        "{e}"
    );
}
