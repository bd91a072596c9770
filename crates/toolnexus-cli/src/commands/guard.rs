//! `toolnexus guard`: a Claude Code PreToolUse hook judged by a guard policy
//! (SPEC §18).
//!
//! One hook input on stdin, one answer on stdout, exit 0. The verdict is the
//! strictest of the policy's hard rules and its questions' cuts; a rule that
//! denies settles the call without asking the judge. Every failure — bad
//! input, no model, a judge slower than the budget, a panic — is answered with
//! the policy's `on_error` verdict (ask or deny, never allow) and says why.

pub mod log;
mod needles;
pub mod policy;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::{Map, Value, json};
use tokio::sync::OnceCell;
use toolnexus::classifier::{
    Classifier, Decision, DecisionAnswer, EvalContext, Question, Questions,
};

use crate::args::{CheckPolicyArgs, GuardArgs, GuardJudgeArgs, GuardTestArgs, StyleArgs};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};
use policy::{Cut, Policy, PolicyError, Rule};

/// A tool call as the guard sees it.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool's name (`Bash`, `Write`, `mcp__server__tool`, …).
    pub tool_name: String,
    /// The tool's arguments.
    pub tool_input: Value,
    /// The agent's working directory, when known.
    pub cwd: Option<String>,
}

/// What the guard says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Let it run.
    Allow,
    /// Ask the person.
    Ask,
    /// Block it.
    Deny,
}

impl Verdict {
    /// The hook protocol's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }

    fn parse(s: &str) -> Option<Verdict> {
        match s {
            "allow" => Some(Verdict::Allow),
            "ask" => Some(Verdict::Ask),
            "deny" => Some(Verdict::Deny),
            _ => None,
        }
    }
}

/// The guard's answer about one call.
#[derive(Debug, Clone)]
pub struct Judgment {
    /// The strictest verdict across rules and questions (allow for a skipped tool).
    pub verdict: Verdict,
    /// One line: the rule or question(s) that decided, with their figures.
    pub reason: String,
    /// Everything else: per-question answers, matched rules, the judge used,
    /// an error; never the call's own text.
    pub detail: Value,
    /// The policy skips this tool: nothing was judged.
    pub skipped: bool,
}

/// A judge: a classifier built on first use, or why it could not be.
type Lazy = OnceCell<Result<(Classifier, String), String>>;

/// A policy and the judge it asks, ready for many calls.
pub struct Guard {
    policy: Policy,
    /// How the judge is built: the user's style flags, a server, or the built-in cascade.
    source: JudgeSource,
    judge: Lazy,
    /// With a server: the built-in judge, for when the server cannot be reached.
    fallback: Lazy,
}

#[derive(Clone)]
enum JudgeSource {
    Builtin(Option<PathBuf>),
    Style(Box<StyleArgs>),
    Server(String, Option<PathBuf>),
}

/// The verdict any failure gets before a policy is read (ask), then the policy's.
static ON_ERROR: AtomicU8 = AtomicU8::new(1);

fn on_error_now() -> Verdict {
    match ON_ERROR.load(Ordering::Relaxed) {
        2 => Verdict::Deny,
        _ => Verdict::Ask,
    }
}

impl Guard {
    /// Loads the policy (`None`: the built-in one) and says how its judge will
    /// be built: the named style, a warm server, or the built-in cascade. The
    /// judge itself is built on the first call that needs it.
    pub fn load(policy: Option<&Path>, style: &StyleArgs, server: Option<&str>) -> Result<Guard> {
        let policy = match policy {
            Some(p) => Policy::load(p).map_err(|e| policy_error(p, &e))?,
            None => {
                Policy::builtin().map_err(|e| exit::usage(format!("the built-in policy: {e}")))?
            }
        };
        let named = style.live.style.is_some() || style.tape.is_some() || style.cascade;
        let source = match (server, named) {
            (Some(_), true) => {
                return Err(exit::usage(
                    "--server asks a toolnexus serve; the style flags choose another judge: give one or the other",
                ));
            }
            (Some(url), false) => JudgeSource::Server(url.to_string(), style.model_dir.clone()),
            (None, true) => JudgeSource::Style(Box::new(style.clone())),
            (None, false) => JudgeSource::Builtin(style.model_dir.clone()),
        };
        Ok(Guard {
            policy,
            source,
            judge: OnceCell::new(),
            fallback: OnceCell::new(),
        })
    }

