//! `batch --shadow-style`: a second style answers the same states in the
//! shadow ([`toolnexus::compose::shadow`]: the primary's result is returned as
//! it came and never waits for the shadow), and every disagreement is one
//! JSON line of the `--shadow-out` file:
//! `{"line":n,"key":…,"primary":…,"shadow":…,"shift":…,"flip":…}` — the two
//! answers as the wire has them, the total-variation distance (null when one
//! side left the key out or answered another type) and whether the answer
//! changed. A failed shadow call is `{"line":n,"error":…}`. The file is
//! rewritten by every run and ends with one `{"summary":{…}}` line.
//!
//! The shadow is a layer of the run's one stack (`toolnexus_stack`'s
//! `shadow`): under `--max-cost`, `--max-tokens` or `--max-time` its calls
//! spend from the run's budget with the primary's, so once a cap is reached a
//! shadow call is not sent either (its line says so).
//!
//! The shadow reports the state it was asked about; the line is found by the
//! state's canonical JSON (identical states on several lines are handed out
//! in line order).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::assess::answer_shift;
use toolnexus::classifier::{Decision, canonical_json};
use toolnexus::compose::{Disagreement, ShadowOptions, ShadowStats};
use toolnexus_stack::ShadowSpec;

use crate::args::{BatchArgs, LiveArgs, StyleArgs};
use crate::exit;
use crate::style::{self, Fallback};

/// The shadow of one batch run.
pub struct Shadow {
    path: PathBuf,
    stats: ShadowStats,
    shared: Arc<Shared>,
    /// `--style S (model)` of the shadow.
    name: String,
    /// The shadow calls in flight past which a state is not asked.
    bound: usize,
}

struct Shared {
    /// `--shadow-out`, once the out file is ours.
    file: Mutex<Option<File>>,
    lines: Mutex<HashMap<String, VecDeque<usize>>>,
    min_shift: f64,
    disagreements: AtomicU64,
    rows: AtomicU64,
    failed: AtomicU64,
    write_failed: AtomicU64,
    first_write_error: Mutex<Option<String>>,
}

impl Shared {
    fn write(&self, v: &Value) {
        let mut line = v.to_string();
        line.push('\n');
        let written = match self.file.lock() {
            Ok(mut f) => match f.as_mut() {
                Some(f) => f.write_all(line.as_bytes()),
                None => Err(std::io::Error::other("the shadow file was not opened")),
            },
            Err(_) => Err(std::io::Error::other("the shadow file's lock was poisoned")),
        };
        if let Err(e) = written {
            self.write_failed.fetch_add(1, Ordering::SeqCst);
            if let Ok(mut first) = self.first_write_error.lock() {
                first.get_or_insert_with(|| e.to_string());
            }
        }
    }

    /// The line the state came from: the first not yet handed out.
    fn line_of(&self, state: &Value) -> Option<usize> {
        let mut lines = self.lines.lock().ok()?;
        lines.get_mut(&canonical_json(state))?.pop_front()
    }

    fn report(&self, d: &Disagreement) {
        let line = self.line_of(&d.state).map_or(Value::Null, Value::from);
        if let Some(f) = &d.candidate_error {
            self.failed.fetch_add(1, Ordering::SeqCst);
            self.write(&json!({"line": line, "error": f.message}));
            return;
        }
        let Some(candidate) = &d.candidate_decision else {
            return;
        };
        let found = disagreements(&d.primary_decision, candidate, self.min_shift);
        if found.is_empty() {
            return;
        }
        self.rows.fetch_add(1, Ordering::SeqCst);
        for mut v in found {
            self.disagreements.fetch_add(1, Ordering::SeqCst);
            if let Value::Object(m) = &mut v {
                m.insert("line".into(), line.clone());
            }
            self.write(&v);
        }
    }
}

/// Every key on which the two decisions disagree: a flip, a shift above
/// `min_shift`, or an answer only one side gave (or gave with another type).
fn disagreements(primary: &Decision, shadow: &Decision, min_shift: f64) -> Vec<Value> {
    let (pv, sv) = (primary.to_value(), shadow.to_value());
    let keys: BTreeSet<&String> = primary
        .answers
        .keys()
        .chain(shadow.answers.keys())
        .collect();
    let mut out = Vec::new();
    for key in keys {
        let answer = |v: &Value| v["answers"].get(key).cloned().unwrap_or(Value::Null);
        let (shift, flip) = match (primary.answers.get(key), shadow.answers.get(key)) {
            (Some(a), Some(b)) => match answer_shift(a, b) {
                Some((flip, shift)) if flip || shift > min_shift => (Value::from(shift), flip),
                Some(_) => continue,
                None if a.answer_type() == "box" && b.answer_type() == "box" => continue,
                None => (Value::Null, true),
            },
            _ => (Value::Null, true),
        };
        out.push(json!({
            "key": key,
            "primary": answer(&pv),
            "shadow": answer(&sv),
            "shift": shift,
            "flip": flip,
        }));
    }
    out
}

