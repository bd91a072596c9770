//! `decode_reply` (the Llm style's reply decoder) on arbitrary text: never
//! panics; a decoded reply is never calibrated and names the given model.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::classifier::decode_reply;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(d) = decode_reply(&text, "fuzz-model") {
        assert!(!d.calibrated, "an emulated decision is never calibrated");
        assert_eq!(d.model, "fuzz-model");
    }
});
