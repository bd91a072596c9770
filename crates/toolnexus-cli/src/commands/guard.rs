//! `toolnexus guard`: a Claude Code PreToolUse hook judged by a guard policy
//! (SPEC §18), on the `toolnexus_guard` engine.
//!
//! One hook input on stdin, one answer on stdout, exit 0. This file reads the
//! hook and answers it; the policy, its rules and cuts, the judge and the log
//! are the engine's. Every failure — bad input, no model, a judge slower than
//! the budget, a panic — is answered with the policy's `on_error` permission
//! (ask or deny, never allow) and says why.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Instant;

use anyhow::Result;
use serde_json::{Value, json};
use toolnexus_guard::{
    Guard, JudgeSource, LabelledCall, Permission, Policy, PolicyError, ToolCall, log,
};

use crate::args::{
    CheckPolicyArgs, GuardArgs, GuardExplainArgs, GuardJudgeArgs, GuardLogArgs, GuardTestArgs,
};
use crate::exit::{self, Exit};

/// The permission any failure gets before a policy is read (ask), then the
/// policy's: read by the panic hook, which has nothing else to go by.
static ON_ERROR: AtomicU8 = AtomicU8::new(1);

fn on_error_now() -> Permission {
    match ON_ERROR.load(Ordering::Relaxed) {
        2 => Permission::Deny,
        _ => Permission::Ask,
    }
}

/// The policy at `path` (`None`: the built-in one), its warnings said on stderr.
fn load_policy(path: Option<&Path>) -> Result<Policy> {
    let policy = match path {
        Some(p) => Policy::load(p).map_err(|e| policy_error(p, &e))?,
        None => Policy::builtin().map_err(|e| exit::usage(format!("the built-in policy: {e}")))?,
    };
    for w in &policy.warnings {
        tell!("warning: {w}");
    }
    Ok(policy)
}

/// The guard the judge flags describe: the policy loaded now, the judge
/// built on the first call that needs it.
fn load(judge: &GuardJudgeArgs) -> Result<Guard> {
    let policy = load_policy(judge.policy.as_deref())?;
    let source = crate::style::guard_judge(&judge.style, judge.server.as_deref())?;
    Ok(Guard::new(policy, fault(source)))
}

/// In debug builds, `TOOLNEXUS_GUARD_FAULT=hang` makes the judge a build that
/// never ends, as a forward pass over a huge call can be: only the budget
/// ends the wait, and the process must still exit then.
#[cfg(debug_assertions)]
fn fault(source: JudgeSource) -> JudgeSource {
    if std::env::var_os("TOOLNEXUS_GUARD_FAULT").is_some_and(|v| v == "hang") {
        return JudgeSource::supplied(|| {
            loop {
                std::thread::park();
            }
        });
    }
    source
}

#[cfg(not(debug_assertions))]
fn fault(source: JudgeSource) -> JudgeSource {
    source
}

fn policy_error(path: &Path, e: &PolicyError) -> anyhow::Error {
    exit::usage(format!("policy {}: {e}", path.display()))
}

/// The hook's answer for a permission.
fn hook_output(permission: Permission, reason: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": permission.as_str(),
            "permissionDecisionReason": reason,
        }
    })
    .to_string()
}

/// The largest hook input read; more is bad input.
const MAX_INPUT: u64 = 32 << 20;

/// A hook input read: the call, and the ids the log keeps.
struct Hook {
    call: ToolCall,
    session_id: Option<String>,
    tool_use_id: Option<String>,
}

/// Reads and checks one hook input.
fn read_hook(bytes: &[u8]) -> Result<Hook, String> {
    if bytes.len() as u64 > MAX_INPUT {
        return Err(format!("the hook input is over {} MiB", MAX_INPUT >> 20));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        format!(
            "the hook input is not UTF-8 (an invalid byte at offset {})",
            e.valid_up_to()
        )
    })?;
    if text.trim().is_empty() {
        return Err("no hook input on stdin (Claude Code sends the tool call as JSON)".into());
    }
    let v = crate::input::parse_json_text(crate::input::strip_bom(text))
        .map_err(|e| format!("the hook input is not JSON: {e}"))?;
    let Value::Object(o) = v else {
        return Err("the hook input is not a JSON object".into());
    };
    if let Some(event) = o.get("hook_event_name")
        && event.as_str() != Some("PreToolUse")
    {
        return Err(format!(
            "hook_event_name is {event}, not \"PreToolUse\": install the guard as a PreToolUse hook"
        ));
    }
    let id = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
    let (session_id, tool_use_id) = (id("session_id"), id("tool_use_id"));
    let call = ToolCall::from_object(o).map_err(|e| e.to_string())?;
    // Paths, the project policy and the outside-the-project check all read
    // the cwd: a call without one is not judged as if it had none.
    if call.cwd.is_none() {
        return Err("the hook input has no cwd (the directory the call runs in): paths and the project's policy cannot be read without it".into());
    }
    Ok(Hook {
        call,
        session_id,
        tool_use_id,
    })
}

