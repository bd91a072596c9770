//! The guard itself: a policy and the judge it asks, turning one tool call
//! into one [`Judgment`]. The call is read first (the commands it runs,
//! parsed as the shell would, or the paths a file tool reaches); the
//! permission is the strictest of the rules that fire, what could not be
//! read (at least ask), the allow-list mode, self-protection (deny), a
//! project's rules, and the cuts the judge's answers reach; any failure is
//! the policy's `on_error`, never allow.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use tokio::sync::OnceCell;
use toolnexus::classifier::{
    ChoiceAnswer, Decision, EvalContext, GuardVerdict, NoulAnswer, Question, Questions, ScoreAnswer,
};

use crate::call::{Reading, ToolCall};
use crate::judge::{self, Judge, JudgeBuilder, JudgeError, JudgeSource};
use crate::permission::Permission;
use crate::policy::project::{self, Project};
use crate::policy::{self, Cut, Policy};
use crate::shell::{Capability, RedirectKind};

mod explain;
mod protect;

/// The guard's answer about one call.
#[derive(Debug, Clone)]
pub struct Judgment {
    /// The strictest permission across rules and questions (allow for a skipped tool).
    pub permission: Permission,
    /// One line: the rule or question(s) that decided, with their figures.
    pub reason: String,
    /// Everything else: per-question answers, matched rules, the judge used,
    /// an error; never the call's own text.
    pub detail: Value,
    /// The policy skips this tool: nothing was judged.
    pub skipped: bool,
}

/// A project policy found for a cwd, read (or why it could not be).
type Found = Arc<Result<Project, String>>;

/// A judge built on first use, or why it could not be.
type Lazy = OnceCell<Result<Judge, JudgeError>>;

/// A policy and the judge it asks, ready for many calls (share it behind an
/// `Arc` to judge calls side by side).
///
/// ```
/// use serde_json::json;
/// use toolnexus::classifier::*;
/// use toolnexus_guard::{Guard, Judge, JudgeSource, Permission, Policy, ToolCall};
///
/// /// A judge that finds every call a little destructive and nothing else.
/// struct Wary;
/// impl Evaluator for Wary {
///     fn call(&self, _: EvalContext, _: EvalRequest) -> BoxFuture<Result<Decision, ClassifierError>> {
///         Box::pin(async {
///             Decision::from_slice(br#"{"model":"wary","answers":{
///                 "destructive":{"type":"noul","noul":0.9},
///                 "exfiltration":{"type":"noul","noul":0.0},
///                 "secrets":{"type":"noul","noul":0.0},
///                 "outside_project":{"type":"noul","noul":0.0},
///                 "risk":{"type":"score","score":0,"confidence":1,"probabilities":{"0":1}}}}"#)
///         })
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let judge = Judge::new(Classifier::from_evaluator("wary", Wary), "guard");
/// let guard = Guard::new(Policy::builtin()?, JudgeSource::ready(judge));
/// let call = ToolCall::from_object(
///     json!({"tool_name": "Bash", "tool_input": {"command": "make clean"}}).as_object().cloned().unwrap_or_default(),
/// )?;
/// let judgment = guard.judge(&call).await;
/// assert_eq!(judgment.permission, Permission::Ask);
/// assert!(judgment.reason.contains("destructive 0.90"), "{}", judgment.reason);
/// # Ok(())
/// # }
/// ```
pub struct Guard {
    policy: Policy,
    /// Where the judge comes from: the caller's builder, a server, or the built-in one.
    source: JudgeSource,
    judge: Lazy,
    /// With a server: the built-in judge, for when the server cannot be reached.
    fallback: Lazy,
    /// The project policy found for each cwd, read once (or why it could not be).
    projects: Mutex<HashMap<String, Option<Found>>>,
}

/// Something that made the permission stricter: a rule, or the guard's own
/// checks (`unread`, `allowlist`, `self-protection`).
struct Fired {
    id: String,
    permission: Permission,
    /// The reason's words for it.
    text: String,
}

