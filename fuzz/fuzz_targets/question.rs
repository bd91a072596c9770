//! `Question::from_wire` and `questions_from_wire` on arbitrary JSON: never
//! panic; whatever decodes re-encodes with `wire` and decodes to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolnexus::classifier::{
    Question, canonical_request, questions_from_wire, questions_wire, validate_questions,
};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(q) = Question::from_wire(&v) {
        assert_eq!(Question::from_wire(&q.wire()).expect("wire decodes"), q);
    }
    // The same bytes as a whole question set, and each member alone.
    if let Ok(qs) = questions_from_wire(&v) {
        assert_eq!(
            questions_from_wire(&questions_wire(&qs)).expect("set decodes"),
            qs
        );
        let _ = validate_questions(&qs);
        let _ = canonical_request("m", &qs);
    }
    if let Value::Object(m) = &v {
        for q in m.values() {
            let _ = Question::from_wire(q);
        }
    }
});
