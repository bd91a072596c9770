//! The guard policy: a versioned JSON file (SPEC §18), read strictly so that
//! every mistake names its key, with the built-in policy filling in whatever a
//! user's file leaves out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use std::sync::OnceLock;

use regex::bytes::Regex;
use serde_json::{Map, Value, json};
use toolnexus::classifier::{Question, Questions};

use super::Verdict;
use super::needles::needles;

/// The built-in policy (its questions come from the guard set's questions file).
pub const DEFAULT_POLICY: &str = include_str!("../../../guard/policy.json");
/// The guard set's questions: the built-in policy asks all but `verdict`,
/// which labels the set and is not a policy question.
pub const GUARD_QUESTIONS: &str = include_str!("../../../guard/guard.questions.json");
/// The built-in student, distilled from the guard set's train split by
/// `scripts/guard-student`.
pub const GUARD_STUDENT: &str = include_str!("../../../guard/guard.student.json");

/// The policy file's format name and the versions this build reads.
const FORMAT: &str = "guard-policy";
const VERSION: u64 = 1;
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

/// The ask and deny cuts of one question.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cuts {
    /// Fires an ask.
    pub ask: Option<Cut>,
    /// Fires a deny.
    pub deny: Option<Cut>,
}

/// A hard rule: a regular expression over a tool call that makes the verdict
/// at least `verdict` (rules only ever tighten).
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its name, as reasons and logs give it.
    pub id: String,
    /// Which tools it looks at (every tool when `None`).
    pub tools: Option<Pattern>,
    /// Which argument it reads (`None`: the whole tool_input as compact JSON).
    pub field: Option<String>,
    /// What must match (`None`: the rule fires on the tool alone).
    pub pattern: Option<Pattern>,
    /// What, when it also matches, keeps the rule from firing.
    pub unless: Option<Pattern>,
    /// Fires when a path argument lies outside the call's cwd.
    pub outside_cwd: bool,
    /// With `outside_cwd`: paths matching this do not count.
    pub unless_path: Option<Pattern>,
    /// Ask or deny.
    pub verdict: Verdict,
    /// One line of why, for the reason.
    pub why: String,
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

/// A parsed, checked policy.
#[derive(Debug, Clone)]
pub struct Policy {
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
    pub on_error: Verdict,
    /// Whether an allow is printed (otherwise the hook stays silent).
    pub print_allow: bool,
    /// The judge's time budget in milliseconds.
    pub budget_ms: u64,
    /// The log, if any.
    pub log: Option<LogSpec>,
    /// The policy's own JSON with every default filled in (for check-policy).
    pub effective: Value,
}

/// A policy error: the key it is about and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyError {
    /// The key path, e.g. `rules[3].pattern`.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for PolicyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.key.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