    /// Judges one call. Never fails: a failure is the policy's `on_error`
    /// verdict (or a stricter rule's), with the failure in the reason.
    pub async fn judge(&self, call: &ToolCall) -> Judgment {
        let started = Instant::now();
        let mut detail = Map::new();
        if self.policy.skip_tools.iter().any(|t| t == &call.tool_name) {
            detail.insert("skipped".into(), json!(true));
            return Judgment {
                verdict: Verdict::Allow,
                reason: format!(
                    "toolnexus guard: {} is skipped by the policy",
                    call.tool_name
                ),
                detail: Value::Object(detail),
                skipped: true,
            };
        }

        // Rules read the call as the judge does: hidden fields (Bash's
        // `description`, the agent's own account) are gone.
        let state = self.state(call);
        let seen = ToolCall {
            tool_name: call.tool_name.clone(),
            tool_input: state["tool_input"].clone(),
            cwd: call.cwd.clone(),
        };
        let whole = seen.tool_input.to_string();
        let hits: Vec<&Rule> = self
            .policy
            .rules
            .iter()
            .filter(|r| r.fires(&seen, &whole))
            .collect();
        let rule_verdict = hits
            .iter()
            .map(|r| r.verdict)
            .max()
            .unwrap_or(Verdict::Allow);
        detail.insert(
            "rules".into(),
            json!(hits.iter().map(|r| r.id.as_str()).collect::<Vec<_>>()),
        );

        // A rule as strict as any cut could be settles it: the judge could not
        // make the verdict stricter (with the built-in cuts, which only ask, a
        // rule that asks is enough).
        let asked = if rule_verdict >= self.policy.strictest_cut() {
            detail.insert(
                "judge".into(),
                json!(match rule_verdict {
                    Verdict::Deny => "not asked: a rule denies",
                    _ => "not asked: a rule asks, and no cut could deny",
                }),
            );
            None
        } else {
            let budget = Duration::from_millis(self.policy.budget_ms);
            Some(match tokio::time::timeout(budget, self.ask(state)).await {
                Ok(r) => r,
                Err(_) => Err(format!(
                    "the judge took longer than the policy's budget_ms ({} ms)",
                    self.policy.budget_ms
                )),
            })
        };

        let mut figures = Vec::new();
        let mut question_verdict = Verdict::Allow;
        let mut failure = None;
        match asked {
            None => {}
            Some(Ok((answers, model))) => {
                detail.insert("judge".into(), json!(model));
                let (v, f, shown) = self.read_answers(&answers);
                question_verdict = v;
                figures = f;
                detail.insert("answers".into(), shown);
            }
            Some(Err(e)) => {
                detail.insert("error".into(), json!(e));
                failure = Some(e);
            }
        }
        let error_verdict = if failure.is_some() {
            self.policy.on_error
        } else {
            Verdict::Allow
        };
        let verdict = rule_verdict.max(question_verdict).max(error_verdict);
        detail.insert(
            "latency_ms".into(),
            json!((started.elapsed().as_secs_f64() * 1e4).round() / 10.0),
        );

        let mut why = Vec::new();
        for r in hits.iter().filter(|r| r.verdict == verdict) {
            why.push(format!("rule {} ({})", r.id, r.why));
        }
        for (v, text) in &figures {
            if *v == verdict {
                why.push(text.clone());
            }
        }
        if let Some(e) = &failure
            && error_verdict == verdict
        {
            why.push(format!(
                "the call could not be judged ({e}); the policy's on_error is {}",
                self.policy.on_error.as_str()
            ));
        }
        let reason = match verdict {
            Verdict::Allow => {
                "toolnexus guard: allow: no rule matched and every question is under its cuts"
                    .to_string()
            }
            v => format!("toolnexus guard: {}: {}", v.as_str(), why.join("; ")),
        };
        Judgment {
            verdict,
            reason,
            detail: Value::Object(detail),
            skipped: false,
        }
    }

