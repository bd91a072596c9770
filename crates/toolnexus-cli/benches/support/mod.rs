//! What the CLI's loopback benches share: a recorded tape of decisions and a
//! `toolnexus serve` answering from it on 127.0.0.1.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::json;
use toolnexus::classifier::{Decision, Questions, questions_from_wire, questions_wire};
use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};

pub const BIN: &str = env!("CARGO_BIN_EXE_toolnexus");

/// A bench's own directory under the system's temporary one, removed when
/// dropped: at the end of a run, or as a failed assertion unwinds.
pub struct Scratch(PathBuf);

impl Scratch {
    /// `<temp>/<name>-<pid>`, made now.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Scratch(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A count from the environment, or `default`.
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The benches' questions: a noul and a choice.
pub fn questions() -> Questions {
    questions_from_wire(&json!({
        "spam": {"type": "noul", "instructions": "Is this unsolicited bulk mail?"},
        "desk": {"type": "choice", "instructions": "Which desk owns it?", "criteria": {
            "billing": "money moved or is owed", "shipping": "a parcel", "technical": "the product misbehaves"}}
    }))
    .expect("questions")
}

/// A tape of `n` recorded decisions, one per state, under the note `note`.
pub fn write_tape(path: &Path, n: usize, note: &str) {
    let qs = questions();
    let tape = Tape::new().with_note(note);
    for i in 0..n {
        let d = Decision::from_value(&json!({
            "model": "bench-1",
            "answers": {
                "spam": {"type": "noul", "noul": (i % 100) as f64 / 100.0},
                "desk": {"type": "choice", "choice": "billing", "confidence": 0.7,
                         "probabilities": {"billing": 0.7, "shipping": 0.2, "technical": 0.1}}
            },
            "usage": {"input_tokens": 120, "output_tokens": 9, "cost": 0.00002}
        }))
        .expect("decision");
        tape.record(TapeEntry {
            call_name: "bench".into(),
            model: "bench-1".into(),
            state: json!({"ticket": i, "body": "Please refund the duplicate charge on my last invoice."}),
            questions: qs.clone(),
            outcome: TapeOutcome::Decision(d),
            request_id: None,
        });
    }
    tape.save(path).expect("save tape");
}

/// A batch's input files in a bench's directory.
pub struct Inputs {
    /// The tape of `n` recorded decisions ([`write_tape`]).
    pub tape: PathBuf,
    /// The questions file (wire JSON).
    pub questions: PathBuf,
    /// The states file: the tape's states, a JSON line each.
    pub states: PathBuf,
}

/// Writes into `dir` a tape of `n` decisions under the note `note`, the
/// questions file and the states file of the same `n` states.
pub fn write_inputs(dir: &Path, n: usize, note: &str) -> Inputs {
    let tape = dir.join("bench.tape.json");
    write_tape(&tape, n, note);
    let questions_file = dir.join("q.json");
    std::fs::write(&questions_file, questions_wire(&questions()).to_string()).expect("questions");
    let states = dir.join("in.jsonl");
    let text: String = Tape::load(&tape)
        .expect("tape")
        .entries()
        .iter()
        .map(|e| format!("{}\n", e.state))
        .collect();
    std::fs::write(&states, text).expect("states");
    Inputs {
        tape,
        questions: questions_file,
        states,
    }
}

/// A running `toolnexus serve` and its address; stopped when dropped.
pub struct Serve(Child, pub String);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `toolnexus serve --style static --tape TAPE` on a free loopback port,
/// exporting nothing whatever the machine's OpenTelemetry variables say.
pub fn start_serve(tape: &Path) -> Serve {
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--style",
            "static",
            "--tape",
        ])
        .arg(tape)
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    std::thread::spawn(move || for _ in lines {});
    let url = first
        .strip_prefix("listening on ")
        .expect("serve prints its address")
        .to_string();
    Serve(child, url)
}
