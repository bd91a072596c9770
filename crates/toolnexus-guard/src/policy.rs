//! The guard policy: a versioned JSON file (SPEC §18, §21), read strictly so
//! that every mistake names its key, with the built-in policy filling in
//! whatever a user's file leaves out: the questions and their cuts, the
//! rules, the tools skipped, the fields hidden, the permission of a failure,
//! and the log. Version 2 adds rules over what a call does and an allow-list
//! mode; version 1 files are read as before. A policy that could fail open
//! (a hidden command, a skipped tool that runs commands or writes files, a
//! rule on a field no tool has) is refused, naming the key. A project's own
//! `.toolnexus/guard.json` ([`project`]) adds rules and expected commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use toolnexus::classifier::{Question, Questions, questions_from_wire, validate_questions};

use crate::fields::{err, string_list, tightening};
use crate::json;
use crate::paths::policy_path;
use crate::permission::Permission;
use crate::rules::{Rule, parse_rules, rule_json};
use crate::shell::Capability;

mod check;
pub mod project;

pub use crate::fields::PolicyError;

/// The built-in policy (its questions come from the guard set's questions file).
pub const DEFAULT_POLICY: &str = include_str!("../data/policy.json");
/// The guard set's questions: the built-in policy asks all but `verdict`,
/// which labels the set and is not a policy question.
pub const GUARD_QUESTIONS: &str = include_str!("../data/guard.questions.json");
/// The built-in student, distilled from the guard set's train split by
/// `scripts/guard-student`.
pub const GUARD_STUDENT: &str = include_str!("../data/guard.student.json");

/// The policy file's format name and the versions this build reads.
const FORMAT: &str = "guard-policy";
const VERSIONS: [u64; 2] = [1, 2];
/// The newest version: the one the effective policy is printed in.
const VERSION: u64 = 2;
/// Keys version 2 adds.
const KEYS_V2: &[&str] = &["mode", "allow_commands", "allow_capabilities"];
/// Keys a policy file may have (plus `_…` and `x_…` comments).
const KEYS: &[&str] = &[
    "toolnexus",
    "version",
    "questions",
    "cuts",
    "thresholds",
    "thresholds_verdict",
    "rules",
    "builtin_rules",
    "skip_tools",
    "hide_fields",
    "on_error",
    "print_allow",
    "budget_ms",
    "log",
];

/// A cut on one question: the probability at or above which it asks or denies.
#[derive(Debug, Clone, PartialEq)]
pub enum Cut {
    /// A noul's probability of true.
    Noul(f64),
    /// A score's probability of a level at least `at_least` (a level index).
    AtLeast {
        /// The lowest level counted.
        at_least: usize,
        /// The probability at or above which the cut fires.
        p: f64,
    },
    /// A choice's probability of any of these options.
    AnyOf {
        /// The options counted.
        options: Vec<String>,
        /// The probability at or above which the cut fires.
        p: f64,
    },
}

impl Cut {
    /// The probability at or above which the cut fires.
    ///
    /// ```
    /// use toolnexus_guard::policy::Cut;
    /// assert_eq!(Cut::AtLeast { at_least: 3, p: 0.7 }.p(), 0.7);
    /// ```
    pub fn p(&self) -> f64 {
        match self {
            Cut::Noul(p) | Cut::AtLeast { p, .. } | Cut::AnyOf { p, .. } => *p,
        }
    }
}

/// The ask and deny cuts of one question.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cuts {
    /// Fires an ask.
    pub ask: Option<Cut>,
    /// Fires a deny.
    pub deny: Option<Cut>,
}

/// Where the guard writes its log and what it puts in it.
#[derive(Debug, Clone, PartialEq)]
pub struct LogSpec {
    /// The JSONL file.
    pub path: PathBuf,
    /// Whether the tool input itself is logged (secrets redacted); otherwise only its hash.
    pub log_commands: bool,
    /// The size past which the file is rotated: renamed to `<path>.1`
    /// (replacing the one before), and a new file started.
    pub max_bytes: u64,
}

/// The log's default rotation size: 10 MiB, some 30,000 calls.
pub const LOG_MAX_BYTES: u64 = 10 << 20;

