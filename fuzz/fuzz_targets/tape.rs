//! `Tape::from_json` on arbitrary text: never panics; a tape that loads writes
//! back to text that loads to the same entries and the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolnexus::judge::Tape;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(tape) = Tape::from_json(text) else {
        return;
    };
    let written = tape.to_json();
    let back = Tape::from_json(&written).expect("a written tape loads");
    assert_eq!(back.entries(), tape.entries(), "entries survive a save");
    assert_eq!(back.note(), tape.note());
    assert_eq!(back.to_json(), written, "writing is stable");
});
