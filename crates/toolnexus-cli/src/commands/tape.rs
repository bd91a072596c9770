//! `toolnexus tape record | replay | show`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus::classifier::{
    Classifier, ClassifierError, Decision, EvalContext, Questions, canonical_json, questions_wire,
};
use toolnexus::judge::{
    Journal, JournalError, TAPE_FORMAT, TAPE_VERSION, Tape, TapeEntry, TapeMatch, TapeOutcome,
};

use crate::args::{RecordArgs, ReplayArgs, ShowArgs, StyleArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};
use crate::{demo, input, render};

/// A tape error after `--tape `: its text without the leading `tape: `, which
/// would say "tape" twice.
fn tape_error(e: &toolnexus::judge::TapeError) -> String {
    let text = e.to_string();
    text.strip_prefix("tape: ").unwrap_or(&text).to_string()
}

/// `"1 state"`, `"2 states"`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `tape record`: evaluates live, at most `--concurrency` calls at a time,
/// and saves the tape atomically. An existing tape is added to; states it
/// already holds under the call name and questions are skipped (with
/// `--rerun-errors`, recorded failures are asked again and replaced).
/// Failures are recorded as data.
///
/// Invariants:
/// - Every finished call is appended to the journal (`FILE.journal`) in one
///   write and flushed to disk before anything else happens with it, so a
///   kill loses at most the calls in flight.
/// - A run first folds a journal left by an earlier run into the tape; the
///   journal is removed only once the tape holding its entries is saved.
/// - Ctrl-C or SIGTERM starts no new call, lets those in flight finish (a
///   second signal abandons them), saves and exits 130.
/// - A reached `--max-cost`/`--max-tokens`/`--max-time` cap starts no new
///   call either; a call it refused was not sent and is not recorded; the
///   tape is saved and the run exits 6.
pub async fn record(args: RecordArgs) -> Result<Exit> {
    // Before anything is asked, so no signal between here and the end is lost.
    let mut signals = crate::signals::Signals::new("tape record")?;
    let style = args.live.style.unwrap_or(StyleName::SystemOne);
    let questions = Arc::new(input::read_questions(&args.questions)?);
    let states: Vec<(String, Value)> = match (&args.state, &args.states) {
        (Some(s), _) => vec![("--state".to_string(), input::read_json_arg("--state", s)?)],
        (None, Some(path)) => {
            let (states, _) = input::open_states(path, Default::default())?;
            let (rows, failure) = states.reader().map_err(input::states_error)?.rows();
            let bad = |e: String| exit::usage(format!("--states {}: {e}", path.display()));
            let read = rows.map(|r| r.state.map(|v| (format!("line {}", r.n), v)).map_err(bad));
            let read = read.collect::<Result<_>>()?;
            failure
                .take()
                .map_or(Ok(read), |e| Err(input::states_error(e)))?
        }
        (None, None) => return Err(exit::usage("--state or --states is required")),
    };
    // No style and no key: the one no-key line, nothing sent.
    if args.live.style.is_none() && !style::key_is_set(&style::key_env(&args.live)) {
        return Err(exit::usage(style::no_key_line(&args.live, None)));
    }
    // --prices (or TOOLNEXUS_PRICES) over the built-in table prices what a cap counts.
    let mut live_args = crate::args::StyleArgs {
        live: args.live.clone(),
        ..Default::default()
    };
    live_args.live.style = Some(style);
    let mut built = style::build_with(
        &live_args,
        style::Fallback::SystemOne,
        &style::Layers {
            prices: Some(&args.prices),
            caps: Some(&args.caps),
            ..Default::default()
        },
    )?;
    let (live, budget) = (built.classifier.clone(), built.budget.take());
    let capped = || budget.as_ref().is_some_and(|b| b.reached().is_some());
    // The journal is locked before the tape is read: a second run on the same
    // tape stops here instead of saving over the first one's recordings.
    let mut journal = Journal::open(&args.tape).map_err(journal_failed)?;
    let tape = if args.tape.exists() {
        match Tape::load(&args.tape) {
            Ok(t) => t,
            Err(e) => {
                journal.discard_if_new();
                return Err(exit::usage(format!("--tape {}", tape_error(&e))));
            }
        }
    } else {
        Tape::new()
    };
    let folded = journal.fold().map_err(journal_failed)?;
    if folded.torn > 0 {
        tell!(
            "tape record: dropped a torn final line ({}) from {} left by an interrupted run; its call is asked again",
            count(folded.torn, "byte", "bytes"),
            journal.path().display()
        );
    }
    if !folded.entries.is_empty() {
        tell!(
            "tape record: folded {} left in {} by an interrupted run into the tape",
            count(folded.entries.len(), "recording", "recordings"),
            journal.path().display()
        );
    }
    if let Some(note) = &args.note {
        tape.set_note(note.clone());
    }

    let mut plan = plan(
        &tape,
        &folded.entries,
        &args.call,
        &questions,
        states,
        args.rerun_errors,
    );
    // A cap holds for the job: what the recordings already made spent counts.
    toolnexus_stack::carry(budget.as_ref(), std::mem::take(&mut plan.spent));
    // This run's recordings, folded ones first, in the order they arrived.
    let mut arrived: Vec<TapeEntry> = folded.entries;
    if plan.skipped > 0 {
        let failures = match plan.failed_before {
            0 => String::new(),
            1 => "; 1 of them is a recorded failure (--rerun-errors asks it again)".to_string(),
            n => format!("; {n} of them are recorded failures (--rerun-errors asks them again)"),
        };
        tell!(
            "tape record: skipped {} already recorded under call {:?} with these questions{failures}",
            count(plan.skipped, "state", "states"),
            args.call
        );
    }
    if plan.repeated > 0 {
        tell!(
            "tape record: {} of --states repeated an earlier one: asked once",
            count(plan.repeated, "line", "lines")
        );
    }

    let total = plan.pending.len();
    let mut queue = plan.pending.into_iter().peekable();
    let mut tasks = tokio::task::JoinSet::new();
    let limit = args.concurrency.max(1) as usize;
    let (mut asked, mut failed, mut signalled) = (0usize, 0usize, 0u32);
    let mut journal_error: Option<std::io::Error> = None;
    loop {
        let launch = signalled == 0 && journal_error.is_none() && tasks.len() < limit && !capped();
        let launch = launch && queue.peek().is_some();
        if !launch && tasks.is_empty() {
            break;
        }
        tokio::select! {
            biased;
            () = signals.recv() => {
                signalled += 1;
                if signalled == 1 {
                    tell!(
                        "tape record: interrupted: starting no new call; finishing {} in flight (a second Ctrl-C abandons them)",
                        count(tasks.len(), "call", "calls")
                    );
                } else {
                    tell!(
                        "tape record: abandoning {} in flight",
                        count(tasks.len(), "call", "calls")
                    );
                    tasks.abort_all();
                }
            }
            () = std::future::ready(()), if launch => {
                if let Some((what, state)) = queue.next() {
                    tasks.spawn(ask(live.clone(), args.call.clone(), questions.clone(), what, state));
                }
            }
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                let (what, one, result) = match joined {
                    Ok(done) => done,
                    Err(e) if e.is_panic() => {
                        failed += 1;
                        tell!("tape record: a call ended in an internal error; the next run asks its state again");
                        continue;
                    }
                    Err(_) => continue, // abandoned after a second signal: nothing was recorded
                };
                if let Err(e) = &result
                    && e.is_cap_reached()
                {
                    continue; // refused by a cap: not sent, not recorded
                }
                asked += 1;
                // The journal first: once the line is on disk the recording survives a kill.
                if journal_error.is_none()
                    && !one.is_empty()
                    && let Err(e) = journal.append(&one)
                {
                    tell!(
                        "tape record: cannot write {}: {e}; starting no new call",
                        journal.path().display()
                    );
                    journal_error = Some(e);
                }
                arrived.extend(one.entries());
                match result {
                    Ok(d) => say!("recorded {what}: decision from {}", d.model),
                    Err(e) if one.is_empty() => {
                        failed += 1;
                        say!("{what}: failed, not recorded: {e}");
                    }
                    Err(e) => {
                        failed += 1;
                        say!("recorded {what}: failure: {e}");
                    }
                }
            }
        }
    }

    let new = put_in_order(&tape, arrived, &args.call, &plan.order);
    tape.save(&args.tape).map_err(|e| {
        exit::io(format!(
            "--tape {} (the recordings of this run stay in {}; rerun to fold them in)",
            tape_error(&e),
            journal.path().display()
        ))
    })?;
    if let Some(e) = journal_error {
        return Err(exit::io(format!(
            "--tape {}: cannot write its journal {}: {e} (the tape is saved with {} of this run; rerun to record the rest)",
            args.tape.display(),
            journal.path().display(),
            count(asked, "call", "calls")
        )));
    }
    journal.remove().map_err(journal_failed)?;
    let left = total - asked;
    let summary = format!(
        "tape record: saved {} to {} ({} new, {} recorded, {} skipped as already recorded)",
        count(tape.len(), "entry", "entries"),
        args.tape.display(),
        new,
        count(failed, "failure", "failures"),
        count(plan.skipped, "state", "states"),
    );
    if signalled > 0 {
        say!("{summary}");
        tell!(
            "tape record: interrupted with {} not asked; rerun the same command to record them",
            count(left, "state", "states")
        );
        return Ok(Exit::Interrupted);
    }
    say!("{summary}");
    if let Some(b) = budget.as_ref().filter(|_| left > 0 && capped()) {
        let done = format!("{} not asked", count(left, "state", "states"));
        tell!(
            "{}",
            crate::caps::message("tape record", b, &args.caps, &done)
        );
        return Ok(Exit::CapReached);
    }
    Ok(if failed + plan.failed_before > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// One call through a recorder of its own: the tape it returns holds exactly
/// the entry the library records for the call (none when it was refused or
/// cancelled before the live classifier answered).
async fn ask(
    live: Classifier,
    call: String,
    questions: Arc<Questions>,
    what: String,
    state: Value,
) -> (String, Tape, Result<Decision, ClassifierError>) {
    let one = Tape::new();
    let ctx = EvalContext::new().with_call_name(call);
    let result = one
        .recorder(live)
        .evaluate_ctx(ctx, state, &questions)
        .await;
    (what, one, result)
}

/// Records this run's entries into the tape in the order of `--states`
/// (`order`: their keys under `call`), whatever order the calls finished in, so the
/// recording order [`TapeMatch::Sequence`] replays, and the file's bytes, do
/// not depend on `--concurrency`; entries of other states (a journal of an
/// earlier run over other states) follow in the order they arrived. Returns how
/// many entries are new on the tape.
fn put_in_order(tape: &Tape, arrived: Vec<TapeEntry>, call: &str, order: &[String]) -> usize {
    let before = tape.len();
    let mut by_key: HashMap<(String, String), TapeEntry> = HashMap::new();
    let mut first_seen = Vec::new();
    for e in arrived {
        let key = (e.call_name.clone(), entry_key(&e.questions, &e.state));
        if by_key.insert(key.clone(), e).is_none() {
            first_seen.push(key);
        }
    }
    for key in order {
        if let Some(e) = by_key.remove(&(call.to_string(), key.clone())) {
            tape.record(e);
        }
    }
    for key in first_seen {
        if let Some(e) = by_key.remove(&key) {
            tape.record(e);
        }
    }
    tape.len() - before
}

/// What a run asks: the states not yet on the tape.
struct Plan {
    /// The keys of every state of the run, in `--states` order, once each.
    order: Vec<String>,
    pending: Vec<(String, Value)>,
    /// States already recorded under the call name and questions.
    skipped: usize,
    /// Of those, recorded failures (not asked again without `--rerun-errors`).
    failed_before: usize,
    /// States equal to an earlier one of the same run.
    repeated: usize,
    /// The usage of the states already recorded under the call name and
    /// questions (the tape and a folded journal): what earlier runs of this
    /// job spent, counted against its caps.
    spent: Vec<(
        toolnexus::cost::Cost,
        toolnexus::classifier::ClassifierUsage,
    )>,
}

/// An entry's identity within a call name: canonical questions and state (the
/// tape's own key, so "already recorded" means what replay means).
fn entry_key(questions: &Questions, state: &Value) -> String {
    let mut key = canonical_json(&questions_wire(questions));
    key.push('\n');
    key.push_str(&canonical_json(state));
    key
}

fn plan(
    tape: &Tape,
    folded: &[TapeEntry],
    call: &str,
    questions: &Questions,
    states: Vec<(String, Value)>,
    rerun_errors: bool,
) -> Plan {
    let entries = tape.call_entries(call);
    let recorded: HashMap<String, &TapeOutcome> = entries
        .iter()
        .chain(folded.iter().filter(|e| e.call_name == call))
        .map(|e| (entry_key(&e.questions, &e.state), &e.outcome))
        .collect();
    let mut seen = HashSet::new();
    let mut plan = Plan {
        order: Vec::new(),
        pending: Vec::new(),
        skipped: 0,
        failed_before: 0,
        repeated: 0,
        spent: Vec::new(),
    };
    for (what, state) in states {
        let key = entry_key(questions, &state);
        match recorded.get(&key) {
            _ if !seen.insert(key.clone()) => {
                plan.repeated += 1;
                continue;
            }
            Some(TapeOutcome::Decision(d)) => {
                plan.skipped += 1;
                // Recorded by an earlier run of this job: what it spent.
                plan.spent
                    .push((toolnexus::cost::Cost::of_usage(&d.usage), d.usage.clone()));
            }
            Some(TapeOutcome::Failure { .. }) if !rerun_errors => {
                plan.skipped += 1;
                plan.failed_before += 1;
            }
            _ => plan.pending.push((what, state)),
        }
        plan.order.push(key);
    }
    plan
}

/// A journal's failure as the command says it: one that concerns the tape
/// (opening, locking, reading, writing its journal) after `--tape`.
fn journal_failed(e: JournalError) -> anyhow::Error {
    let text = match &e {
        JournalError::NotAFile { .. } | JournalError::Locked { .. } => format!("--tape {e}"),
        JournalError::Io { .. } | JournalError::Replaced { .. } => format!("--tape: {e}"),
        _ => e.to_string(),
    };
    if e.is_io() {
        exit::io(text)
    } else {
        exit::usage(text)
    }
}

/// `tape replay`: one given state, or every recorded entry of the call (in
/// recording order), matched as `--match` says. Without `--call`, the built-in
/// demo tape and a user's tape are read the same way: a tape with one call
/// name replays it; with several, every call is replayed in turn (or, for one
/// given state, `--call` is required).
pub async fn replay(args: ReplayArgs) -> Result<Exit> {
    let mut calls = Vec::new();
    if args.call.is_none() {
        let (tape, label) = style::load_tape(args.tape.as_deref())?;
        calls = tape.call_names();
        if calls.len() > 1 && args.questions.is_some() {
            return Err(exit::usage(format!(
                "--call is required with --state: {label} has calls {}",
                demo::names(&calls)
            )));
        }
    }
    let mut style_args = StyleArgs {
        tape: args.tape.clone(),
        call: args.call.clone().or_else(|| calls.first().cloned()),
        tape_match: args.tape_match,
        ..Default::default()
    };
    style_args.live.style = Some(StyleName::Tape);
    let built = style::build(&style_args, Fallback::SystemOne)?;
    let (tape, label) = built
        .tape
        .clone()
        .ok_or_else(|| anyhow::anyhow!("tape style without a tape"))?;
    if calls.is_empty() {
        calls = vec![built.call.clone()];
    }

    let cases: Vec<(usize, String, Questions, Value)> = match (&args.questions, &args.state) {
        (Some(q), Some(s)) => vec![(
            0,
            built.call.clone(),
            input::read_questions(q)?,
            input::read_json_arg("--state", s)?,
        )],
        // Recording order, so `--match sequence` replays each entry in its place.
        _ => calls
            .iter()
            .flat_map(|call| {
                tape.call_entries(call)
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| (i, call.clone(), e.questions, e.state))
            })
            .collect(),
    };
    let mut decisions = Vec::new();
    let mut failed = 0;
    for (n, (i, call, questions, state)) in cases.into_iter().enumerate() {
        let ctx = EvalContext::new().with_call_name(call.clone());
        let shown = render::compact(&state, 100);
        let result = built.classifier.evaluate_ctx(ctx, state, &questions).await;
        if args.json {
            decisions.push(match &result {
                Ok(d) => json!({"decision": d.to_value()}),
                Err(e) => json!({"error": e.to_string()}),
            });
            if result.is_err() {
                failed += 1;
            }
            continue;
        }
        if n > 0 {
            say!();
        }
        say!("call {call:?} entry {i}: state {shown}");
        match result {
            Ok(d) => put!("{}", render::decision_table(&d)),
            Err(e) => {
                failed += 1;
                say!("error: {e}");
            }
        }
    }
    if args.json {
        say!("{}", render::pretty(&Value::Array(decisions)));
    } else {
        let mode = match args.tape_match {
            Some(m) if m != TapeMatch::Exact => format!(" (--match {m})"),
            _ => String::new(),
        };
        let which = match calls.as_slice() {
            [one] => format!("call {one:?}"),
            many => format!("calls {}", demo::names(many)),
        };
        say!("\nreplayed offline from {label}, {which}{mode}: {failed} failed");
    }
    if failed > 0 && args.questions.is_some() {
        return Err(exit::eval(format!(
            "{label} has no decision for this state under call {:?}",
            built.call
        )));
    }
    Ok(if failed > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// `tape show`: version, note, call names and entry counts.
pub fn show(args: ShowArgs) -> Result<Exit> {
    let (tape, label) = style::load_tape(args.file.as_deref()).map_err(|e| {
        // A positional file reads better without the flag name.
        let text = format!("{e:#}");
        exit::usage(text.strip_prefix("--tape: ").unwrap_or(&text))
    })?;
    #[derive(Default)]
    struct Counts {
        decisions: usize,
        failures: usize,
    }
    let mut calls: BTreeMap<String, Counts> = BTreeMap::new();
    let mut models = std::collections::BTreeSet::new();
    for e in tape.entries() {
        models.insert(e.model.clone());
        let c = calls.entry(e.call_name.clone()).or_default();
        match e.outcome {
            TapeOutcome::Decision(_) => c.decisions += 1,
            TapeOutcome::Failure { .. } => c.failures += 1,
        }
    }
    if args.json {
        let v = json!({
            "source": label,
            "format": TAPE_FORMAT,
            "version": TAPE_VERSION,
            "note": tape.note(),
            "entries": tape.len(),
            "models": models,
            "calls": calls.iter().map(|(name, c)| (name.clone(), json!({
                "entries": c.decisions + c.failures,
                "decisions": c.decisions,
                "failures": c.failures,
            }))).collect::<serde_json::Map<_, _>>(),
        });
        say!("{}", render::pretty(&v));
        return Ok(Exit::Success);
    }
    let (d, f) = calls
        .values()
        .fold((0, 0), |(d, f), c| (d + c.decisions, f + c.failures));
    // The label reads "tape FILE" in sentences; here the row already says tape.
    let source = label.strip_prefix("tape ").unwrap_or(&label);
    say!("tape      {source}");
    say!("format    {TAPE_FORMAT}, version {TAPE_VERSION}");
    say!(
        "note      {}",
        if tape.note().is_empty() {
            "(none)".to_string()
        } else {
            tape.note()
        }
    );
    say!(
        "entries   {} ({}, {})",
        tape.len(),
        count(d, "decision", "decisions"),
        count(f, "failure", "failures")
    );
    say!(
        "models    {}",
        demo::names(&models.into_iter().collect::<Vec<_>>())
    );
    say!("calls     {}", calls.len());
    let width = calls.keys().map(String::len).max().unwrap_or(0);
    for (name, c) in &calls {
        say!(
            "  {name:<width$}  {} ({}, {})",
            count(c.decisions + c.failures, "entry", "entries"),
            count(c.decisions, "decision", "decisions"),
            count(c.failures, "failure", "failures")
        );
    }
    Ok(Exit::Success)
}