    /// What the judge sees: the tool, its arguments less the hidden fields, the cwd.
    fn state(&self, call: &ToolCall) -> Value {
        let mut input = call.tool_input.clone();
        if let Some(o) = input.as_object_mut() {
            for tool in [call.tool_name.as_str(), "*"] {
                for f in self.policy.hide_fields.get(tool).into_iter().flatten() {
                    o.shift_remove(f);
                }
            }
        }
        let mut state = Map::new();
        state.insert("tool_name".into(), json!(call.tool_name));
        state.insert("tool_input".into(), input);
        if let Some(cwd) = &call.cwd {
            state.insert("cwd".into(), json!(cwd));
        }
        Value::Object(state)
    }

    /// Asks the judge (and, when a server fails, the built-in one here).
    async fn ask(&self, state: Value) -> Result<(Decision, String), String> {
        #[cfg(debug_assertions)]
        if std::env::var_os("TOOLNEXUS_GUARD_FAULT").is_some_and(|v| v == "hang") {
            // A judge stuck in blocking work, as a forward pass over a huge
            // call is: only the budget ends the wait.
            let _ = tokio::task::spawn_blocking(|| {
                loop {
                    std::thread::park();
                }
            })
            .await;
        }
        let primary = self.judge.get_or_init(|| build(self.source.clone())).await;
        match (primary, &self.source) {
            (Ok((c, call)), JudgeSource::Server(url, dir)) => {
                match evaluate(c, call, state.clone(), &self.policy).await {
                    Ok(a) => Ok(a),
                    Err(e) => {
                        let local = self
                            .fallback
                            .get_or_init(|| build(JudgeSource::Builtin(dir.clone())))
                            .await;
                        let (c, call) = local.as_ref().map_err(|l| {
                            format!(
                                "the server at {url} failed ({e}), and so did the judge here ({l})"
                            )
                        })?;
                        let (answers, model) = evaluate(c, call, state, &self.policy).await?;
                        Ok((
                            answers,
                            format!("{model} (the server at {url} failed: {e})"),
                        ))
                    }
                }
            }
            (Ok((c, call)), _) => evaluate(c, call, state, &self.policy).await,
            (Err(e), _) => Err(e.clone()),
        }
    }

    /// The verdict of the questions' cuts, each firing cut's figure as text, and
    /// the answers as figures for the detail. The decision holds an answer of
    /// the right type, with finite numbers, for every question ([`complete`]).
    fn read_answers(&self, d: &Decision) -> (Verdict, Vec<(Verdict, String)>, Value) {
        let mut verdict = Verdict::Allow;
        let mut figures = Vec::new();
        let mut shown = Map::new();
        for (key, cuts) in &self.policy.cuts {
            let Some(a) = d.answers.get(key) else {
                continue;
            };
            let q = self.policy.questions.get(key);
            for (v, cut) in [(Verdict::Deny, &cuts.deny), (Verdict::Ask, &cuts.ask)] {
                let Some(cut) = cut else { continue };
                let (p, what) = measure(cut, a, q);
                shown.insert(format!("{key}{}", what.suffix), json!(round4(p)));
                let limit = cut_p(cut);
                if p >= limit {
                    figures.push((v, format!("{key}{} {:.2} ≥ {:.2}", what.label, p, limit)));
                    verdict = verdict.max(v);
                    break;
                }
            }
        }
        (verdict, figures, Value::Object(shown))
    }
}

fn round4(p: f64) -> f64 {
    (p * 1e4).round() / 1e4
}

fn cut_p(c: &Cut) -> f64 {
    match c {
        Cut::Noul(p) | Cut::AtLeast { p, .. } | Cut::AnyOf { p, .. } => *p,
    }
}

/// How a figure is named in a reason (`destructive`, `risk P(≥ high)`) and in the detail.
struct Named {
    label: String,
    suffix: String,
}

