use std::fs;
use std::path::PathBuf;

use serde_json::{Value, json};

use super::diagnose::*;
use super::format::{error_kind_from_name, error_kind_name};
use super::replay::no_such_call;
use super::*;
use crate::classifier::{Decision, ErrorKind};
use crate::fs::{commit, stage};

fn temp_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("toolnexus-tape-unit-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

fn sample(note: &str) -> Tape {
    let tape = Tape::new().with_note(note);
    tape.record(TapeEntry {
        call_name: "c".into(),
        model: "m".into(),
        state: json!({"b": 1, "a": "x"}),
        questions: crate::judge::questions(&[crate::judge::noul("q", "Is it?")]).unwrap(),
        outcome: TapeOutcome::Decision(
            Decision::from_slice(br#"{"model":"m","answers":{"q":{"type":"noul","noul":0.25}}}"#)
                .unwrap(),
        ),
        request_id: None,
    });
    tape
}

#[test]
fn a_save_interrupted_before_rename_leaves_the_old_file_whole() {
    let dir = temp_dir("interrupted");
    let path = dir.join("t.tape.json");
    sample("old").save(&path).unwrap();
    let before = fs::read(&path).unwrap();

    // Stage the new version, then stop as a crash would: no rename.
    let new = sample("new").to_json();
    let tmp = stage(&path, &new.as_bytes()[..new.len() / 2]).unwrap();
    assert!(tmp.exists());
    assert_eq!(
        tmp.parent(),
        path.parent(),
        "the temp file is in the same directory"
    );
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the old file is untouched"
    );
    assert_eq!(Tape::load(&path).unwrap().note(), "old");

    // A later save still works and replaces the file whole.
    sample("newer").save(&path).unwrap();
    assert_eq!(Tape::load(&path).unwrap().note(), "newer");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn commit_finishes_a_staged_save() {
    let dir = temp_dir("commit");
    let path = dir.join("t.tape.json");
    let tmp = stage(&path, sample("staged").to_json().as_bytes()).unwrap();
    assert!(!path.exists());
    commit(&tmp, &path).unwrap();
    assert!(!tmp.exists());
    assert_eq!(Tape::load(&path).unwrap().note(), "staged");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn pretty_form_is_sorted_and_stable() {
    let text = sample("n").to_json();
    let want = r#"{
  "calls": {
    "c": [
      {
        "decision": {
          "answers": {
            "q": {
              "noul": 0.25,
              "type": "noul"
            }
          },
          "calibrated": true,
          "model": "m",
          "usage": {
            "input_tokens": 0,
            "output_tokens": 0
          }
        },
        "model": "m",
        "questions": {
          "q": {
            "instructions": "Is it?",
            "type": "noul"
          }
        },
        "state": {
          "a": "x",
          "b": 1
        }
      }
    ]
  },
  "format": "toolnexus.tape",
  "note": "n",
  "version": 1
}
"#;
    assert_eq!(text, want);
    assert_eq!(Tape::from_json(&text).unwrap().to_json(), text);
}

fn first(d: &Diff) -> (&str, Option<&Value>, Option<&Value>) {
    let (p, a, b) = d.first.as_ref().expect("a difference");
    (p.as_str(), a.as_ref(), b.as_ref())
}

#[test]
fn diff_names_the_first_differing_path_with_both_values() {
    let was = json!({"customer": {"tier": "gold", "id": 7}, "items": [{"name": "a"}, {"name": "b"}, {"name": "c"}]});
    let now = json!({"customer": {"tier": "silver", "id": 7.0}, "items": [{"name": "a"}, {"name": "b"}, {"name": "x"}]});
    let d = diff(&was, &now, "state");
    assert_eq!(d.count, 2);
    // Keys are walked sorted: "customer" before "items"; 7 and 7.0 are equal.
    assert_eq!(
        first(&d),
        (
            "state.customer.tier",
            Some(&json!("gold")),
            Some(&json!("silver"))
        )
    );
    let d = diff(
        &json!([1, 2, {"name": "p"}]),
        &json!([1, 2, {"name": "q"}]),
        "state",
    );
    assert_eq!(first(&d).0, "state[2].name");
    let d = diff(
        &json!({"a b": 1, "": 2}),
        &json!({"a b": 1, "": 3}),
        "state",
    );
    assert_eq!(first(&d).0, "state[\"\"]");
    let d = diff(&json!({"a b": 1}), &json!({"a b": 2}), "state");
    assert_eq!(first(&d).0, "state[\"a b\"]");
    assert_eq!(
        diff(&json!("same"), &json!("same"), "state"),
        Diff::default()
    );
    assert_eq!(diff(&json!({}), &json!({}), "state"), Diff::default());
    let d = diff(&json!(1), &json!("1"), "state");
    assert_eq!((d.count, first(&d).0), (1, "state"));
}

#[test]
fn diff_counts_leaves_of_values_on_one_side_only() {
    let d = diff(
        &json!({"a": 1}),
        &json!({"a": 1, "b": {"c": 1, "d": [1, 2]}}),
        "state",
    );
    assert_eq!(d.count, 3);
    assert_eq!(
        first(&d),
        ("state.b", None, Some(&json!({"c": 1, "d": [1, 2]})))
    );
    let d = diff(&json!([1, 2, 3]), &json!([1]), "state");
    assert_eq!(d.count, 2);
    assert_eq!(first(&d), ("state[1]", Some(&json!(2)), None));
    // A container against a scalar counts the bigger side.
    assert_eq!(
        diff(&json!({"x": [1, 2, 3]}), &json!({"x": 0}), "s").count,
        3
    );
    // An empty container is one leaf.
    assert_eq!(diff(&json!({"x": []}), &json!({"x": {}}), "s").count, 1);
}

#[test]
fn nearest_is_the_fewest_differences_then_the_earliest() {
    let asked = diff_doc(json!({"q": 1}), Some(json!({"a": 1, "b": 2, "c": 3})));
    let recorded = [
        json!({"a": 0, "b": 0, "c": 3}),
        json!({"a": 1, "b": 0, "c": 3}),
        json!({"a": 1, "b": 2, "c": 0}),
    ];
    let text = nearest_text(
        recorded
            .iter()
            .map(|s| diff_doc(json!({"q": 1}), Some(s.clone()))),
        &asked,
    );
    assert_eq!(
        text,
        "the nearest recording (2 of 3) differs in 1 value, first at state.b: recorded 0, asked 2"
    );
    let text = nearest_text(
        [json!({"q": 2}), json!({"q": 3, "r": 1})]
            .into_iter()
            .map(|q| diff_doc(q, None)),
        &diff_doc(json!({"q": 1, "r": 1}), None),
    );
    assert_eq!(
        text,
        "the nearest recording (2 of 2) differs in 1 value, first at questions.q: recorded 3, asked 1"
    );
    let text = nearest_text(
        [json!(1), json!(2)].into_iter().map(|q| diff_doc(q, None)),
        &diff_doc(json!({"x": [1, 2]}), None),
    );
    assert!(
        text.starts_with("the nearest recording (1 of 2) differs in 2 values, first at questions:"),
        "{text}"
    );
}

#[test]
fn shown_values_are_cut_at_sixty_characters() {
    assert_eq!(shown_value(None), "(absent)");
    assert_eq!(
        shown_value(Some(&json!({"b": 1, "a": 2.0}))),
        r#"{"a":2,"b":1}"#
    );
    let long = "é".repeat(100);
    let shown = shown_value(Some(&json!(long)));
    assert_eq!(shown.chars().count(), VALUE_SHOWN + 1);
    assert!(
        shown.starts_with("\"éé") && shown.ends_with("é…"),
        "{shown}"
    );
    let exact = "x".repeat(VALUE_SHOWN - 2);
    assert_eq!(shown_value(Some(&json!(exact))), format!("\"{exact}\""));
}

#[test]
fn an_unknown_call_names_the_recorded_ones() {
    assert_eq!(no_such_call(&[]), "the tape is empty");
    assert_eq!(
        no_such_call(&["a".into(), "b\n".into()]),
        "the tape has no recordings under that call (its calls: \"a\", \"b\\n\")"
    );
    let many: Vec<String> = (0..12).map(|i| format!("c{i:02}")).collect();
    let text = no_such_call(&many);
    assert!(
        text.contains("\"c09\", … 12 in all)") && !text.contains("c10"),
        "{text}"
    );
}

fn failure_at(tape: &Tape, call: &str, state: Value) {
    tape.record(TapeEntry {
        call_name: call.into(),
        model: "m".into(),
        state,
        questions: crate::judge::questions(&[crate::judge::noul("q", "Is it?")]).unwrap(),
        outcome: TapeOutcome::Failure {
            kind: ErrorKind::Timeout,
            message: "classifier: request timeout after 10ms".into(),
            status: None,
        },
        request_id: None,
    });
}

#[test]
fn ordinals_are_written_only_when_recording_order_is_not_file_order() {
    let in_order = Tape::new();
    for n in [1, 2, 3] {
        failure_at(&in_order, "c", json!(n));
    }
    assert!(!in_order.to_json().contains("ordinal"));
    assert_eq!(in_order.lock().calls["c"].ranks(), None);

    let shuffled = Tape::new();
    for n in [3, 1, 2] {
        failure_at(&shuffled, "c", json!(n));
    }
    failure_at(&shuffled, "d", json!(1));
    failure_at(&shuffled, "c", json!(1)); // re-recorded: keeps its place
    assert_eq!(shuffled.lock().calls["c"].ranks(), Some(vec![1, 2, 0]));
    let text = shuffled.to_json();
    assert_eq!(text.matches("\"ordinal\"").count(), 3, "{text}");
    let loaded = Tape::from_json(&text).unwrap();
    assert_eq!(loaded.to_json(), text);
    let states: Vec<Value> = loaded
        .call_entries("c")
        .into_iter()
        .map(|e| e.state)
        .collect();
    assert_eq!(states, [json!(3), json!(1), json!(2)]);
}

#[test]
fn bad_ordinals_are_refused_naming_the_entry() {
    let text = |a: &str, b: &str| {
        let mut v: Value = serde_json::from_str(&sample("n").to_json()).unwrap();
        let e = v["calls"]["c"][0].clone();
        let mut one = e.clone();
        let mut two = e;
        two["state"] = json!("other");
        if !a.is_empty() {
            one["ordinal"] = serde_json::from_str(a).unwrap();
        }
        if !b.is_empty() {
            two["ordinal"] = serde_json::from_str(b).unwrap();
        }
        v["calls"]["c"] = json!([one, two]);
        v.to_string()
    };
    let err = |a, b| Tape::from_json(&text(a, b)).unwrap_err().to_string();
    assert_eq!(
        err("0", ""),
        "tape: <input>: call \"c\" entry 1: no \"ordinal\", but other entries of this call have one (give every entry of a call an ordinal, or none)"
    );
    assert_eq!(
        err("4", "4"),
        "tape: <input>: call \"c\" entry 1: \"ordinal\" 4 is also entry 0's"
    );
    assert_eq!(
        err("-1", "0"),
        "tape: <input>: call \"c\" entry 0: \"ordinal\" is not a non-negative integer"
    );
    // Gaps are fine; order follows the ordinals.
    let t = Tape::from_json(&text("9", "2")).unwrap();
    let states: Vec<Value> = t.call_entries("c").into_iter().map(|e| e.state).collect();
    assert_eq!(states[0], json!("other"));
}

#[test]
fn tape_match_names_read_back() {
    for m in TapeMatch::ALL {
        assert_eq!(m.as_str().parse::<TapeMatch>().unwrap(), m);
        assert_eq!(m.to_string(), m.as_str());
    }
    let e = "".parse::<TapeMatch>().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(
        e.to_string().contains("(want exact|questions|sequence)"),
        "{e}"
    );
}

#[test]
fn every_error_kind_has_a_name_that_reads_back() {
    for k in ErrorKind::ALL {
        assert_eq!(error_kind_from_name(error_kind_name(k)), Some(k));
    }
    assert_eq!(error_kind_from_name("nope"), None);
}
