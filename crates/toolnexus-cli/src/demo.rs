//! The built-in demo tape: the library's `examples/tapes/demo.tape.json`, compiled
//! into the binary so `toolnexus eval` works offline from any directory.

use anyhow::Result;
use serde_json::Value;
use toolnexus::classifier::Questions;
use toolnexus::judge::Tape;

use crate::exit;

/// The demo tape's text.
pub const DEMO_TAPE: &str = include_str!("../../toolnexus/examples/tapes/demo.tape.json");

/// The call name `eval` replays from the demo tape by default.
pub const DEMO_CALL: &str = "triage";

/// How the demo tape is named in messages.
pub const DEMO_LABEL: &str = "the built-in demo tape";

/// The demo tape, parsed.
pub fn demo_tape() -> Result<Tape> {
    Tape::from_json(DEMO_TAPE).map_err(|e| anyhow::anyhow!("built-in demo tape: {e}"))
}

/// The first recorded example of `call` on `tape` (entries are in the file's
/// stable order), as questions and state to evaluate.
pub fn first_example(tape: &Tape, call: &str, label: &str) -> Result<(Questions, Value)> {
    tape.entries()
        .into_iter()
        .find(|e| e.call_name == call)
        .map(|e| (e.questions, e.state))
        .ok_or_else(|| {
            exit::usage(format!(
                "{label} has no recording for call {call:?} (it has {})",
                names(&tape.call_names())
            ))
        })
}

/// `"a", "b"` for messages.
pub fn names(list: &[String]) -> String {
    if list.is_empty() {
        return "none".to_string();
    }
    list.iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_tape_has_the_default_call() {
        let tape = demo_tape().unwrap();
        assert!(tape.call_names().contains(&DEMO_CALL.to_string()));
        let (qs, state) = first_example(&tape, DEMO_CALL, DEMO_LABEL).unwrap();
        assert!(qs.contains_key("desk"));
        assert!(state.is_object());
    }
}