/// The probability a cut reads from one typed answer. An answer without the
/// distribution a cut needs counts its pick as certain; a distribution that
/// leaves mass unaccounted for (options or levels missing from it) counts that
/// mass toward the cut, so a partial answer can only make the verdict stricter.
fn measure(cut: &Cut, a: &DecisionAnswer, q: Option<&Question>) -> (f64, Named) {
    match cut {
        Cut::Noul(_) => (
            match a {
                DecisionAnswer::Noul(n) => n.noul,
                _ => 1.0,
            },
            Named {
                label: String::new(),
                suffix: String::new(),
            },
        ),
        Cut::AtLeast { at_least, .. } => {
            let name = match q {
                Some(Question::Score(s)) => s
                    .criteria
                    .get(*at_least)
                    .map(|c| policy::level_name(&policy::content_text(c)))
                    .unwrap_or_else(|| at_least.to_string()),
                _ => at_least.to_string(),
            };
            let p = match a {
                DecisionAnswer::Score(s) if s.probabilities.is_empty() => {
                    if s.score >= *at_least as f64 {
                        1.0
                    } else {
                        0.0
                    }
                }
                DecisionAnswer::Score(s) => with_unaccounted(
                    &s.probabilities,
                    s.probabilities
                        .iter()
                        .filter(|(k, _)| k.trim().parse::<usize>().is_ok_and(|i| i >= *at_least))
                        .map(|(_, v)| *v)
                        .sum(),
                ),
                _ => 1.0,
            };
            (
                p,
                Named {
                    label: format!(" P(≥ {name})"),
                    suffix: format!(" P(>={name})"),
                },
            )
        }
        Cut::AnyOf { options, .. } => {
            let p = match a {
                DecisionAnswer::Choice(c) if c.probabilities.is_empty() => {
                    if options.contains(&c.choice) {
                        1.0
                    } else {
                        0.0
                    }
                }
                DecisionAnswer::Choice(c) => with_unaccounted(
                    &c.probabilities,
                    options.iter().filter_map(|o| c.probabilities.get(o)).sum(),
                ),
                _ => 1.0,
            };
            let list = options.join("|");
            (
                p,
                Named {
                    label: format!(" P({list})"),
                    suffix: format!(" P({list})"),
                },
            )
        }
    }
}

/// `counted` plus the mass a distribution leaves unaccounted for, at most 1.
fn with_unaccounted(ps: &std::collections::BTreeMap<String, f64>, counted: f64) -> f64 {
    let total: f64 = ps.values().sum();
    (counted + (1.0 - total).max(0.0)).min(1.0)
}