fn err(key: impl Into<String>, message: impl Into<String>) -> PolicyError {
    PolicyError {
        key: key.into(),
        message: message.into(),
    }
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
    pub fn strictest_cut(&self) -> Verdict {
        if self.cuts.values().any(|c| c.deny.is_some()) {
            Verdict::Deny
        } else {
            Verdict::Ask
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
            ] {
                if let Some(p) = p {
                    p.check()
                        .map_err(|e| err(format!("rules[{i}] ({}).{name}", r.id), e))?;
                }
            }
        }
        Ok(())
    }

    /// Reads a policy file; relative paths in it resolve against its directory.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| err("", format!("cannot read {}: {e}", path.display())))?;
        Policy::parse(&text, path.parent())
    }

    /// Parses a policy over the built-in one: what the text names replaces the default.
    pub fn parse(text: &str, base: Option<&Path>) -> Result<Policy, PolicyError> {
        let user = crate::input::parse_json_text(crate::input::strip_bom(text))
            .map_err(|e| err("", format!("not JSON: {e}")))?;
        let user = user
            .as_object()
            .ok_or_else(|| err("", "a policy is a JSON object"))?;
        for k in user.keys() {
            if !KEYS.contains(&k.as_str()) && !k.starts_with('_') && !k.starts_with("x_") {
                return Err(err(
                    k.clone(),
                    format!("unknown key (known: {})", KEYS.join(", ")),
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
            Some(v) if v.as_u64() == Some(VERSION) => {}
            Some(v) => {
                return Err(err(
                    "version",
                    format!("{v} is not a version this toolnexus reads (it reads {VERSION})"),
                ));
            }
            None => {
                return Err(err(
                    "version",
                    format!("missing (this toolnexus reads {VERSION})"),
                ));
            }
        }

        let default: Value = serde_json::from_str(DEFAULT_POLICY)
            .map_err(|e| err("", format!("the built-in policy is not JSON: {e}")))?;
        let get = |k: &str| user.get(k).or_else(|| default.get(k)).cloned();

        // Questions: the user's replace the built-in ones, and then need their own cuts.
        let own_questions = user.contains_key("questions");
        let questions_value = match user.get("questions") {
            Some(q) => q.clone(),
            None => builtin_questions(),
        };
        let questions = parse_questions(&questions_value)?;

        let thresholds_verdict = match get("thresholds_verdict") {
            None => Verdict::Ask,
            Some(v) => tightening_verdict("thresholds_verdict", &v)?,
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
            Some(Value::String(p)) => Some(resolve(p, base)),
            Some(v) => return Err(err("thresholds", format!("must be a file path, not {v}"))),
        };
        if let Some(path) = &thresholds {
            let bands = crate::input::read_thresholds(path, Some(&questions))
                .map_err(|e| err("thresholds", format!("{e:#}")))?;
            for (k, b) in bands {
                let Some(q) = questions.get(&k) else { continue };
                if !matches!(q, Question::Noul(_)) {
                    continue;
                }
                let c = cuts.entry(k).or_default();
                let cut = Cut::Noul(b.high);
                match thresholds_verdict {
                    Verdict::Deny if c.deny.is_none() => c.deny = Some(cut),
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
            )?);
        }
        let own_rules = match (user.get("rules"), builtin_rules) {
            (Some(r), _) => r.clone(),
            (None, true) => default.get("rules").cloned().unwrap_or(json!([])),
            (None, false) => json!([]),
        };
        let own_are_builtin = text == DEFAULT_POLICY || !user.contains_key("rules");
        for r in parse_rules("rules", &own_rules, !own_are_builtin)? {
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
            None => Verdict::Ask,
            Some(v) => tightening_verdict("on_error", &v)?,
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

        let mut effective = Map::new();
        effective.insert("toolnexus".into(), json!(FORMAT));
        effective.insert("version".into(), json!(VERSION));
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

        Ok(Policy {
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
        })
    }
}

fn parse_questions(v: &Value) -> Result<Questions, PolicyError> {
    let obj = v
        .as_object()
        .ok_or_else(|| err("questions", "must be an object of key -> wire question"))?;
    if obj.is_empty() {
        return Err(err("questions", "names no question"));
    }
    crate::input::parse_questions("questions", v).map_err(|e| {
        let text = format!("{e:#}");
        let text = text
            .strip_prefix("questions: ")
            .unwrap_or(&text)
            .to_string();
        err("questions", text)
    })
}

fn tightening_verdict(key: &str, v: &Value) -> Result<Verdict, PolicyError> {
    match v.as_str() {
        Some("ask") => Ok(Verdict::Ask),
        Some("deny") => Ok(Verdict::Deny),
        Some("allow") => Err(err(
            key,
            "must be ask or deny: a guard never lets a call through because it failed or a rule matched",
        )),
        _ => Err(err(key, format!("must be \"ask\" or \"deny\", not {v}"))),
    }
}

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

fn rule_json(r: &Rule) -> Value {
    let mut o = Map::new();
    o.insert("id".into(), json!(r.id));
    if let Some(t) = &r.tools {
        o.insert("tools".into(), json!(t.as_str()));
    }
    if let Some(f) = &r.field {
        o.insert("field".into(), json!(f));
    }
    if let Some(p) = &r.pattern {
        o.insert("pattern".into(), json!(p.as_str()));
    }
    if let Some(u) = &r.unless {
        o.insert("unless".into(), json!(u.as_str()));
    }
    if r.outside_cwd {
        o.insert("outside_cwd".into(), json!(true));
    }
    if let Some(u) = &r.unless_path {
        o.insert("unless_path".into(), json!(u.as_str()));
    }
    o.insert("verdict".into(), json!(r.verdict.as_str()));
    o.insert("why".into(), json!(r.why));
    Value::Object(o)
}

fn string_list(key: &str, v: &Value) -> Result<Vec<String>, PolicyError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(key, format!("must be an array of strings, not {v}")))?;
    a.iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_str()
                .map(str::to_string)
                .ok_or_else(|| err(format!("{key}[{i}]"), format!("must be a string, not {x}")))
        })
        .collect()
}

