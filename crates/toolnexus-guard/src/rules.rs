//! A policy's hard rules, each making the permission at least ask or deny
//! (rules only ever tighten). Version 1's rules are regular expressions over
//! a tool call's text; version 2 (SPEC §21) adds matchers over what the call
//! does: the `commands` it runs (names after the shell's normalisation, or
//! `name sub`), their `capabilities` (the shell reader's tables, see
//! [`crate::shell::effects`]), the `paths` they reach (globs, see
//! [`Glob`]), each command's `args`, and `fields` for other tools. Every
//! matcher a rule names must hold, for one and the same command. An
//! expression's syntax is checked when a user's policy is read, and it is
//! compiled on first use, as an ASCII byte expression, only when one of its
//! literal prefixes (its needles) is in the text.

use std::sync::OnceLock;

use regex::bytes::Regex;
use serde_json::{Map, Value, json};

use crate::call::{PATH_ARGS, Reading, ToolCall};
use crate::fields::{PolicyError, err, string_list, tightening};
use crate::needles::needles;
use crate::paths::{Glob, Reached, absolute, inside};
use crate::permission::Permission;
use crate::shell::Capability;

/// A hard rule: a regular expression over a tool call that makes the
/// permission at least `permission` (rules only ever tighten).
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
    pub permission: Permission,
    /// One line of why, for the reason.
    pub why: String,
    /// Version 2: the arguments `pattern` reads (any of them may match).
    pub fields: Vec<String>,
    /// Version 2: the commands it is about: a name after normalisation
    /// (`rm`), or a name and its subcommand (`git push`).
    pub commands: Vec<String>,
    /// Version 2: the capabilities it is about (any of them).
    pub capabilities: Vec<Capability>,
    /// Version 2: the paths it is about (any of them), resolved against the
    /// call's cwd and home.
    pub paths: Vec<Glob>,
    /// Version 2: a regular expression over each command's arguments, joined
    /// by single spaces.
    pub args: Option<Pattern>,
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
    /// A `tools` list without a `*`: the names its expression matches whole,
    /// compared as they are. A hook checks every rule's tools against the
    /// call's tool; building an automaton for each cost more than the rest of
    /// reading the policy.
    exact: Option<Vec<Vec<u8>>>,
}

impl Clone for Pattern {
    fn clone(&self) -> Pattern {
        Pattern {
            source: self.source.clone(),
            needles: self.needles.clone(),
            compiled: OnceLock::new(),
            exact: self.exact.clone(),
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
        if let Some(names) = &self.exact {
            return Some(names.iter().any(|n| n == text));
        }
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
    pub fn check(&self) -> Result<(), PatternError> {
        build(&self.source).map(|_| ())
    }
}

/// ASCII classes (`\w`, `\s`, `\b`, `(?i)`) over the text's bytes: commands,
/// paths and URLs are matched as bytes, and Unicode classes cost several times
/// as much to build.
fn build(source: &str) -> Result<Regex, PatternError> {
    regex::bytes::RegexBuilder::new(source)
        .unicode(false)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            let text = e.to_string();
            PatternError(text.lines().last().unwrap_or(&text).trim().to_string())
        })
}

/// Why an expression cannot be built (its last line: over the size limit, or
/// a syntax the reader let through).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct PatternError(String);

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