/// Version 2's allow-list mode: every command a call runs must be one of
/// these, or have only these capabilities; any other asks.
///
/// ```
/// use toolnexus_guard::Policy;
/// let p = Policy::parse(
///     r#"{"toolnexus":"guard-policy","version":2,"mode":"allowlist","allow_commands":["ls","git status"],"allow_capabilities":["read"]}"#,
///     None,
/// )?;
/// let a = p.allowlist.unwrap_or_default();
/// assert_eq!(a.commands, ["ls", "git status"]);
/// assert_eq!(a.capabilities[0].as_str(), "read");
/// # Ok::<(), toolnexus_guard::PolicyError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Allowlist {
    /// Commands allowed: a name (`ls`) or a name and subcommand (`git status`).
    pub commands: Vec<String>,
    /// Capabilities allowed: a command whose every effect is one of these.
    pub capabilities: Vec<Capability>,
}

/// A parsed, checked policy.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The version the file was written in (1 or 2).
    pub version: u64,
    /// The file it was read from (`None`: the built-in policy, or text).
    pub source: Option<PathBuf>,
    /// Version 2's allow-list mode, when set.
    pub allowlist: Option<Allowlist>,
    /// The questions asked about each call.
    pub questions: Questions,
    /// The cuts per question key.
    pub cuts: BTreeMap<String, Cuts>,
    /// The rules, built-in first unless `builtin_rules` is false.
    pub rules: Vec<Rule>,
    /// Tools never judged (the hook prints nothing for them).
    pub skip_tools: Vec<String>,
    /// Argument fields removed before the judge sees the call, per tool (`*`: every tool).
    pub hide_fields: BTreeMap<String, Vec<String>>,
    /// The verdict of any failure: ask or deny.
    pub on_error: Permission,
    /// Whether an allow is printed (otherwise the hook stays silent).
    pub print_allow: bool,
    /// The judge's time budget in milliseconds.
    pub budget_ms: u64,
    /// The log, if any.
    pub log: Option<LogSpec>,
    /// The policy's own JSON with every default filled in (for check-policy).
    pub effective: Value,
    /// What the reader noticed but let through, one line each (a question
    /// reworded since its thresholds file's cut was picked), for the caller to show.
    pub warnings: Vec<String>,
}

/// The built-in questions: the guard set's, without its `verdict` label.
pub fn builtin_questions() -> Value {
    let mut v: Value = serde_json::from_str(GUARD_QUESTIONS).unwrap_or(Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.shift_remove("verdict");
    }
    v
}

impl Policy {
    /// The built-in policy.
    pub fn builtin() -> Result<Policy, PolicyError> {
        Policy::parse(DEFAULT_POLICY, None)
    }

    /// The strictest verdict any question's cut can give: deny when some
    /// question has a deny cut, else ask.
    pub fn strictest_cut(&self) -> Permission {
        if self.cuts.values().any(|c| c.deny.is_some()) {
            Permission::Deny
        } else {
            Permission::Ask
        }
    }

    /// Builds every rule's expression now (a hook builds them as calls need
    /// them): the first that cannot be built, by its key.
    pub fn check_rules(&self) -> Result<(), PolicyError> {
        for (i, r) in self.rules.iter().enumerate() {
            for (name, p) in [
                ("tools", &r.tools),
                ("pattern", &r.pattern),
                ("unless", &r.unless),
                ("unless_path", &r.unless_path),
                ("args", &r.args),
            ] {
                if let Some(p) = p {
                    p.check()
                        .map_err(|e| err(format!("rules[{i}] ({}).{name}", r.id), e.to_string()))?;
                }
            }
        }
        Ok(())
    }