/// A rule's regular expression: its syntax checked when the policy is read,
/// compiled on first use. A hook compiles only what the call in front of it
/// needs (a Bash command never builds the Write rules' automata).
#[derive(Debug)]
pub struct Pattern {
    source: String,
    /// Every match starts with one of these (when the set is small and known):
    /// a text holding none of them cannot match, and nothing is compiled.
    /// Found on first use, like the automaton.
    needles: OnceLock<Option<Vec<Vec<u8>>>>,
    compiled: OnceLock<Option<Regex>>,
}

impl Clone for Pattern {
    fn clone(&self) -> Pattern {
        Pattern {
            source: self.source.clone(),
            needles: self.needles.clone(),
            compiled: OnceLock::new(),
        }
    }
}

impl Pattern {
    /// The expression as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether it matches; `None` when it cannot be built (over the size limit).
    pub fn matches(&self, text: &[u8]) -> Option<bool> {
        if let Some(needles) = self
            .needles
            .get_or_init(|| builtin_needles(&self.source).unwrap_or_else(|| needles(&self.source)))
            && !needles
                .iter()
                .any(|n| memchr::memmem::find(text, n).is_some())
        {
            return Some(false);
        }
        self.compiled
            .get_or_init(|| build(&self.source).ok())
            .as_ref()
            .map(|r| r.is_match(text))
    }

    /// Builds it now: the size limit is the one error the syntax check cannot see.
    pub fn check(&self) -> Result<(), String> {
        build(&self.source).map(|_| ())
    }
}

/// ASCII classes (`\w`, `\s`, `\b`, `(?i)`) over the text's bytes: commands,
/// paths and URLs are matched as bytes, and Unicode classes cost several times
/// as much to build.
fn build(source: &str) -> Result<Regex, String> {
    regex::bytes::RegexBuilder::new(source)
        .unicode(false)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            let text = e.to_string();
            text.lines().last().unwrap_or(&text).trim().to_string()
        })
}

include!(concat!(env!("OUT_DIR"), "/builtin_needles.rs"));

/// The needles of a built-in expression, worked out at build time (build.rs).
fn builtin_needles(source: &str) -> Option<Option<Vec<Vec<u8>>>> {
    let i = BUILTIN_NEEDLES
        .binary_search_by(|(s, _)| (*s).cmp(source))
        .ok()?;
    Some(
        BUILTIN_NEEDLES[i]
            .1
            .map(|list| list.iter().map(|n| n.to_vec()).collect()),
    )
}

fn regex(key: &str, v: Option<&Value>, check: bool) -> Result<Option<Pattern>, PolicyError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) if !check => Ok(Some(Pattern {
            source: s.clone(),
            needles: OnceLock::new(),
            compiled: OnceLock::new(),
        })),
        Some(Value::String(s)) => {
            regex_syntax::ParserBuilder::new()
                .unicode(false)
                .utf8(false)
                .build()
                .parse(s)
                .map_err(|e| {
                    let text = e.to_string();
                    let last = text.lines().last().unwrap_or(&text).trim().to_string();
                    err(key, format!("not a regular expression: {last}"))
                })?;
            Ok(Some(Pattern {
                source: s.clone(),
                needles: OnceLock::new(),
                compiled: OnceLock::new(),
            }))
        }
        Some(v) => Err(err(
            key,
            format!("must be a regular expression (a string), not {v}"),
        )),
    }
}

const RULE_KEYS: &[&str] = &[
    "id",
    "tools",
    "field",
    "pattern",
    "unless",
    "outside_cwd",
    "unless_path",
    "verdict",
    "why",
];