/// A judgment and what the call was read as, for `explain`.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The judgment, as the hook would give it.
    pub judgment: Judgment,
    /// The parse: commands, capabilities, paths resolved, what could not be
    /// read (or a file tool's capabilities and paths); `null` when the call
    /// was not read (a skipped tool, a bad command).
    pub reading: Value,
    /// Every rule and check that fired, each `{id, verdict, why}`.
    pub fired: Value,
    /// The project policy that applied, if any.
    pub project: Option<String>,
}

impl Guard {
    /// A guard for `policy`, whose judge comes from `source` and is built on
    /// the first call that needs it.
    pub fn new(policy: Policy, source: JudgeSource) -> Guard {
        Guard {
            policy,
            source,
            judge: OnceCell::new(),
            fallback: OnceCell::new(),
            projects: Mutex::new(HashMap::new()),
        }
    }

    /// The project policy at `cwd` (found and read once per cwd).
    fn project(&self, cwd: &str) -> Option<Found> {
        if let Ok(cache) = self.projects.lock()
            && let Some(found) = cache.get(cwd)
        {
            return found.clone();
        }
        let found = project::find(Path::new(cwd)).map(|path| {
            Arc::new(
                Project::load(&path).map_err(|e| format!("project policy {}: {e}", path.display())),
            )
        });
        if let Ok(mut cache) = self.projects.lock() {
            cache.insert(cwd.to_string(), found.clone());
        }
        found
    }