/// Why a decision cannot be read for these questions, if it cannot: an
/// unanswered question, an answer of another type, a number that is not
/// finite. A partial answer is a failure (the policy's `on_error`), never a 0.
fn complete(d: &Decision, questions: &Questions) -> Result<(), String> {
    let missing: Vec<&str> = questions
        .keys()
        .filter(|k| !d.answers.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the judge {} gave no answer to {}",
            d.model,
            missing
                .iter()
                .map(|k| format!("{k:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for (key, a) in &d.answers {
        let Some(q) = questions.get(key) else {
            continue;
        };
        if a.answer_type() != q.kind() {
            return Err(format!(
                "the judge {} answered {key:?} as a {} question, not {}",
                d.model,
                a.answer_type(),
                q.kind()
            ));
        }
        let finite = match a {
            DecisionAnswer::Noul(n) => n.noul.is_finite(),
            DecisionAnswer::Choice(c) => c.probabilities.values().all(|p| p.is_finite()),
            DecisionAnswer::Score(s) => {
                s.score.is_finite() && s.probabilities.values().all(|p| p.is_finite())
            }
            DecisionAnswer::Box(_) => true,
        };
        if !finite {
            return Err(format!(
                "the judge {} answered {key:?} with a number that is not finite",
                d.model
            ));
        }
    }
    Ok(())
}

/// Builds a judge: a classifier and the call name it evaluates under.
async fn build(source: JudgeSource) -> Result<(Classifier, String), String> {
    // Loading a model reads files: off the async threads.
    tokio::task::spawn_blocking(move || build_now(source))
        .await
        .map_err(|e| format!("the judge could not be built: {e}"))?
}

fn build_now(source: JudgeSource) -> Result<(Classifier, String), String> {
    match source {
        JudgeSource::Builtin(dir) => {
            builtin_judge(dir.as_deref()).map(|c| (c, "guard".to_string()))
        }
        JudgeSource::Style(args) => style::build(&args, Fallback::SystemOne)
            .map(|b| (b.classifier, b.call))
            .map_err(|e| format!("{e:#}")),
        JudgeSource::Server(url, _) => {
            let base = url.trim_end_matches('/');
            let base = base.strip_suffix("/v1/systemone").unwrap_or(base);
            let base = if base.ends_with("/v1") {
                base.to_string()
            } else {
                format!("{base}/v1")
            };
            let mut args = StyleArgs::default();
            args.live.style = Some(crate::args::StyleName::SystemOne);
            args.live.base_url = Some(base);
            args.live.retries = Some(0);
            style::build(&args, Fallback::SystemOne)
                .map(|b| (b.classifier, b.call))
                .map_err(|e| format!("{e:#}"))
        }
    }
}

/// The built-in judge: the guard's student on the embedded model, in a cascade
/// in front of the zero-shot style (which answers only a request with a
/// question the student has no head for).
pub fn builtin_judge(model_dir: Option<&Path>) -> Result<Classifier, String> {
    let embedder = style::embedder(model_dir).map_err(|e| {
        format!("{e:#}").replace(
            "--model-dir: ",
            "the embedded model is not on this machine (run `toolnexus model fetch`): ",
        )
    })?;
    let student = builtin_student()?;
    let local = toolnexus_local::student::LocalStudent::new(embedder.clone(), student)
        .map_err(|e| format!("the built-in guard student: {e}"))?;
    let zero = toolnexus_local::zero_shot(embedder);
    let (c, _) = toolnexus_local::student::cascade(local, zero, Some(0.0));
    Ok(c)
}

/// How `--student` names the built-in guard student.
pub const BUILTIN_STUDENT: &str = "builtin:guard";

/// The built-in guard student (`--student builtin:guard`).
pub fn builtin_student() -> Result<toolnexus_local::student::Student, String> {
    toolnexus_local::student::Student::from_json(policy::GUARD_STUDENT, BUILTIN_STUDENT)
        .map_err(|e| format!("the built-in guard student: {e}"))
}

async fn evaluate(
    c: &Classifier,
    call: &str,
    state: Value,
    policy: &Policy,
) -> Result<(Decision, String), String> {
    let ctx = EvalContext::new().with_call_name(call.to_string());
    let d = c
        .evaluate_ctx(ctx, state, &policy.questions)
        .await
        .map_err(|e| e.to_string())?;
    complete(&d, &policy.questions)?;
    let model = d.model.clone();
    Ok((d, model))
}

fn policy_error(path: &Path, e: &PolicyError) -> anyhow::Error {
    exit::usage(format!("policy {}: {e}", path.display()))
}

/// The hook's answer for a verdict (`None`: print nothing).
fn hook_output(verdict: Verdict, reason: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": verdict.as_str(),
            "permissionDecisionReason": reason,
        }
    })
    .to_string()
}

/// The largest hook input read; more is bad input.
const MAX_INPUT: u64 = 32 << 20;

/// Reads and checks one hook input.
fn read_hook(bytes: &[u8]) -> Result<(ToolCall, Map<String, Value>), String> {
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
    let call = tool_call(&o)?;
    Ok((call, o))
}

/// A tool call from an object with `tool_name`, `tool_input` and optionally `cwd`.
pub fn tool_call(o: &Map<String, Value>) -> Result<ToolCall, String> {
    let tool_name = match o.get("tool_name") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(v) => return Err(format!("tool_name must be a tool's name, not {v}")),
        None => return Err("tool_name is missing".into()),
    };
    let tool_input = match o.get("tool_input") {
        Some(v @ Value::Object(_)) => v.clone(),
        Some(v) => {
            return Err(format!(
                "tool_input must be an object, not {}",
                crate::input::json_kind(v)
            ));
        }
        None => return Err("tool_input is missing".into()),
    };
    let cwd = match o.get("cwd") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => {
            return Err(format!(
                "cwd must be a path, not {}",
                crate::input::json_kind(v)
            ));
        }
    };
    Ok(ToolCall {
        tool_name,
        tool_input,
        cwd,
    })
}

