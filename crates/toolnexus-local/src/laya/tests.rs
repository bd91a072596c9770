//! Unit tests of Laya.

use super::*;

#[test]
fn temperatures_clamp_like_the_reference() {
    assert_eq!(clamp_temperature(&json!(0.1006)), 0.5);
    assert_eq!(clamp_temperature(&json!(9)), 5.0);
    assert_eq!(clamp_temperature(&json!(1.7)), 1.7);
    assert_eq!(clamp_temperature(&json!(true)), 1.0);
    assert_eq!(clamp_temperature(&json!("2")), 1.0);
}

#[test]
fn entropy_confidence_spans_zero_to_one() {
    assert_eq!(entropy_confidence(&[0.5, 0.5]), 0.0);
    assert!((entropy_confidence(&[1.0, 0.0, 0.0]) - 1.0).abs() < 1e-9);
    assert_eq!(entropy_confidence(&[1.0]), 1.0);
}

#[test]
fn a_huge_state_is_tokenized_only_as_far_as_a_row_holds_it() {
    let laya =
        Laya::load(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/laya")).unwrap();
    let qs = toolnexus::judge::questions(&[toolnexus::judge::noul("refund", "A refund?")]).unwrap();
    let words: String = (0..400_000).map(|i| format!("w{} ", i % 97)).collect();
    let part = &words[..40_000];
    for (huge, short) in [
        (json!(words), json!(part)),
        // An array is cut from the left: its last items are what a row reads.
        (
            json!(words.split(' ').collect::<Vec<_>>()),
            json!(words[words.len() - 40_000..].split(' ').collect::<Vec<_>>()),
        ),
    ] {
        let a = laya.trace(std::slice::from_ref(&huge), &qs).unwrap();
        let b = laya.trace(std::slice::from_ref(&short), &qs).unwrap();
        assert_eq!(a[0].ids, b[0].ids);
    }
    let most = crate::modernbert::LARGEST_TOKENIZED.with(std::cell::Cell::get);
    assert!(most < 200_000, "{most} bytes tokenized at once");
}

#[test]
fn non_string_states_read_as_python_json() {
    assert_eq!(state_text(&json!("as is")), "as is");
    assert_eq!(
        state_text(&json!({"z": "ü", "a": [1, 2.0]})),
        "{\"z\": \"ü\", \"a\": [1, 2.0]}"
    );
}