/// `check`: the expressions' syntax is checked now (a user's rules); the
/// built-in rules are compiled in tests instead, so a hook does not pay for it.
fn parse_rules(key: &str, v: &Value, check: bool) -> Result<Vec<Rule>, PolicyError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(key, "must be an array of rules"))?;
    let mut out: Vec<Rule> = Vec::new();
    for (i, r) in a.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let o = r
            .as_object()
            .ok_or_else(|| err(&at, "a rule is an object {id, tools?, field?, pattern?, unless?, outside_cwd?, unless_path?, verdict, why}"))?;
        for k in o.keys() {
            if !RULE_KEYS.contains(&k.as_str()) && !k.starts_with('_') {
                return Err(err(
                    format!("{at}.{k}"),
                    format!("unknown key (known: {})", RULE_KEYS.join(", ")),
                ));
            }
        }
        let id = match o.get("id") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
            _ => return Err(err(format!("{at}.id"), "missing: every rule has a name")),
        };
        let at = format!("{key}[{i}] ({id})");
        if out.iter().any(|x| x.id == id) {
            return Err(err(format!("{at}.id"), "used by an earlier rule"));
        }
        let verdict = tightening_verdict(
            &format!("{at}.verdict"),
            o.get("verdict").unwrap_or(&Value::Null),
        )
        .map_err(|e| match o.get("verdict").and_then(Value::as_str) {
            Some("allow") => err(
                e.key,
                "rules can only make a verdict stricter: ask or deny, never allow",
            ),
            _ => e,
        })?;
        let field = match o.get("field") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(v) => {
                return Err(err(
                    format!("{at}.field"),
                    format!("must be an argument name, not {v}"),
                ));
            }
        };
        let outside_cwd = match o.get("outside_cwd") {
            None => false,
            Some(Value::Bool(b)) => *b,
            Some(v) => {
                return Err(err(
                    format!("{at}.outside_cwd"),
                    format!("must be true or false, not {v}"),
                ));
            }
        };
        let rule = Rule {
            tools: regex(&format!("{at}.tools"), o.get("tools"), check)?,
            pattern: regex(&format!("{at}.pattern"), o.get("pattern"), check)?,
            unless: regex(&format!("{at}.unless"), o.get("unless"), check)?,
            unless_path: regex(&format!("{at}.unless_path"), o.get("unless_path"), check)?,
            why: match o.get("why") {
                None => format!("matched rule {id}"),
                Some(Value::String(s)) => s.clone(),
                Some(v) => {
                    return Err(err(
                        format!("{at}.why"),
                        format!("must be a string, not {v}"),
                    ));
                }
            },
            id,
            field,
            outside_cwd,
            verdict,
        };
        if rule.tools.is_none() && rule.pattern.is_none() && !rule.outside_cwd {
            return Err(err(
                at,
                "matches every call: give it tools, a pattern or outside_cwd",
            ));
        }
        if rule.outside_cwd && rule.pattern.is_some() {
            return Err(err(
                format!("{at}.pattern"),
                "an outside_cwd rule matches paths; use unless_path to exempt some",
            ));
        }
        out.push(rule);
    }
    Ok(out)
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
        Some(Value::String(p)) if !p.trim().is_empty() => resolve(p, base),
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

/// A path from a policy: `~/` is the home directory (the default log is
/// under `$XDG_STATE_HOME` when that is set); relative paths are the policy
/// file's neighbours.
fn resolve(p: &str, base: Option<&Path>) -> PathBuf {
    if let Some(rest) = p.strip_prefix("~/") {
        if let Some(rest) = rest.strip_prefix(".local/state/")
            && let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty())
        {
            return PathBuf::from(state).join(rest);
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            return PathBuf::from(home).join(rest);
        }
    }
    let path = PathBuf::from(p);
    match base {
        Some(b) if path.is_relative() => b.join(path),
        _ => path,
    }
}

/// A content's text (structured content as compact JSON).
pub fn content_text(c: &toolnexus::classifier::Content) -> String {
    match c.as_str() {
        Some(s) => s.to_string(),
        None => c.as_value().to_string(),
    }
}

/// Argument names that hold a path a tool reads or writes.
const PATH_ARGS: &[&str] = &[
    "file_path",
    "path",
    "notebook_path",
    "source",
    "destination",
];