/// Prints the hook answer for a failure and leaves: the verdict any failure
/// gets, never allow.
fn fail_closed(why: &str) -> ! {
    let v = on_error_now();
    say!(
        "{}",
        hook_output(
            v,
            &format!(
                "toolnexus guard: {}: the call could not be judged ({why}); the policy's on_error is {}",
                v.as_str(),
                v.as_str()
            )
        )
    );
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
    let guard = match Guard::load(
        args.judge.policy.as_deref(),
        &args.judge.style,
        args.judge.server.as_deref(),
    ) {
        Ok(g) => g,
        Err(e) => fail_closed(&format!("{e:#}")),
    };
    ON_ERROR.store(
        if guard.policy.on_error == Verdict::Deny {
            2
        } else {
            1
        },
        Ordering::Relaxed,
    );
    let (call, hook) = match read_hook(&bytes) {
        Ok(x) => x,
        Err(e) => {
            log::write(&guard.policy, None, &bytes, None, Some(&e), started);
            fail_closed(&e)
        }
    };
    let judgment = guard.judge(&call).await;
    let printed =
        !judgment.skipped && (judgment.verdict != Verdict::Allow || guard.policy.print_allow);
    if printed {
        say!("{}", hook_output(judgment.verdict, &judgment.reason));
    }
    log::write(
        &guard.policy,
        Some((&call, &hook)),
        &bytes,
        Some((&judgment, printed)),
        None,
        started,
    );
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
            let p = Policy::load(path).map_err(|e| policy_error(path, &e))?;
            p.check_rules().map_err(|e| policy_error(path, &e))?;
            say!(
                "policy {}: ok: {} questions ({}), {} rules, on_error {}, {} skipped tools, log {}",
                path.display(),
                p.questions.len(),
                p.questions.keys().cloned().collect::<Vec<_>>().join(", "),
                p.rules.len(),
                p.on_error.as_str(),
                p.skip_tools.len(),
                match &p.log {
                    Some(l) => l.path.display().to_string(),
                    None => "off".into(),
                }
            );
        }
    }
    Ok(Exit::Success)
}

/// One labelled call of `guard test`.
struct Example {
    line: usize,
    id: String,
    call: ToolCall,
    label: Verdict,
}