/// Writes a log line; a log that cannot be written is said on stderr and
/// changes no verdict.
fn write_log(policy: &Policy, entry: log::Entry<'_>, started: Instant) {
    if let (Err(e), Some(spec)) = (log::write(policy, entry, started), &policy.log) {
        tell!(
            "toolnexus guard: the log {} could not be written: {e}",
            spec.path.display()
        );
    }
}

/// Prints the hook answer for a failure and leaves: the verdict any failure
/// gets, never allow.
fn fail_closed(why: &str) -> ! {
    let v = on_error_now();
    let reason = format!(
        "toolnexus guard: {0}: the call could not be judged ({why}); the policy's on_error is {0}",
        v.as_str()
    );
    say!("{}", hook_output(v, &reason));
    std::process::exit(0)
}

/// Runs `toolnexus guard` on one hook input from stdin.
pub async fn run(args: GuardArgs) -> Result<Exit> {
    // A panic anywhere below is answered, not crashed on: a crashed hook is a
    // non-blocking error, and the call would go through.
    std::panic::set_hook(Box::new(|info| {
        let what = crate::stdio::panic_text(info);
        tell!("toolnexus guard: internal error: {what}");
        fail_closed(&format!("internal error: {what}"));
    }));
    #[cfg(debug_assertions)]
    if std::env::var_os("TOOLNEXUS_GUARD_FAULT").is_some_and(|v| v == "panic") {
        panic!("fault injected by TOOLNEXUS_GUARD_FAULT");
    }

    let started = Instant::now();
    let mut bytes = Vec::new();
    {
        use std::io::Read;
        if let Err(e) = std::io::stdin()
            .lock()
            .take(MAX_INPUT + 1)
            .read_to_end(&mut bytes)
        {
            fail_closed(&format!("stdin could not be read: {e}"));
        }
    }
    // Bad usage of the command, not a call that cannot be judged: exit 2.
    crate::style::judge_precision(&args.judge.style)?;
    let guard = match load(&args.judge) {
        Ok(g) => g,
        Err(e) => fail_closed(&format!("{e:#}")),
    };
    let policy = guard.policy();
    let deny = policy.on_error == Permission::Deny;
    ON_ERROR.store(1 + u8::from(deny), Ordering::Relaxed);
    let hook = match read_hook(&bytes) {
        Ok(x) => x,
        Err(e) => {
            let entry = log::Entry::Unread {
                raw: &bytes,
                error: &e,
            };
            write_log(policy, entry, started);
            fail_closed(&e)
        }
    };
    let judgment = guard.judge(&hook.call).await;
    let printed =
        !judgment.skipped && (judgment.permission != Permission::Allow || policy.print_allow);
    if printed {
        say!("{}", hook_output(judgment.permission, &judgment.reason));
    }
    let entry = log::Entry::Judged {
        call: &hook.call,
        session_id: hook.session_id.as_deref(),
        tool_use_id: hook.tool_use_id.as_deref(),
        judgment: &judgment,
        printed,
    };
    write_log(policy, entry, started);
    // The answer is out and logged, and the process ends next: taking the
    // judge's model apart (its maps and buffers) would only delay the exit,
    // which returns all of it to the system at once.
    std::mem::forget(guard);
    Ok(Exit::Success)
}

/// Runs `toolnexus guard check-policy`.
pub fn check_policy(args: CheckPolicyArgs) -> Result<Exit> {
    match &args.file {
        None => {
            let p =
                Policy::builtin().map_err(|e| exit::usage(format!("the built-in policy: {e}")))?;
            say!("{}", crate::render::pretty(&p.effective));
        }
        Some(path) => {
            let p = load_policy(Some(path))?;
            p.check_rules().map_err(|e| policy_error(path, &e))?;
            say!(
                "policy {}: ok: {} questions ({}), {} rules, on_error {}, {} skipped tools, log {}{}",
                path.display(),
                p.questions.len(),
                p.questions.keys().cloned().collect::<Vec<_>>().join(", "),
                p.rules.len(),
                p.on_error.as_str(),
                p.skip_tools.len(),
                match &p.log {
                    Some(l) => l.path.display().to_string(),
                    None => "off".into(),
                },
                match &p.allowlist {
                    Some(a) => format!(
                        ", mode allowlist ({} commands, {} capabilities)",
                        a.commands.len(),
                        a.capabilities.len()
                    ),
                    None => String::new(),
                }
            );
        }
    }
    Ok(Exit::Success)
}

/// The labelled calls of `guard test`'s file.
fn read_examples(path: &Path) -> Result<Vec<LabelledCall>> {
    let text = crate::input::read_file("guard test", path)?;
    let mut out = Vec::new();
    for (n, line) in crate::input::jsonl_lines(crate::input::strip_bom(&text)) {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let at = |m: String| exit::usage(format!("{}:{n}: {m}", path.display()));
        let v = crate::input::parse_line(n, line)
            .map_err(|e| exit::usage(format!("{}: {e}", path.display())))?;
        let state = v
            .get("state")
            .and_then(Value::as_object)
            .ok_or_else(|| at("no \"state\" object {tool_name, tool_input, cwd}".into()))?;
        let call = ToolCall::from_object(state.clone()).map_err(|e| at(format!("state: {e}")))?;
        let label = v
            .get("labels")
            .and_then(|l| l.get("verdict"))
            .and_then(Value::as_str)
            .and_then(Permission::parse)
            .ok_or_else(|| at("no labels.verdict of allow, ask or deny".into()))?;
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("line {n}"));
        out.push(LabelledCall {
            line: n,
            id,
            call,
            label,
        });
    }
    if out.is_empty() {
        return Err(exit::usage(format!(
            "{}: no labelled calls",
            path.display()
        )));
    }
    Ok(out)
}