    /// Judges one call and says why: the parse, every rule and check that
    /// fired, and the judgment (`toolnexus guard explain`).
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus_guard::{Guard, JudgeSource, Permission, Policy, ToolCall};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let guard = Guard::new(Policy::builtin()?, JudgeSource::builtin(None));
    /// let call = ToolCall {
    ///     tool_name: "Bash".into(),
    ///     tool_input: json!({"command": "sudo rm -rf ~"}).as_object().cloned().unwrap_or_default(),
    ///     cwd: Some("/home/dev/shop".into()),
    /// };
    /// let e = guard.explain(&call).await;
    /// assert_eq!(e.judgment.permission, Permission::Deny);
    /// assert_eq!(e.reading["commands"][1]["name"], "rm");
    /// assert!(e.fired.as_array().is_some_and(|f| f.iter().any(|r| r["id"] == "delete-home-or-system")));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn explain(&self, call: &ToolCall) -> Explanation {
        self.judge_read(call).await
    }

    /// The policy it judges by.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Judges one call. Never fails: a failure is the policy's `on_error`
    /// permission (or a stricter rule's), with the failure in the reason.
    pub async fn judge(&self, call: &ToolCall) -> Judgment {
        self.judge_read(call).await.judgment
    }

    /// Judges one call for [`Guard::judge`] and [`Guard::explain`], and
    /// tells the OpenTelemetry export (when one is installed) the verdict:
    /// the judge's span carries it, or the call gets a span of its own when
    /// no judge was asked.
    async fn judge_read(&self, call: &ToolCall) -> Explanation {
        toolnexus::classifier::guard_call(self.judge_and_report(call)).await
    }

    async fn judge_and_report(&self, call: &ToolCall) -> (Explanation, GuardVerdict) {
        let started = Instant::now();
        let mut detail = Map::new();
        if self.policy.skip_tools.iter().any(|t| t == &call.tool_name) {
            detail.insert("skipped".into(), json!(true));
            let verdict = GuardVerdict {
                tool: call.tool_name.clone(),
                verdict: Permission::Allow.as_str(),
                rule: None,
                decided_by: "skipped",
                judge_asked: false,
            };
            let explained = Explanation {
                judgment: Judgment {
                    permission: Permission::Allow,
                    reason: format!(
                        "toolnexus guard: {} is skipped by the policy",
                        call.tool_name
                    ),
                    detail: Value::Object(detail),
                    skipped: true,
                },
                reading: Value::Null,
                fired: json!([]),
                project: None,
            };
            return (explained, verdict);
        }

        // Rules read the call as the judge does: hidden fields (Bash's
        // `description`, the agent's own account) are gone.
        let seen = self.visible(call);
        let whole = compact(&seen.tool_input);
        let mut failure: Option<String> = None;
        let reading = match Reading::new(&seen) {
            Ok(r) => Some(r),
            Err(e) => {
                failure = Some(e.to_string());
                None
            }
        };
        let project = match &reading {
            Some(r) if call.cwd.is_some() => self.project(&r.cwd),
            _ => None,
        };
        let project_ok = match project.as_deref() {
            Some(Ok(p)) => Some(p),
            Some(Err(e)) => {
                failure = Some(e.clone());
                None
            }
            None => None,
        };

        let mut fired: Vec<Fired> = Vec::new();
        if let Some(reading) = &reading {
            for r in &self.policy.rules {
                if r.fires(&seen, &whole, reading) {
                    fired.push(Fired {
                        id: r.id.clone(),
                        permission: r.permission,
                        text: format!("rule {} ({})", r.id, r.why),
                    });
                }
            }
            for r in project_ok.iter().flat_map(|p| p.rules.iter()) {
                if r.fires(&seen, &whole, reading) {
                    fired.push(Fired {
                        id: format!("project:{}", r.id),
                        permission: r.permission,
                        text: format!("project rule {} ({})", r.id, r.why),
                    });
                }
            }
            if !reading.unread.is_empty() {
                fired.push(Fired {
                    id: "unread".into(),
                    permission: Permission::Ask,
                    text: format!(
                        "the command could not be read statically ({})",
                        reading.unread.join("; ")
                    ),
                });
            }
            if let Some(allow) = &self.policy.allowlist
                && reading.command_text.is_some()
            {
                let mut outside: Vec<&str> = Vec::new();
                for c in &reading.commands {
                    let named = allow.commands.iter().any(|e| c.is(e));
                    let by_capability = !allow.capabilities.is_empty()
                        && !c.effects.is_empty()
                        && c.effects
                            .iter()
                            .all(|(cap, _)| allow.capabilities.contains(cap));
                    // A listed command still writes what its redirections
                    // name: that is allowed only by the write capability.
                    let writes = c.command.redirects.iter().any(|r| {
                        matches!(
                            r.kind,
                            RedirectKind::Write | RedirectKind::Append | RedirectKind::ReadWrite
                        ) && !matches!(
                            r.target.as_str(),
                            "/dev/null" | "/dev/stdout" | "/dev/stderr"
                        )
                    });
                    let redirect_ok = !writes
                        || (allow.capabilities.contains(&Capability::Write)
                            && allow.capabilities.contains(&Capability::Delete));
                    let name = if c.command.name.is_empty() {
                        "a redirection"
                    } else {
                        c.command.name.as_str()
                    };
                    if (!(named || by_capability) || !redirect_ok) && !outside.contains(&name) {
                        outside.push(name);
                    }
                }
                if !outside.is_empty() {
                    fired.push(Fired {
                        id: "allowlist".into(),
                        permission: Permission::Ask,
                        text: format!("not on the policy's allow list: {}", outside.join(", ")),
                    });
                }
            }
            let project_path = project_ok.map(|p| p.path.as_path());
            if let Some(why) = protect::check(&seen.tool_name, reading, &self.policy, project_path)
            {
                fired.push(Fired {
                    id: "self-protection".into(),
                    permission: Permission::Deny,
                    text: format!("self-protection: {why}"),
                });
            }
        }
        let rule_permission = fired
            .iter()
            .map(|f| f.permission)
            .max()
            .unwrap_or(Permission::Allow);
        detail.insert(
            "rules".into(),
            json!(fired.iter().map(|f| f.id.as_str()).collect::<Vec<_>>()),
        );
        if let Some(p) = project_ok {
            detail.insert("project".into(), json!(p.path.display().to_string()));
        }

        // A project's expected commands waive the judge's ask (never a rule's).
        let waived = match (project_ok, &reading) {
            (Some(p), Some(r)) => {
                !p.allow.is_empty()
                    && r.command_text.is_some()
                    && r.unread.is_empty()
                    && !r.commands.is_empty()
                    && r.commands.iter().all(|c| p.allow.iter().any(|e| c.is(e)))
            }
            _ => false,
        };

        // A rule as strict as any cut could be settles it: the judge could not
        // make the permission stricter (with the built-in cuts, which only
        // ask, a rule that asks is enough). So does a failure to read the call.
        let strictest = if waived {
            Permission::Deny.min(self.policy.strictest_cut())
        } else {
            self.policy.strictest_cut()
        };
        let asked = if failure.is_some() {
            detail.insert(
                "judge".into(),
                json!("not asked: the call could not be read"),
            );
            None
        } else if rule_permission >= strictest || (waived && strictest == Permission::Ask) {
            detail.insert(
                "judge".into(),
                json!(match rule_permission {
                    Permission::Deny => "not asked: a rule denies",
                    Permission::Ask => "not asked: a rule asks, and no cut could deny",
                    Permission::Allow => "not asked: the project policy allows these commands",
                }),
            );
            None
        } else {
            let budget = Duration::from_millis(self.policy.budget_ms);
            Some(
                match tokio::time::timeout(budget, self.ask(state(seen))).await {
                    Ok(r) => r,
                    Err(_) => Err(JudgeError::OverBudget(self.policy.budget_ms)),
                },
            )
        };

        let judge_asked = asked.is_some();
        let mut figures = Vec::new();
        let mut question_permission = Permission::Allow;
        let mut failed: Option<String> = failure;
        match asked {
            None => {}
            Some(Ok((decision, model))) => match typed_answers(&decision, &self.policy.questions) {
                Ok(answers) => {
                    detail.insert("judge".into(), json!(model));
                    let (p, f, shown) = self.read_answers(&answers);
                    question_permission = p;
                    figures = f;
                    detail.insert("answers".into(), shown);
                }
                Err(e) => failed = Some(e.to_string()),
            },
            Some(Err(e)) => failed = Some(e.to_string()),
        }
        if waived && question_permission == Permission::Ask {
            question_permission = Permission::Allow;
            figures.retain(|(p, _)| *p != Permission::Ask);
            detail.insert(
                "waived".into(),
                json!("the project policy allows these commands"),
            );
        }
        if let Some(e) = &failed {
            detail.insert("error".into(), json!(e));
        }
        let error_permission = if failed.is_some() {
            self.policy.on_error
        } else {
            Permission::Allow
        };
        let permission = rule_permission
            .max(question_permission)
            .max(error_permission);
        detail.insert(
            "latency_ms".into(),
            json!((started.elapsed().as_secs_f64() * 1e4).round() / 10.0),
        );

        let mut why = Vec::new();
        for f in fired.iter().filter(|f| f.permission == permission) {
            why.push(f.text.clone());
        }
        for (p, text) in &figures {
            if *p == permission {
                why.push(text.clone());
            }
        }
        if let Some(e) = &failed
            && error_permission == permission
        {
            why.push(format!(
                "the call could not be judged ({e}); the policy's on_error is {}",
                self.policy.on_error.as_str()
            ));
        }
        let reason = match permission {
            Permission::Allow => {
                "toolnexus guard: allow: no rule matched and every question is under its cuts"
                    .to_string()
            }
            p => format!("toolnexus guard: {}: {}", p.as_str(), why.join("; ")),
        };
        // What set the permission, first as the reason names it: a rule or
        // check at that permission, else a failure, else the judge.
        let (decided_by, rule) = match fired.iter().find(|f| f.permission == permission) {
            Some(f) if f.id == "unread" => ("unread", Some(f.id.clone())),
            Some(f) => ("rule", Some(f.id.clone())),
            None if failed.is_some() && error_permission == permission => ("error", None),
            None if judge_asked => ("judge", None),
            None => ("policy", None),
        };
        let verdict = GuardVerdict {
            tool: call.tool_name.clone(),
            verdict: permission.as_str(),
            rule,
            decided_by,
            judge_asked,
        };
        let explained = Explanation {
            judgment: Judgment {
                permission,
                reason,
                detail: Value::Object(detail),
                skipped: false,
            },
            reading: reading.as_ref().map_or(Value::Null, Reading::to_json),
            fired: Value::Array(
                fired
                    .iter()
                    .map(|f| json!({"id": f.id, "verdict": f.permission.as_str(), "why": f.text}))
                    .collect(),
            ),
            project: project.map(|p| match p.as_ref() {
                Ok(p) => p.path.display().to_string(),
                Err(e) => e.clone(),
            }),
        };
        (explained, verdict)
    }

    /// The call as the rules and the judge see it: its arguments less the
    /// policy's hidden fields for this tool and for every tool (`*`), in the
    /// order the agent wrote them.
    fn visible(&self, call: &ToolCall) -> ToolCall {
        let hidden = |field: &str| {
            [call.tool_name.as_str(), "*"].iter().any(|tool| {
                self.policy
                    .hide_fields
                    .get(*tool)
                    .is_some_and(|fields| fields.iter().any(|f| f == field))
            })
        };
        ToolCall {
            tool_name: call.tool_name.clone(),
            tool_input: call
                .tool_input
                .iter()
                .filter(|(k, _)| !hidden(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            cwd: call.cwd.clone(),
        }
    }

    /// How the first judge is built.
    fn primary(&self) -> JudgeBuilder {
        match &self.source {
            JudgeSource::Builtin {
                model_dir,
                precision,
            } => judge::builtin_builder(model_dir.clone(), *precision),
            JudgeSource::Supplied(build) | JudgeSource::Server { build, .. } => build.clone(),
        }
    }

    /// Asks the judge (and, when a server fails, the built-in one here): the
    /// decision, checked complete, and the model to name.
    async fn ask(&self, state: Value) -> Result<(Decision, String), JudgeError> {
        let primary = self
            .judge
            .get_or_init(|| judge::build(self.primary()))
            .await;
        match (primary, &self.source) {
            (
                Ok(j),
                JudgeSource::Server {
                    url,
                    model_dir,
                    precision,
                    ..
                },
            ) => match evaluate(j, state.clone(), &self.policy.questions).await {
                Ok(a) => Ok(a),
                Err(e) => {
                    let local = self
                        .fallback
                        .get_or_init(|| {
                            judge::build(judge::builtin_builder(model_dir.clone(), *precision))
                        })
                        .await;
                    let j = local.as_ref().map_err(|l| JudgeError::ServerAndLocal {
                        url: url.clone(),
                        server: Box::new(e.clone()),
                        local: Box::new(l.clone()),
                    })?;
                    let (decision, model) = evaluate(j, state, &self.policy.questions).await?;
                    Ok((
                        decision,
                        format!("{model} (the server at {url} failed: {e})"),
                    ))
                }
            },
            (Ok(j), _) => evaluate(j, state, &self.policy.questions).await,
            (Err(e), _) => Err(e.clone()),
        }
    }

    /// The permission of the questions' cuts, each firing cut's figure as
    /// text, and the answers as figures for the detail.
    fn read_answers(
        &self,
        answers: &BTreeMap<&str, Answer<'_>>,
    ) -> (Permission, Vec<(Permission, String)>, Value) {
        let mut permission = Permission::Allow;
        let mut figures = Vec::new();
        let mut shown = Map::new();
        for (key, cuts) in &self.policy.cuts {
            let Some(a) = answers.get(key.as_str()) else {
                continue;
            };
            let q = self.policy.questions.get(key);
            for (p, cut) in [(Permission::Deny, &cuts.deny), (Permission::Ask, &cuts.ask)] {
                let Some(cut) = cut else { continue };
                let (m, what) = measure(cut, a, q);
                shown.insert(format!("{key}{}", what.suffix), json!(round4(m)));
                let limit = cut.p();
                if m >= limit {
                    figures.push((p, format!("{key}{} {:.2} ≥ {:.2}", what.label, m, limit)));
                    permission = permission.max(p);
                    break;
                }
            }
        }
        (permission, figures, Value::Object(shown))
    }
}

/// What the judge is asked about: the tool, its visible arguments, the cwd.
fn state(seen: ToolCall) -> Value {
    let mut state = Map::new();
    state.insert("tool_name".into(), Value::String(seen.tool_name));
    state.insert("tool_input".into(), Value::Object(seen.tool_input));
    if let Some(cwd) = seen.cwd {
        state.insert("cwd".into(), Value::String(cwd));
    }
    Value::Object(state)
}

/// Arguments as compact JSON: the text a rule without a field reads, and
/// what the log hashes.
pub(crate) fn compact(input: &Map<String, Value>) -> String {
    // A map of JSON values has only string keys and finite numbers: it
    // always serialises.
    serde_json::to_string(input).expect("a JSON object always serialises")
}

/// `p` to four decimals, as the detail shows a figure.
pub(crate) fn round4(p: f64) -> f64 {
    (p * 1e4).round() / 1e4
}

/// Asks one judge and checks its decision can be read for `questions`.
async fn evaluate(
    j: &Judge,
    state: Value,
    questions: &Questions,
) -> Result<(Decision, String), JudgeError> {
    let ctx = EvalContext::new().with_call_name(j.call.clone());
    let d = j.classifier.evaluate_ctx(ctx, state, questions).await?;
    typed_answers(&d, questions)?;
    let model = d.model.clone();
    Ok((d, model))
}

/// One question's answer, read as its question's type.
enum Answer<'d> {
    Noul(&'d NoulAnswer),
    Choice(&'d ChoiceAnswer),
    Score(&'d ScoreAnswer),
    /// A box question: no cut reads it.
    Box,
}

/// Every question's answer, read through the decision's typed accessors: an
/// unanswered question, an answer of another type or a number that is not
/// finite is an error (the policy's `on_error`), never a 0.
fn typed_answers<'d>(
    d: &'d Decision,
    questions: &'d Questions,
) -> Result<BTreeMap<&'d str, Answer<'d>>, JudgeError> {
    let missing: Vec<String> = questions
        .keys()
        .filter(|k| d.answer(k).is_err())
        .cloned()
        .collect();
    if !missing.is_empty() {
        return Err(JudgeError::Missing {
            model: d.model.clone(),
            keys: missing,
        });
    }
    let mut out = BTreeMap::new();
    for (key, q) in questions {
        let read = match q {
            Question::Noul(_) => d.noul(key).map(Answer::Noul),
            Question::Choice(_) => d.choice(key).map(Answer::Choice),
            Question::Score(_) => d.score(key).map(Answer::Score),
            Question::Box(_) => d.bounding_box(key).map(|_| Answer::Box),
        };
        let a = read.map_err(|_| JudgeError::Mistyped {
            model: d.model.clone(),
            key: key.clone(),
            answered: d.answer(key).map_or("missing", |a| a.answer_type()),
            asked: q.kind(),
        })?;
        let finite = match &a {
            Answer::Noul(n) => n.noul.is_finite(),
            Answer::Choice(c) => c.probabilities.values().all(|p| p.is_finite()),
            Answer::Score(s) => {
                s.score.is_finite() && s.probabilities.values().all(|p| p.is_finite())
            }
            Answer::Box => true,
        };
        if !finite {
            return Err(JudgeError::NotFinite {
                model: d.model.clone(),
                key: key.clone(),
            });
        }
        out.insert(key.as_str(), a);
    }
    Ok(out)
}

/// How a figure is named in a reason (`destructive`, `risk P(≥ high)`) and in the detail.
struct Named {
    label: String,
    suffix: String,
}

/// The probability a cut reads from one typed answer. An answer without the
/// distribution a cut needs counts its pick as certain; a distribution that
/// leaves mass unaccounted for (options or levels missing from it) counts that
/// mass toward the cut, so a partial answer can only make the permission
/// stricter. A cut is parsed for its question's type, so an answer of another
/// type cannot reach it; if one did, it would count as certain.
fn measure(cut: &Cut, a: &Answer<'_>, q: Option<&Question>) -> (f64, Named) {
    match cut {
        Cut::Noul(_) => (
            match a {
                Answer::Noul(n) => n.noul,
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
                Answer::Score(s) if s.probabilities.is_empty() => {
                    if s.score >= *at_least as f64 {
                        1.0
                    } else {
                        0.0
                    }
                }
                Answer::Score(s) => with_unaccounted(
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
                Answer::Choice(c) if c.probabilities.is_empty() => {
                    if options.contains(&c.choice) {
                        1.0
                    } else {
                        0.0
                    }
                }
                Answer::Choice(c) => with_unaccounted(
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
fn with_unaccounted(ps: &BTreeMap<String, f64>, counted: f64) -> f64 {
    let total: f64 = ps.values().sum();
    (counted + (1.0 - total).max(0.0)).min(1.0)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
