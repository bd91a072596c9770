//! `Decision::from_slice` on arbitrary bytes: never panics; the streaming decoder
//! and the `Value` decoder agree; a decoded decision survives `to_value` and
//! canonical JSON unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::classifier::{Decision, canonical_json};

fuzz_target!(|data: &[u8]| {
    let streamed = Decision::from_slice(data);
    if let Ok(v) = serde_json::from_slice::<Value>(data) {
        let from_value = Decision::from_value(&v);
        match (&streamed, &from_value) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "the two decoders disagree"),
            (Err(_), Err(_)) => {}
            (a, b) => panic!("one decoder accepts what the other refuses: {a:?} / {b:?}"),
        }
    }
    if let Ok(d) = streamed {
        let wire = d.to_value();
        let back = Decision::from_value(&wire).expect("to_value decodes");
        assert_eq!(back, d, "to_value round trip");
        let text = canonical_json(&wire);
        let again = Decision::from_slice(text.as_bytes()).expect("canonical form decodes");
        assert_eq!(again, d, "canonical round trip");
    }
});