impl Shadow {
    /// The shadow `--shadow-style` asks for, as the stack builder's option,
    /// and its report: `None` without `--shadow-style`. Its file is opened by
    /// [`Shadow::open`] once the out file is ours, before any call is made.
    pub fn spec(args: &BatchArgs) -> Result<Option<(ShadowSpec, Shadow)>> {
        let (Some(style_name), Some(path)) = (args.shadow_style, &args.shadow_out) else {
            return Ok(None);
        };
        let style_args = StyleArgs {
            live: LiveArgs {
                style: Some(style_name),
                model: args.shadow_model.clone(),
                base_url: args.shadow_base_url.clone(),
                // The same trust as the primary, for a live shadow.
                ca_cert: args.style.live.ca_cert.clone().filter(|_| {
                    matches!(
                        style_name,
                        crate::args::StyleName::SystemOne | crate::args::StyleName::Llm
                    )
                }),
                ..LiveArgs::default()
            },
            ..StyleArgs::default()
        };
        let (spec, _, _) = style::spec(&style_args, Fallback::SystemOne)
            .map_err(|e| exit::usage(format!("--shadow-style: {e}")))?;
        let shared = Arc::new(Shared {
            file: Mutex::new(None),
            lines: Mutex::new(HashMap::new()),
            min_shift: args.shadow_min_shift,
            disagreements: AtomicU64::new(0),
            rows: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            write_failed: AtomicU64::new(0),
            first_write_error: Mutex::new(None),
        });
        let sink = Arc::clone(&shared);
        // Generous: a sampled call past the bound is dropped (counted), never queued.
        let bound = (args.concurrency as usize * 4).max(64);
        let options = ShadowOptions::new(1.0)
            .with_max_in_flight(bound)
            .with_on_disagreement(move |d| sink.report(d));
        let stats = options.stats.clone();
        Ok(Some((
            ShadowSpec::new(spec, options),
            Shadow {
                path: path.clone(),
                stats,
                shared,
                name: format!("--shadow-style {}", style_name.as_str()),
                bound,
            },
        )))
    }

    /// Opens (truncates) `--shadow-out` and learns the lines this run asks
    /// (`pending`, read through once: the shadow holds every pending state's
    /// canonical JSON to match its calls to lines); `model` is what the
    /// shadow's stack asks for, as its report names it.
    pub fn open(
        &mut self,
        pending: impl Iterator<Item = toolnexus_table::Row>,
        model: Option<&str>,
    ) -> Result<()> {
        if let Some(model) = model {
            self.name = format!("{} ({model})", self.name);
        }
        let mut lines: HashMap<String, VecDeque<usize>> = HashMap::new();
        for row in pending {
            if let Ok(state) = row.state {
                let key = canonical_json(&state);
                lines.entry(key).or_default().push_back(row.n);
            }
        }
        let file = File::create(&self.path).map_err(|e| {
            exit::io(format!(
                "--shadow-out {}: cannot write: {e}",
                self.path.display()
            ))
        })?;
        if let (Ok(mut f), Ok(mut l)) = (self.shared.file.lock(), self.shared.lines.lock()) {
            *f = Some(file);
            *l = lines;
        }
        Ok(())
    }

    /// Waits for the shadow calls in flight, writes the summary line and
    /// says what the shadow found, with the number of states it did not ask
    /// because it was busy (for the run's summary); an error when the file
    /// could not be written.
    pub async fn finish(self, wait: bool) -> Result<(String, u64)> {
        if wait {
            self.stats.idle().await;
        }
        let s = &self.stats;
        let sh = &self.shared;
        let (disagreements, rows, failed) = (
            sh.disagreements.load(Ordering::SeqCst),
            sh.rows.load(Ordering::SeqCst),
            sh.failed.load(Ordering::SeqCst),
        );
        sh.write(&json!({"summary": {
            "shadow": self.name,
            "compared": s.compared(),
            "states_disagreeing": rows,
            "disagreements": disagreements,
            "shadow_failed": failed,
            "not_mirrored": s.dropped(),
            "min_shift": sh.min_shift,
        }}));
        if let Ok(f) = sh.file.lock()
            && let Some(f) = f.as_ref()
        {
            let _ = f.sync_all();
        }
        let shown = self.path.display();
        if sh.write_failed.load(Ordering::SeqCst) > 0 {
            let cause = sh
                .first_write_error
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_default();
            return Err(exit::io(format!(
                "--shadow-out {shown}: cannot write: {cause}"
            )));
        }
        let dropped = match s.dropped() {
            0 => String::new(),
            n => format!(
                ", {n} not asked (the shadow was busy: more than {} calls in flight)",
                self.bound
            ),
        };
        Ok((
            format!(
                "batch: shadow {}: compared {}, {rows} disagreeing ({disagreements} answers), {failed} failed{dropped}; in {shown}",
                self.name,
                s.compared()
            ),
            s.dropped(),
        ))
    }

    /// The shadow's file, which no other output may be.
    pub fn path(args: &BatchArgs) -> Option<&Path> {
        args.shadow_out.as_deref()
    }
}