fn read_examples(path: &Path) -> Result<Vec<Example>> {
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
        let call = tool_call(state).map_err(|e| at(format!("state: {e}")))?;
        let label = v
            .get("labels")
            .and_then(|l| l.get("verdict"))
            .and_then(Value::as_str)
            .and_then(Verdict::parse)
            .ok_or_else(|| at("no labels.verdict of allow, ask or deny".into()))?;
        let id = v
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("line {n}"));
        out.push(Example {
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
    let GuardJudgeArgs {
        policy,
        server,
        style,
    } = &args.judge;
    let guard = Arc::new(Guard::load(policy.as_deref(), style, server.as_deref())?);
    use futures::StreamExt;
    let results: Vec<(usize, Judgment)> = futures::stream::iter(examples.iter().enumerate())
        .map(|(i, e)| {
            let g = guard.clone();
            let call = e.call.clone();
            async move { (i, g.judge(&call).await) }
        })
        .buffer_unordered(args.concurrency as usize)
        .collect()
        .await;
    let mut judged: Vec<Option<Judgment>> = vec![None; examples.len()];
    for (i, j) in results {
        judged[i] = Some(j);
    }

    let order = [Verdict::Allow, Verdict::Ask, Verdict::Deny];
    let mut confusion = [[0usize; 3]; 3];
    let mut misses = Vec::new();
    let mut errors = 0;
    for (e, j) in examples.iter().zip(judged.iter().flatten()) {
        let got = if j.skipped { Verdict::Allow } else { j.verdict };
        confusion[e.label as usize][got as usize] += 1;
        if j.detail.get("error").is_some() {
            errors += 1;
        }
        if got != e.label {
            misses.push(json!({
                "id": e.id, "line": e.line, "tool_name": e.call.tool_name,
                "label": e.label.as_str(), "verdict": got.as_str(), "reason": j.reason,
            }));
        }
    }
    let n = examples.len();
    let right: usize = (0..3).map(|i| confusion[i][i]).sum();
    let deny_allowed = confusion[2][0];
    let accuracy = right as f64 / n as f64;
    let judge = judged
        .iter()
        .flatten()
        .find_map(|j| {
            j.detail
                .get("judge")
                .and_then(Value::as_str)
                .filter(|s| !s.starts_with("not asked"))
        })
        .unwrap_or("none asked")
        .to_string();
    if args.json {
        let report = json!({
            "examples": args.examples.display().to_string(),
            "rows": n,
            "accuracy": round4(accuracy),
            "deny_allowed": deny_allowed,
            "errors": errors,
            "judge": judge,
            "confusion": order.iter().map(|l| {
                (l.as_str().to_string(), json!(order.iter().map(|g| (g.as_str().to_string(), json!(confusion[*l as usize][*g as usize]))).collect::<Map<_, _>>()))
            }).collect::<Map<_, _>>(),
            "misses": misses,
        });
        say!("{}", crate::render::pretty(&report));
    } else {
        say!(
            "{}: {n} calls; verdict accuracy {:.1}% ({right}/{n}); labelled deny but allowed: {deny_allowed}; judge: {judge}{}",
            args.examples.display(),
            accuracy * 100.0,
            if errors > 0 {
                format!("; {errors} calls could not be judged (on_error)")
            } else {
                String::new()
            }
        );
        say!("");
        say!("label \\ verdict   allow    ask   deny");
        for l in order {
            say!(
                "{:<17} {:>5}  {:>5}  {:>5}",
                l.as_str(),
                confusion[l as usize][0],
                confusion[l as usize][1],
                confusion[l as usize][2]
            );
        }
        if !misses.is_empty() {
            say!("");
            say!("misses:");
            for m in &misses {
                say!(
                    "  {} ({}): labelled {}, got {} — {}",
                    m["id"].as_str().unwrap_or(""),
                    m["tool_name"].as_str().unwrap_or(""),
                    m["label"].as_str().unwrap_or(""),
                    m["verdict"].as_str().unwrap_or(""),
                    m["reason"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(if deny_allowed > 0 {
        Exit::Eval
    } else {
        Exit::Success
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decision(answers: Value) -> Decision {
        Decision::from_value(&json!({"model": "m", "answers": answers})).unwrap()
    }

    #[test]
    fn a_partial_or_non_finite_decision_is_not_complete() {
        let policy = Policy::builtin().unwrap();
        let qs = &policy.questions;
        let low = json!({
            "destructive": {"type": "noul", "noul": 0.01},
            "exfiltration": {"type": "noul", "noul": 0.01},
            "secrets": {"type": "noul", "noul": 0.01},
            "outside_project": {"type": "noul", "noul": 0.01},
            "risk": {"type": "score", "score": 0.0, "confidence": 1.0,
                     "probabilities": {"0": 1.0}},
        });
        assert_eq!(complete(&decision(low.clone()), qs), Ok(()));

        let mut partial = low.clone();
        partial.as_object_mut().unwrap().shift_remove("secrets");
        let e = complete(&decision(partial), qs).unwrap_err();
        assert!(e.contains("no answer to \"secrets\""), "{e}");

        // Numbers JSON cannot carry still reach a typed decision from a
        // closure or a local model: they are refused here too.
        let mut d = decision(low.clone());
        d.answers.insert(
            "destructive".into(),
            DecisionAnswer::Noul(toolnexus::classifier::NoulAnswer { noul: f64::NAN }),
        );
        let e = complete(&d, qs).unwrap_err();
        assert!(
            e.contains("\"destructive\"") && e.contains("not finite"),
            "{e}"
        );

        let mut d = decision(low);
        d.answers.insert(
            "risk".into(),
            DecisionAnswer::Noul(toolnexus::classifier::NoulAnswer { noul: 0.0 }),
        );
        let e = complete(&d, qs).unwrap_err();
        assert!(e.contains("\"risk\" as a noul question"), "{e}");
    }
}