impl Rule {
    /// Whether the rule fires on a call; `whole` is the call's tool_input as
    /// compact JSON (computed once for all rules).
    pub fn fires(&self, call: &super::ToolCall, whole: &str) -> bool {
        if let Some(t) = &self.tools
            && t.matches(call.tool_name.as_bytes()) == Some(false)
        {
            return false;
        }
        if self.outside_cwd {
            let Some(cwd) = call.cwd.as_deref() else {
                return false;
            };
            return PATH_ARGS
                .iter()
                .filter_map(|k| call.tool_input.get(*k)?.as_str())
                .map(|p| absolute(cwd, p))
                .any(|p| {
                    !inside(cwd, &p)
                        && self
                            .unless_path
                            .as_ref()
                            .is_none_or(|u| u.matches(p.as_bytes()) != Some(true))
                });
        }
        let owned;
        let text: &str = match &self.field {
            None => whole,
            Some(f) => match call.tool_input.get(f) {
                Some(Value::String(s)) => s,
                Some(v) => {
                    owned = v.to_string();
                    &owned
                }
                None => return false,
            },
        };
        if let Some(p) = &self.pattern
            && p.matches(text.as_bytes()) == Some(false)
        {
            return false;
        }
        self.unless
            .as_ref()
            .is_none_or(|u| u.matches(text.as_bytes()) != Some(true))
    }
}

/// `p` made absolute against `cwd` and normalised lexically (`.` and `..`
/// resolved; the file system is not consulted). `~` stays as written, which is
/// outside any cwd.
fn absolute(cwd: &str, p: &str) -> String {
    let joined = if p.starts_with('/') || p.starts_with('~') {
        p.to_string()
    } else {
        format!("{}/{p}", cwd.trim_end_matches('/'))
    };
    if joined.starts_with('~') {
        return joined;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    format!("/{}", parts.join("/"))
}

fn inside(cwd: &str, abs: &str) -> bool {
    let root = absolute("/", cwd);
    let root = root.trim_end_matches('/');
    abs == root || root.is_empty() || abs.starts_with(&format!("{root}/"))
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
        assert_eq!(p.on_error, Verdict::Ask);
    }

    #[test]
    fn every_builtin_expression_has_its_needles_from_the_build() {
        let p = Policy::builtin().unwrap();
        let mut seen = 0;
        for r in &p.rules {
            for x in [&r.tools, &r.pattern, &r.unless, &r.unless_path]
                .into_iter()
                .flatten()
            {
                let built = builtin_needles(x.as_str());
                assert_eq!(built, Some(needles(x.as_str())), "{}", x.as_str());
                seen += 1;
            }
        }
        assert!(seen > 60, "{seen}");
        assert_eq!(builtin_needles("not (a built-in) expression"), None);
    }

    #[test]
    fn paths_are_resolved_lexically_against_the_cwd() {
        assert_eq!(absolute("/home/a/p", "src/x.rs"), "/home/a/p/src/x.rs");
        assert_eq!(absolute("/home/a/p", "../q/x"), "/home/a/q/x");
        assert!(inside("/home/a/p", "/home/a/p/src"));
        assert!(!inside("/home/a/p", "/home/a/pq/src"));
        assert!(!inside(
            "/home/a/p",
            &absolute("/home/a/p", "~/.ssh/id_rsa")
        ));
    }

    #[test]
    fn a_pattern_is_skipped_only_when_no_match_is_possible() {
        let p = |src: &str| regex("k", Some(&json!(src)), true).unwrap().unwrap();
        let push = p(r"git\s+push\b.*--force");
        assert!(needles(push.as_str()).is_some());
        assert_eq!(push.matches(b"cargo test"), Some(false));
        assert!(push.compiled.get().is_none(), "nothing was compiled");
        assert_eq!(push.matches(b"git  push origin --force"), Some(true));
        let ci = p(r"(?i)\bdrop\s+table");
        assert_eq!(ci.matches(b"DROP TABLE x"), Some(true));
        assert_eq!(ci.matches(b"Drop Table x"), Some(true));
        // Optional leading classes widen the needles; matches are unchanged.
        let anchored = p(r"^\s*(printenv|env)\s*$");
        assert_eq!(anchored.matches(b"  env"), Some(true));
        assert_eq!(anchored.matches(b"env"), Some(true));
        assert_eq!(anchored.matches(b"ls"), Some(false));
        // A class at the start with no bound: no needles, always compiled.
        let open = p(r"[^x]+y");
        assert!(needles(open.as_str()).is_none());
        assert_eq!(open.matches(b"aay"), Some(true));
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
            bad(r#"{"toolnexus":"guard-policy","version":2}"#),
            "version"
        );
    }
}
