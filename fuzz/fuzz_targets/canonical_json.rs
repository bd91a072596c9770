//! `canonical_json` over any JSON value: the output re-parses to an equal value
//! and canonicalising it again gives the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::classifier::canonical_json;

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let once = canonical_json(&v);
    let back: Value = serde_json::from_str(&once).expect("canonical JSON parses");
    assert!(
        same(&back, &v),
        "canonical JSON changed the value:\n{v}\n{once}"
    );
    assert_eq!(canonical_json(&back), once, "canonical JSON is idempotent");
});

/// Equality where numbers compare by value (`-0` is written `0`, `1.0` as `1`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same(p, q)))
        }
        _ => a == b,
    }
}