/// Runs `toolnexus guard test FILE`.
pub async fn test(args: GuardTestArgs) -> Result<Exit> {
    let examples = read_examples(&args.examples)?;
    let guard = Arc::new(load(&args.judge)?);
    let a = Guard::agreement(&guard, &examples, args.concurrency as usize).await;
    let shown = args.examples.display().to_string();
    if args.json {
        say!("{}", crate::render::pretty(&a.to_json(&shown)));
    } else {
        say!("{}", a.text(&shown));
    }
    Ok(if a.deny_allowed() > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

/// Runs `toolnexus guard explain`: one call judged, and why.
pub async fn explain(args: GuardExplainArgs) -> Result<Exit> {
    let call = match &args.command {
        Some(command) => {
            let cwd = match &args.cwd {
                Some(c) => std::path::absolute(c)
                    .map_err(|e| exit::usage(format!("--cwd {}: {e}", c.display())))?,
                None => std::env::current_dir()
                    .map_err(|e| exit::usage(format!("the current directory: {e}")))?,
            };
            ToolCall {
                tool_name: "Bash".into(),
                tool_input: json!({"command": command})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
                cwd: Some(cwd.display().to_string()),
            }
        }
        None => {
            let mut bytes = Vec::new();
            use std::io::Read;
            std::io::stdin()
                .lock()
                .take(MAX_INPUT + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| exit::usage(format!("stdin could not be read: {e}")))?;
            read_hook(&bytes).map_err(exit::usage)?.call
        }
    };
    let guard = load(&args.judge)?;
    let e = guard.explain(&call).await;
    let j = &e.judgment;
    if args.json {
        say!(
            "{}",
            crate::render::pretty(&json!({
                "tool_name": call.tool_name,
                "cwd": call.cwd,
                "reading": e.reading,
                "fired": e.fired,
                "project": e.project,
                "detail": j.detail,
                "verdict": j.permission.as_str(),
                "skipped": j.skipped,
                "reason": j.reason,
            }))
        );
        return Ok(Exit::Success);
    }
    say!("{}", e.text(&call));
    Ok(Exit::Success)
}

/// The log a `log`/`verify-log` command reads: FILE, or the policy's.
fn log_path(args: &GuardLogArgs) -> Result<std::path::PathBuf> {
    if let Some(f) = &args.file {
        return Ok(f.clone());
    }
    let policy = load_policy(args.policy.as_deref())?;
    match policy.log {
        Some(l) => Ok(l.path),
        None => Err(exit::usage(
            "the policy keeps no log: name the file (toolnexus guard log FILE)",
        )),
    }
}

/// Runs `toolnexus guard log`: the log summarised.
pub fn log_summary(args: GuardLogArgs) -> Result<Exit> {
    let path = log_path(&args)?;
    let s = log::summary(&path)
        .map_err(|e| exit::usage(format!("cannot read {}: {e}", path.display())))?;
    if args.json {
        say!(
            "{}",
            crate::render::pretty(&json!({
                "log": path.display().to_string(),
                "lines": s.lines,
                "unreadable": s.unreadable,
                "verdicts": s.verdicts,
                "errors": s.errors,
                "rules": s.rules.iter().map(|(id, n)| json!({"id": id, "calls": n})).collect::<Vec<_>>(),
                "p50_ms": s.p50_ms,
                "p99_ms": s.p99_ms,
            }))
        );
        return Ok(Exit::Success);
    }
    say!("{}", s.text(&path));
    Ok(Exit::Success)
}

/// Runs `toolnexus guard verify-log`: the log's hash chain checked.
pub fn verify_log(args: GuardLogArgs) -> Result<Exit> {
    let path = log_path(&args)?;
    match log::verify(&path) {
        Ok(v) => {
            if args.json {
                say!(
                    "{}",
                    json!({"log": path.display().to_string(), "ok": true, "lines": v.lines,
                           "chain_starts": v.chain_starts, "follows": v.follows})
                );
            } else {
                say!("{}: {v}", path.display());
            }
            Ok(Exit::Success)
        }
        Err(e @ log::Broken::Unreadable { .. }) => Err(exit::usage(e.to_string())),
        Err(e) => {
            if args.json {
                say!(
                    "{}",
                    json!({"log": path.display().to_string(), "ok": false, "line": e.line(), "error": e.to_string()})
                );
            } else {
                say!("{}: {e}", path.display());
            }
            Ok(Exit::Findings)
        }
    }
}