/// The expression under `key`, if any: with `check`, its syntax is checked
/// now (a user's rules); the built-in rules are checked by a test instead.
pub(crate) fn regex(
    key: &str,
    v: Option<&Value>,
    check: bool,
) -> Result<Option<Pattern>, PolicyError> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) if !check => Ok(Some(Pattern {
            source: s.clone(),
            needles: OnceLock::new(),
            compiled: OnceLock::new(),
            exact: None,
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
                exact: None,
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

/// The keys version 2 adds to a rule.
const RULE_KEYS_V2: &[&str] = &["fields", "commands", "capabilities", "paths", "args"];

/// A version 2 `tools`: a regular expression (as in version 1), or a list of
/// tool names where `*` stands for any run of characters (`mcp__*`).
fn tools_matcher(
    key: &str,
    v: Option<&Value>,
    check: bool,
) -> Result<Option<Pattern>, PolicyError> {
    match v {
        Some(Value::Array(_)) => {
            let names = string_list(key, v.unwrap_or(&Value::Null))?;
            if names.is_empty() {
                return Err(err(key, "names no tool"));
            }
            let alternatives: Vec<String> = names
                .iter()
                .map(|n| {
                    n.split('*')
                        .map(regex_syntax::escape)
                        .collect::<Vec<_>>()
                        .join(".*")
                })
                .collect();
            let source = format!("^(?:{})$", alternatives.join("|"));
            let mut pattern = regex(key, Some(&Value::String(source)), check)?;
            // `^(?:a|b)$` over bytes matches a text equal to one name and
            // nothing else: no automaton is needed to say so.
            if let Some(p) = &mut pattern
                && !names.iter().any(|n| n.contains('*'))
            {
                p.exact = Some(names.iter().map(|n| n.as_bytes().to_vec()).collect());
            }
            Ok(pattern)
        }
        _ => regex(key, v, check),
    }
}

/// `check`: the expressions' syntax is checked now (a user's rules); the
/// built-in rules are compiled in tests instead, so a hook does not pay for it.
/// `version` 2 reads the matchers over what a call does too.
pub(crate) fn parse_rules(
    key: &str,
    v: &Value,
    check: bool,
    version: u64,
) -> Result<Vec<Rule>, PolicyError> {
    let a = v
        .as_array()
        .ok_or_else(|| err(key, "must be an array of rules"))?;
    let mut out: Vec<Rule> = Vec::new();
    for (i, r) in a.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let o = r
            .as_object()
            .ok_or_else(|| err(&at, "a rule is an object {id, tools?, field?, pattern?, unless?, outside_cwd?, unless_path?, verdict, why}"))?;
        let v2 = version >= 2;
        for k in o.keys() {
            let known =
                RULE_KEYS.contains(&k.as_str()) || (v2 && RULE_KEYS_V2.contains(&k.as_str()));
            if !known && !k.starts_with('_') {
                let mut all = RULE_KEYS.to_vec();
                if v2 {
                    all.extend_from_slice(RULE_KEYS_V2);
                }
                return Err(err(
                    format!("{at}.{k}"),
                    format!("unknown key (known: {})", all.join(", ")),
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
        let permission = tightening(
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
        let list = |k: &str| -> Result<Vec<String>, PolicyError> {
            match o.get(k) {
                None | Some(Value::Null) => Ok(Vec::new()),
                Some(v) => {
                    let l = string_list(&format!("{at}.{k}"), v)?;
                    if l.is_empty() || l.iter().any(|x| x.trim().is_empty()) {
                        return Err(err(
                            format!("{at}.{k}"),
                            "an empty list or name matches nothing: leave the key out",
                        ));
                    }
                    Ok(l)
                }
            }
        };
        let capabilities = list("capabilities")?
            .iter()
            .enumerate()
            .map(|(j, c)| {
                c.parse::<Capability>()
                    .map_err(|e| err(format!("{at}.capabilities[{j}]"), e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let rule = Rule {
            fields: list("fields")?,
            commands: list("commands")?
                .into_iter()
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect(),
            capabilities,
            paths: list("paths")?.iter().map(|g| Glob::new(g)).collect(),
            args: regex(&format!("{at}.args"), o.get("args"), check)?,
            tools: if v2 {
                tools_matcher(&format!("{at}.tools"), o.get("tools"), check)?
            } else {
                regex(&format!("{at}.tools"), o.get("tools"), check)?
            },
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
            permission,
        };
        if rule.tools.is_none() && rule.pattern.is_none() && !rule.outside_cwd && !rule.on_effects()
        {
            return Err(err(
                at,
                if v2 {
                    "matches every call: give it commands, capabilities, paths, args, tools, a pattern or outside_cwd"
                } else {
                    "matches every call: give it tools, a pattern or outside_cwd"
                },
            ));
        }
        if rule.field.is_some() && !rule.fields.is_empty() {
            return Err(err(
                format!("{at}.fields"),
                "give field or fields, not both",
            ));
        }
        if rule.outside_cwd && rule.on_effects() {
            return Err(err(
                format!("{at}.outside_cwd"),
                "an outside_cwd rule matches a file tool's paths; for commands use paths",
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

/// A rule as the policy file spells it (for the effective policy).
pub(crate) fn rule_json(r: &Rule) -> Value {
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
    if !r.fields.is_empty() {
        o.insert("fields".into(), json!(r.fields));
    }
    if !r.commands.is_empty() {
        o.insert("commands".into(), json!(r.commands));
    }
    if !r.capabilities.is_empty() {
        o.insert(
            "capabilities".into(),
            json!(
                r.capabilities
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
            ),
        );
    }
    if !r.paths.is_empty() {
        o.insert(
            "paths".into(),
            json!(r.paths.iter().map(|g| g.as_str()).collect::<Vec<_>>()),
        );
    }
    if let Some(a) = &r.args {
        o.insert("args".into(), json!(a.as_str()));
    }
    o.insert("verdict".into(), json!(r.permission.as_str()));
    o.insert("why".into(), json!(r.why));
    Value::Object(o)
}

impl Rule {
    /// Whether it has a matcher over what a call does (commands,
    /// capabilities, paths or args: version 2).
    pub fn on_effects(&self) -> bool {
        !self.commands.is_empty()
            || !self.capabilities.is_empty()
            || !self.paths.is_empty()
            || self.args.is_some()
    }

    /// Whether the rule fires on a call; `whole` is the call's tool_input as
    /// compact JSON (computed once for all rules), `reading` what the call
    /// does (read once for all rules).
    pub fn fires(&self, call: &ToolCall, whole: &str, reading: &Reading) -> bool {
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
        let effects = self.on_effects();
        if self.pattern.is_some() || !effects {
            let owned;
            let text: &str = if !self.fields.is_empty() {
                let found: Vec<String> = self
                    .fields
                    .iter()
                    .filter_map(|f| call.tool_input.get(f))
                    .map(|v| match v {
                        Value::String(s) => s.clone(),
                        v => v.to_string(),
                    })
                    .collect();
                if found.is_empty() {
                    return false;
                }
                owned = found.join("\n");
                &owned
            } else {
                match &self.field {
                    None => whole,
                    Some(f) => match call.tool_input.get(f) {
                        Some(Value::String(s)) => s,
                        Some(v) => {
                            owned = v.to_string();
                            &owned
                        }
                        None => return false,
                    },
                }
            };
            if let Some(p) = &self.pattern
                && p.matches(text.as_bytes()) == Some(false)
            {
                return false;
            }
            if self
                .unless
                .as_ref()
                .is_some_and(|u| u.matches(text.as_bytes()) == Some(true))
            {
                return false;
            }
            if !effects {
                return true;
            }
        } else if reading.command_text.is_none()
            && self
                .unless
                .as_ref()
                .is_some_and(|u| u.matches(whole.as_bytes()) == Some(true))
        {
            return false;
        }
        self.fires_on_effects(reading)
    }

    /// Whether one path matches a glob, as written resolved or through its symlinks.
    fn path_matches(&self, r: &Reached, below: bool, reading: &Reading) -> bool {
        let home = reading.home.as_deref();
        self.paths.iter().any(|g| {
            [&r.lexical, &r.real].iter().any(|p| {
                g.matches(p, &reading.cwd, home) || (below && g.reaches(p, &reading.cwd, home))
            })
        })
    }

    /// The version 2 matchers: for a command-running tool, one command
    /// meets them all; for another tool, its capabilities and paths do.
    fn fires_on_effects(&self, reading: &Reading) -> bool {
        if reading.command_text.is_none() {
            if !self.commands.is_empty() || self.args.is_some() {
                return false;
            }
            let caps = self.capabilities.is_empty()
                || reading
                    .tool_capabilities
                    .iter()
                    .any(|c| self.capabilities.contains(c));
            return caps
                && (self.paths.is_empty()
                    || reading
                        .tool_paths
                        .iter()
                        .any(|(r, below)| self.path_matches(r, *below, reading)));
        }
        reading.commands.iter().any(|c| {
            if !self.commands.is_empty() && !self.commands.iter().any(|e| c.is(e)) {
                return false;
            }
            if let Some(a) = &self.args
                && a.matches(c.args_text.as_bytes()) == Some(false)
            {
                return false;
            }
            if self.pattern.is_none()
                && let Some(u) = &self.unless
            {
                let line = format!("{} {}", c.command.name, c.args_text);
                if u.matches(line.trim_end().as_bytes()) == Some(true) {
                    return false;
                }
            }
            if !self.capabilities.is_empty() {
                return c.effects.iter().any(|(cap, paths)| {
                    self.capabilities.contains(cap)
                        && (self.paths.is_empty()
                            || paths.iter().any(|p| self.path_matches(p, false, reading)))
                });
            }
            self.paths.is_empty() || c.paths.iter().any(|p| self.path_matches(p, false, reading))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in policy's own rules, read as a hook reads them (unchecked).
    fn builtin_rules() -> Vec<Rule> {
        let policy: Value = serde_json::from_str(include_str!("../data/policy.json")).unwrap();
        parse_rules("rules", &policy["rules"], false, 2).unwrap()
    }

    #[test]
    fn every_builtin_expression_builds_and_has_its_needles_from_the_build() {
        let mut seen = 0;
        for r in &builtin_rules() {
            for x in [&r.tools, &r.pattern, &r.unless, &r.unless_path, &r.args]
                .into_iter()
                .flatten()
            {
                x.check().unwrap();
                let built = builtin_needles(x.as_str());
                assert_eq!(built, Some(needles(x.as_str())), "{}", x.as_str());
                seen += 1;
            }
        }
        assert!(seen > 60, "{seen}");
        assert_eq!(builtin_needles("not (a built-in) expression"), None);
    }

    #[test]
    fn a_tools_list_is_compared_by_name_exactly_as_its_expression_matches() {
        let list = json!(["Bash", "mcp__x__run", "Read.me", "Wr(i)te", "Édit"]);
        let p = tools_matcher("tools", Some(&list), true).unwrap().unwrap();
        assert!(p.exact.is_some());
        let re = build(p.as_str()).unwrap();
        for text in [
            "Bash",
            "bash",
            "Bash\n",
            " Bash",
            "BashX",
            "mcp__x__run",
            "mcp__x__runs",
            "Read.me",
            "ReadXme",
            "Wr(i)te",
            "Write",
            "Édit",
            "",
            "Bash|Read.me",
        ] {
            assert_eq!(
                p.matches(text.as_bytes()),
                Some(re.is_match(text.as_bytes())),
                "{text:?}"
            );
        }
        assert!(p.compiled.get().is_none(), "nothing was compiled");
        // A `*` keeps the expression.
        let glob = tools_matcher("tools", Some(&json!(["mcp__*"])), true)
            .unwrap()
            .unwrap();
        assert!(glob.exact.is_none());
        assert_eq!(glob.matches(b"mcp__a__b"), Some(true));
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
    fn an_outside_cwd_rule_reads_paths_lexically() {
        let rules = parse_rules(
            "rules",
            &json!([{"id": "out", "outside_cwd": true, "unless_path": "^/tmp/", "verdict": "ask"}]),
            true,
            1,
        )
        .unwrap();
        let call = |path: &str| ToolCall {
            tool_name: "Write".into(),
            tool_input: json!({"file_path": path}).as_object().cloned().unwrap(),
            cwd: Some("/home/a/p".into()),
        };
        let fires = |c: &ToolCall| rules[0].fires(c, "", &Reading::new(c).unwrap());
        assert!(!fires(&call("src/x.rs")));
        assert!(fires(&call("../q/x.rs")));
        assert!(!fires(&call("/tmp/scratch")));
    }
}