    /// Reads a policy file; relative paths in it resolve against its directory.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| err("", format!("cannot read {}: {e}", path.display())))?;
        let mut policy = Policy::parse(&text, path.parent())?;
        policy.source = Some(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()));
        Ok(policy)
    }

    /// Parses a policy over the built-in one: what the text names replaces the default.
    pub fn parse(text: &str, base: Option<&Path>) -> Result<Policy, PolicyError> {
        let user = json::parse_strict(text).map_err(|e| err("", format!("not JSON: {e}")))?;
        let user = user
            .as_object()
            .ok_or_else(|| err("", "a policy is a JSON object"))?;
        let version = user.get("version").and_then(Value::as_u64).unwrap_or(1);
        for k in user.keys() {
            let known =
                KEYS.contains(&k.as_str()) || (version >= 2 && KEYS_V2.contains(&k.as_str()));
            if !known && !k.starts_with('_') && !k.starts_with("x_") {
                let mut all = KEYS.to_vec();
                if version >= 2 {
                    all.extend_from_slice(KEYS_V2);
                }
                return Err(err(
                    k.clone(),
                    format!("unknown key (known: {})", all.join(", ")),
                ));
            }
        }
        match user.get("toolnexus") {
            Some(Value::String(s)) if s == FORMAT => {}
            Some(v) => return Err(err("toolnexus", format!("must be {FORMAT:?}, not {v}"))),
            None => {
                return Err(err(
                    "toolnexus",
                    format!("missing (a policy starts with \"toolnexus\": {FORMAT:?})"),
                ));
            }
        }
        match user.get("version") {
            Some(v) if v.as_u64().is_some_and(|n| VERSIONS.contains(&n)) => {}
            Some(v) => {
                return Err(err(
                    "version",
                    format!("{v} is not a version this toolnexus reads (it reads 1 and 2)"),
                ));
            }
            None => {
                return Err(err(
                    "version",
                    "missing (this toolnexus reads 1 and 2)".to_string(),
                ));
            }
        }

        // The built-in policy read as the user's is the same value: a hook
        // that reads it (every call) reads it once.
        let default: Value = if text == DEFAULT_POLICY {
            Value::Object(user.clone())
        } else {
            serde_json::from_str(DEFAULT_POLICY)
                .map_err(|e| err("", format!("the built-in policy is not JSON: {e}")))?
        };
        let default_version = default.get("version").and_then(Value::as_u64).unwrap_or(1);
        let get = |k: &str| user.get(k).or_else(|| default.get(k)).cloned();

        // Questions: the user's replace the built-in ones, and then need their own cuts.
        let own_questions = user.contains_key("questions");
        let questions_value = match user.get("questions") {
            Some(q) => q.clone(),
            None => builtin_questions(),
        };
        let questions = parse_questions(&questions_value)?;

        let thresholds_verdict = match get("thresholds_verdict") {
            None => Permission::Ask,
            Some(v) => tightening("thresholds_verdict", &v)?,
        };
        let mut cuts = BTreeMap::new();
        let cuts_value = match (user.get("cuts"), own_questions) {
            (Some(c), _) => c.clone(),
            (None, false) => default.get("cuts").cloned().unwrap_or(json!({})),
            (None, true) => json!({}),
        };
        let cuts_obj = cuts_value
            .as_object()
            .ok_or_else(|| err("cuts", "must be an object of question key -> {ask, deny}"))?;
        for (k, v) in cuts_obj {
            let q = questions.get(k).ok_or_else(|| {
                err(
                    format!("cuts.{k}"),
                    format!(
                        "no question {k:?} (questions: {})",
                        questions.keys().cloned().collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
            cuts.insert(k.clone(), parse_cuts(&format!("cuts.{k}"), q, v)?);
        }
        let thresholds = match user.get("thresholds") {
            None | Some(Value::Null) => None,
            Some(Value::String(p)) => Some(policy_path(p, base)),
            Some(v) => return Err(err("thresholds", format!("must be a file path, not {v}"))),
        };
        let mut warnings = Vec::new();
        if let Some(path) = &thresholds {
            let t = toolnexus::judge::Thresholds::load(path)
                .map_err(|e| err("thresholds", json::one_line(format!("--thresholds: {e}"))))?;
            for key in t.reworded(&questions) {
                warnings.push(format!(
                    "--thresholds {}: question {key:?} was reworded since its cut was picked; \
                     its bands may no longer hold (pick them again with `toolnexus assess thresholds`)",
                    path.display()
                ));
            }
            for (k, b) in t.bands {
                let Some(q) = questions.get(&k) else { continue };
                if !matches!(q, Question::Noul(_)) {
                    continue;
                }
                let c = cuts.entry(k).or_default();
                let cut = Cut::Noul(b.high);
                match thresholds_verdict {
                    Permission::Deny if c.deny.is_none() => c.deny = Some(cut),
                    _ if c.ask.is_none() => c.ask = Some(cut),
                    _ => {}
                }
            }
        }
        for k in questions.keys() {
            let covered = cuts
                .get(k)
                .is_some_and(|c| c.ask.is_some() || c.deny.is_some());
            if !covered {
                return Err(err(
                    format!("cuts.{k}"),
                    "missing: every question needs an ask or deny cut (or a thresholds file)",
                ));
            }
        }

        let mut rules = Vec::new();
        let builtin_rules = match get("builtin_rules") {
            None => true,
            Some(Value::Bool(b)) => b,
            Some(v) => {
                return Err(err(
                    "builtin_rules",
                    format!("must be true or false, not {v}"),
                ));
            }
        };
        // A user's rules come after the built-in ones (the built-in policy's own
        // rules are the built-in ones).
        if builtin_rules && user.contains_key("rules") && text != DEFAULT_POLICY {
            rules.extend(parse_rules(
                "built-in rules",
                default.get("rules").unwrap_or(&Value::Null),
                false,
                default_version,
            )?);
        }
        let own_rules = match (user.get("rules"), builtin_rules) {
            (Some(r), _) => r.clone(),
            (None, true) => default.get("rules").cloned().unwrap_or(json!([])),
            (None, false) => json!([]),
        };
        let own_are_builtin = text == DEFAULT_POLICY || !user.contains_key("rules");
        let own_version = if own_are_builtin {
            default_version
        } else {
            version
        };
        for r in parse_rules("rules", &own_rules, !own_are_builtin, own_version)? {
            if let Some(i) = rules.iter().position(|x: &Rule| x.id == r.id) {
                rules[i] = r;
            } else {
                rules.push(r);
            }
        }

        let skip_tools = string_list("skip_tools", &get("skip_tools").unwrap_or(json!([])))?;
        let hide_value = get("hide_fields").unwrap_or(json!({}));
        let hide_obj = hide_value.as_object().ok_or_else(|| {
            err(
                "hide_fields",
                "must be an object of tool name -> [field, …]",
            )
        })?;
        let mut hide_fields = BTreeMap::new();
        for (tool, fields) in hide_obj {
            hide_fields.insert(
                tool.clone(),
                string_list(&format!("hide_fields.{tool}"), fields)?,
            );
        }
        let on_error = match get("on_error") {
            None => Permission::Ask,
            Some(v) => tightening("on_error", &v)?,
        };
        let print_allow = match get("print_allow") {
            None => false,
            Some(Value::Bool(b)) => b,
            Some(v) => {
                return Err(err(
                    "print_allow",
                    format!("must be true or false, not {v}"),
                ));
            }
        };
        let budget_ms = match get("budget_ms") {
            None => 5000,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=600_000).contains(&n) => n,
                _ => {
                    return Err(err(
                        "budget_ms",
                        format!("must be a whole number of milliseconds in 1..=600000, not {v}"),
                    ));
                }
            },
        };
        let log = match get("log") {
            None | Some(Value::Null) => None,
            Some(Value::Object(o)) => Some(parse_log(&o, base)?),
            Some(v) => {
                return Err(err(
                    "log",
                    format!("must be an object {{path, log_commands}} or null, not {v}"),
                ));
            }
        };

        let allowlist = parse_mode(user)?;

        let mut effective = Map::new();
        effective.insert("toolnexus".into(), json!(FORMAT));
        effective.insert("version".into(), json!(VERSION));
        if let Some(a) = &allowlist {
            effective.insert("mode".into(), json!("allowlist"));
            effective.insert("allow_commands".into(), json!(a.commands));
            effective.insert(
                "allow_capabilities".into(),
                json!(
                    a.capabilities
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                ),
            );
        }
        effective.insert("questions".into(), questions_value);
        effective.insert(
            "cuts".into(),
            Value::Object(
                cuts.iter()
                    .map(|(k, c)| (k.clone(), cuts_json(c)))
                    .collect(),
            ),
        );
        effective.insert(
            "rules".into(),
            Value::Array(rules.iter().map(rule_json).collect()),
        );
        effective.insert("skip_tools".into(), json!(skip_tools));
        effective.insert("hide_fields".into(), json!(hide_fields));
        effective.insert("on_error".into(), json!(on_error.as_str()));
        effective.insert("print_allow".into(), json!(print_allow));
        effective.insert("budget_ms".into(), json!(budget_ms));
        effective.insert(
            "log".into(),
            match &log {
                None => Value::Null,
                Some(l) => {
                    json!({"path": l.path.display().to_string(), "log_commands": l.log_commands,
                           "max_bytes": l.max_bytes})
                }
            },
        );

        let policy = Policy {
            version,
            source: None,
            allowlist,
            questions,
            cuts,
            rules,
            skip_tools,
            hide_fields,
            on_error,
            print_allow,
            budget_ms,
            log,
            effective: Value::Object(effective),
            warnings,
        };
        // The built-in policy passes these checks (a test runs them on it):
        // a hook on it does not run them again on every call.
        if text != DEFAULT_POLICY {
            check::fail_open(&policy)?;
        }
        Ok(policy)
    }
}

/// Version 2's `mode` and its lists.
fn parse_mode(user: &Map<String, Value>) -> Result<Option<Allowlist>, PolicyError> {
    let allowlist = match user.get("mode") {
        None => false,
        Some(Value::String(m)) if m == "allowlist" => true,
        Some(Value::String(m)) if m == "rules" => false,
        Some(v) => {
            return Err(err(
                "mode",
                format!("must be \"allowlist\" or \"rules\", not {v}"),
            ));
        }
    };
    let commands = match user.get("allow_commands") {
        None => Vec::new(),
        Some(v) => string_list("allow_commands", v)?
            .into_iter()
            .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect(),
    };
    let capabilities = match user.get("allow_capabilities") {
        None => Vec::new(),
        Some(v) => string_list("allow_capabilities", v)?
            .iter()
            .enumerate()
            .map(|(i, c)| {
                c.parse::<Capability>()
                    .map_err(|e| err(format!("allow_capabilities[{i}]"), e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?,
    };
    if !allowlist {
        for k in ["allow_commands", "allow_capabilities"] {
            if user.contains_key(k) {
                return Err(err(
                    k,
                    "is read only with \"mode\": \"allowlist\" (without it nothing would be allowed by it)",
                ));
            }
        }
        return Ok(None);
    }
    Ok(Some(Allowlist {
        commands,
        capabilities,
    }))
}

fn parse_questions(v: &Value) -> Result<Questions, PolicyError> {
    let obj = v
        .as_object()
        .ok_or_else(|| err("questions", "must be an object of key -> wire question"))?;
    if obj.is_empty() {
        return Err(err("questions", "names no question"));
    }
    // The texts the command line gives for `--questions`, as a policy's
    // questions have always been read.
    let at = |e: &dyn std::fmt::Display| {
        err(
            "questions",
            json::one_line(format!("--questions questions: {e}")),
        )
    };
    for (key, q) in obj {
        let Value::Object(fields) = q else { continue };
        if let Some(field) = fields
            .keys()
            .find(|f| !QUESTION_FIELDS.contains(&f.as_str()) && !f.starts_with("x_"))
        {
            return Err(at(&format!(
                "question {key:?}: unknown field {field:?} (a question has \"type\", \"instructions\" and \"criteria\")"
            )));
        }
    }
    let questions = questions_from_wire(v).map_err(|e| at(&e))?;
    validate_questions(&questions).map_err(|e| at(&e))?;
    Ok(questions)
}

/// The fields a wire question may have; `x_…` extension fields are allowed too.
const QUESTION_FIELDS: [&str; 3] = ["type", "instructions", "criteria"];

fn probability(key: &str, v: &Value) -> Result<f64, PolicyError> {
    match v.as_f64() {
        Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
        _ => Err(err(
            key,
            format!("must be a probability in [0, 1], not {v}"),
        )),
    }
}

fn parse_cut(key: &str, q: &Question, v: &Value) -> Result<Cut, PolicyError> {
    match q {
        Question::Noul(_) => Ok(Cut::Noul(probability(key, v)?)),
        Question::Score(q) => {
            let names: Vec<String> = q
                .criteria
                .iter()
                .map(|c| level_name(&content_text(c)))
                .collect();
            let o = v.as_object().ok_or_else(|| {
                err(
                    key,
                    "a score's cut is {\"at_least\": LEVEL, \"p\": PROBABILITY}",
                )
            })?;
            for k in o.keys() {
                if k != "at_least" && k != "p" {
                    return Err(err(
                        format!("{key}.{k}"),
                        "unknown key (known: at_least, p)",
                    ));
                }
            }
            let levels = names.len();
            let at_least = match o.get("at_least") {
                Some(Value::Number(n)) => match n.as_u64() {
                    Some(i) if (i as usize) < levels => i as usize,
                    _ => {
                        return Err(err(
                            format!("{key}.at_least"),
                            format!("must be a level index in 0..{levels}, not {n}"),
                        ));
                    }
                },
                Some(Value::String(name)) => {
                    names.iter().position(|c| c == name).ok_or_else(|| {
                        err(
                            format!("{key}.at_least"),
                            format!("no level named {name:?} (levels: {})", names.join(", ")),
                        )
                    })?
                }
                Some(v) => {
                    return Err(err(
                        format!("{key}.at_least"),
                        format!("must be a level index or name, not {v}"),
                    ));
                }
                None => return Err(err(format!("{key}.at_least"), "missing")),
            };
            let p = probability(
                &format!("{key}.p"),
                o.get("p")
                    .ok_or_else(|| err(format!("{key}.p"), "missing"))?,
            )?;
            Ok(Cut::AtLeast { at_least, p })
        }
        Question::Box(_) => Err(err(key, "a box question has no probability to cut")),
        Question::Choice(q) => {
            let o = v.as_object().ok_or_else(|| {
                err(
                    key,
                    "a choice's cut is {\"any_of\": [OPTION, …], \"p\": PROBABILITY}",
                )
            })?;
            for k in o.keys() {
                if k != "any_of" && k != "p" {
                    return Err(err(format!("{key}.{k}"), "unknown key (known: any_of, p)"));
                }
            }
            let options = string_list(
                &format!("{key}.any_of"),
                o.get("any_of")
                    .ok_or_else(|| err(format!("{key}.any_of"), "missing"))?,
            )?;
            for opt in &options {
                if !q.criteria.contains_key(opt) {
                    return Err(err(format!("{key}.any_of"), format!("no option {opt:?}")));
                }
            }
            let p = probability(
                &format!("{key}.p"),
                o.get("p")
                    .ok_or_else(|| err(format!("{key}.p"), "missing"))?,
            )?;
            Ok(Cut::AnyOf { options, p })
        }
    }
}

fn parse_cuts(key: &str, q: &Question, v: &Value) -> Result<Cuts, PolicyError> {
    let o = v
        .as_object()
        .ok_or_else(|| err(key, "must be an object {\"ask\": CUT, \"deny\": CUT}"))?;
    let mut cuts = Cuts::default();
    for (k, c) in o {
        let sub = format!("{key}.{k}");
        match k.as_str() {
            "ask" => cuts.ask = Some(parse_cut(&sub, q, c)?),
            "deny" => cuts.deny = Some(parse_cut(&sub, q, c)?),
            _ => return Err(err(sub, "unknown key (known: ask, deny)")),
        }
    }
    Ok(cuts)
}

/// A score level's short name: its description up to the first colon.
pub fn level_name(description: &str) -> String {
    match description.split_once(':') {
        Some((name, _)) if !name.trim().is_empty() && name.len() <= 24 => name.trim().to_string(),
        _ => description.chars().take(24).collect(),
    }
}

fn cut_json(c: &Cut) -> Value {
    match c {
        Cut::Noul(p) => json!(p),
        Cut::AtLeast { at_least, p } => json!({"at_least": at_least, "p": p}),
        Cut::AnyOf { options, p } => json!({"any_of": options, "p": p}),
    }
}

fn cuts_json(c: &Cuts) -> Value {
    let mut o = Map::new();
    if let Some(a) = &c.ask {
        o.insert("ask".into(), cut_json(a));
    }
    if let Some(d) = &c.deny {
        o.insert("deny".into(), cut_json(d));
    }
    Value::Object(o)
}

fn parse_log(o: &Map<String, Value>, base: Option<&Path>) -> Result<LogSpec, PolicyError> {
    for k in o.keys() {
        if !["path", "log_commands", "max_bytes"].contains(&k.as_str()) {
            return Err(err(
                format!("log.{k}"),
                "unknown key (known: path, log_commands, max_bytes)",
            ));
        }
    }
    let path = match o.get("path") {
        Some(Value::String(p)) if !p.trim().is_empty() => policy_path(p, base),
        Some(v) => return Err(err("log.path", format!("must be a file path, not {v}"))),
        None => return Err(err("log.path", "missing (or set \"log\": null for no log)")),
    };
    let log_commands = match o.get("log_commands") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(v) => {
            return Err(err(
                "log.log_commands",
                format!("must be true or false, not {v}"),
            ));
        }
    };
    let max_bytes = match o.get("max_bytes") {
        None => LOG_MAX_BYTES,
        Some(v) => match v.as_u64() {
            Some(n) if n >= 4096 => n,
            _ => {
                return Err(err(
                    "log.max_bytes",
                    format!("must be a whole number of bytes, at least 4096, not {v}"),
                ));
            }
        },
    };
    Ok(LogSpec {
        path,
        log_commands,
        max_bytes,
    })
}

/// A content's text (structured content as compact JSON).
pub fn content_text(c: &toolnexus::classifier::Content) -> String {
    match c.as_str() {
        Some(s) => s.to_string(),
        None => c.as_value().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_policy_parses_and_names_its_questions() {
        let p = Policy::builtin().unwrap();
        // Its expressions are not checked when a hook reads it: they are here.
        p.check_rules().unwrap();
        assert_eq!(
            p.questions.keys().cloned().collect::<Vec<_>>(),
            [
                "destructive",
                "exfiltration",
                "outside_project",
                "risk",
                "secrets"
            ]
        );
        assert!(p.rules.len() > 20);
        assert_eq!(p.on_error, Permission::Ask);
    }

    #[test]
    fn a_policys_questions_are_read_as_the_command_line_reads_them() {
        let e = Policy::parse(
            r#"{"toolnexus":"guard-policy","version":1,"questions":{"s":{"type":"noul","instructionz":"x"}}}"#,
            None,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "questions: --questions questions: question \"s\": unknown field \"instructionz\" (a question has \"type\", \"instructions\" and \"criteria\")"
        );
        let e = Policy::parse("{\"toolnexus\":1,\"toolnexus\":2}", None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("not JSON: invalid JSON: the key \"toolnexus\" appears twice"),
            "{e}"
        );
    }

    #[test]
    fn errors_name_the_key() {
        let bad = |t: &str| Policy::parse(t, None).unwrap_err().key;
        let head = r#""toolnexus":"guard-policy","version":1"#;
        assert_eq!(
            bad(&format!("{{{head},\"on_error\":\"allow\"}}")),
            "on_error"
        );
        assert_eq!(bad(&format!("{{{head},\"colour\":1}}")), "colour");
        assert_eq!(
            bad(&format!(
                "{{{head},\"rules\":[{{\"id\":\"x\",\"pattern\":\"(\",\"verdict\":\"ask\"}}]}}"
            )),
            "rules[0] (x).pattern"
        );
        assert_eq!(
            bad(&format!(
                "{{{head},\"rules\":[{{\"id\":\"x\",\"pattern\":\"a\",\"verdict\":\"allow\"}}]}}"
            )),
            "rules[0] (x).verdict"
        );
        assert_eq!(
            bad(&format!("{{{head},\"cuts\":{{\"risk\":{{\"ask\":0.5}}}}}}")),
            "cuts.risk.ask"
        );
        assert_eq!(
            bad(r#"{"toolnexus":"guard-policy","version":3}"#),
            "version"
        );
    }
}
