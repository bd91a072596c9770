//! A tool call read for the rules: the commands a command-running tool runs
//! (parsed as the shell would, with their effects and the paths they reach,
//! resolved), or the paths a file tool reaches and what it does to them.

use serde_json::{Map, Value, json};

use crate::paths::{self, Reached};
use crate::shell::{self, Capability};

use super::ToolCall;

/// The directory relative paths resolve under when a call names no cwd.
pub const NO_CWD: &str = "/<no cwd>";

/// The arguments an MCP tool may hold a command in, first found first.
pub const COMMAND_FIELDS: &[&str] = &["command", "cmd", "script"];

/// Argument names that hold a path a tool reads or writes.
pub const PATH_ARGS: &[&str] = &[
    "file_path",
    "path",
    "notebook_path",
    "source",
    "destination",
];

/// The agent's built-in tools and their arguments (Claude Code's): a rule
/// on a field none of the tools it names has can never fire.
pub const KNOWN_TOOLS: &[(&str, &[&str])] = &[
    (
        "Bash",
        &["command", "description", "timeout", "run_in_background"],
    ),
    ("Read", &["file_path", "offset", "limit"]),
    ("Write", &["file_path", "content"]),
    (
        "Edit",
        &["file_path", "old_string", "new_string", "replace_all"],
    ),
    ("MultiEdit", &["file_path", "edits"]),
    ("NotebookRead", &["notebook_path", "cell_id"]),
    (
        "NotebookEdit",
        &[
            "notebook_path",
            "cell_id",
            "new_source",
            "cell_type",
            "edit_mode",
        ],
    ),
    (
        "Grep",
        &[
            "pattern",
            "path",
            "glob",
            "type",
            "output_mode",
            "-i",
            "-n",
            "-A",
            "-B",
            "-C",
            "head_limit",
            "multiline",
        ],
    ),
    ("Glob", &["pattern", "path"]),
    ("LS", &["path", "ignore"]),
    ("WebFetch", &["url", "prompt"]),
    (
        "WebSearch",
        &["query", "allowed_domains", "blocked_domains"],
    ),
    ("Task", &["description", "prompt", "subagent_type"]),
    ("TodoWrite", &["todos"]),
    ("BashOutput", &["bash_id", "filter"]),
    ("KillShell", &["shell_id"]),
    ("ExitPlanMode", &["plan"]),
];

/// Tools that only read, judged on the paths they reach (a directory reaches
/// everything under it).
pub const READING_TOOLS: &[&str] = &["Read", "Grep", "Glob", "LS", "NotebookRead"];

/// Tools that write the file they name.
pub const WRITING_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// Why a call cannot be read for the rules: the hook answers `on_error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReadError {
    /// A command-running tool whose command is missing or not a string.
    #[error("{tool}'s {field} must be a command (a string), not {kind}")]
    Command {
        /// The tool.
        tool: String,
        /// The argument.
        field: String,
        /// The JSON kind found (`a number`, `missing`).
        kind: &'static str,
    },
}

/// One command the call runs, read.
#[derive(Debug, Clone)]
pub struct CommandRead {
    /// The command as the shell reader gave it.
    pub command: shell::Command,
    /// Its subcommand: the first argument that is not an option (git's
    /// global options, `-C dir`, `-c k=v`, `--git-dir …`, skipped as git does).
    pub sub: Option<String>,
    /// Its arguments as one line (single spaces), what a rule's `args` reads.
    pub args_text: String,
    /// Its effects, each with the paths it applies to, resolved.
    pub effects: Vec<(Capability, Vec<Reached>)>,
    /// Every path it touches, resolved.
    pub paths: Vec<Reached>,
}

impl CommandRead {
    /// `name` or `name sub`: whether a rule's `commands` entry names it
    /// (see [`Reading::new`] for an example).
    pub fn is(&self, entry: &str) -> bool {
        match entry.split_once(' ') {
            None => self.command.name == entry,
            Some((name, sub)) => {
                self.command.name == name && self.sub.as_deref() == Some(sub.trim())
            }
        }
    }
}

/// A tool call read for the rules.
#[derive(Debug, Clone)]
pub struct Reading {
    /// The working directory paths resolve against (`/<no cwd>` when the call has none).
    pub cwd: String,
    /// The home directory, when known.
    pub home: Option<String>,
    /// The command text, for a tool that runs one.
    pub command_text: Option<String>,
    /// The commands it runs (empty for other tools).
    pub commands: Vec<CommandRead>,
    /// What the shell reader could not read, each naming it.
    pub unread: Vec<String>,
    /// For other tools: what the tool does (read for Read, Grep…; write for
    /// Write, Edit…).
    pub tool_capabilities: Vec<Capability>,
    /// For other tools: the paths it reaches, each with whether everything
    /// under it is reached too (a directory a reading tool searches).
    pub tool_paths: Vec<(Reached, bool)>,
}

/// The value's JSON kind, as errors name it.
fn kind(v: Option<&Value>) -> &'static str {
    match v {
        None => "missing",
        Some(v) => crate::json::kind(v),
    }
}

/// The first argument that is not an option; for git, past its global
/// options, as git reads them.
fn subcommand(c: &shell::Command) -> Option<String> {
    let mut args = c.args.iter().map(String::as_str);
    let at = if c.name == "git" {
        shell::git_subcommand_in(args)?
    } else {
        args.position(|a| !a.starts_with('-'))?
    };
    c.args.get(at).cloned()
}

impl Reading {
    /// Reads `call` (its fields as the rules see them). A command-running
    /// tool whose command is not a string is an error.
    ///
    /// ```
    /// use serde_json::json;
    /// use toolnexus_guard::{Reading, ToolCall};
    /// let call = ToolCall {
    ///     tool_name: "Bash".into(),
    ///     tool_input: json!({"command": "git -C . push -f origin main"}).as_object().cloned().unwrap_or_default(),
    ///     cwd: Some("/w/p".into()),
    /// };
    /// let r = Reading::new(&call)?;
    /// assert_eq!(r.commands[0].command.name, "git");
    /// assert!(r.commands[0].is("git push"));
    /// # Ok::<(), toolnexus_guard::ReadError>(())
    /// ```
    pub fn new(call: &ToolCall) -> Result<Reading, ReadError> {
        // Without a cwd a relative path is under no directory the policy
        // names (never `/`, where `build` would read as a system directory);
        // the hook refuses such a call before it gets here.
        let cwd = call.cwd.clone().unwrap_or_else(|| NO_CWD.to_string());
        let home = paths::home();
        let mut r = Reading {
            cwd,
            home,
            command_text: None,
            commands: Vec::new(),
            unread: Vec::new(),
            tool_capabilities: Vec::new(),
            tool_paths: Vec::new(),
        };
        if let Some(text) = command_of(call)? {
            r.read_command(&text);
            r.command_text = Some(text);
        } else {
            r.read_tool(call);
        }
        Ok(r)
    }

    fn resolve(&self, p: &str) -> Reached {
        paths::resolve(&self.cwd, self.home.as_deref(), p)
    }

    fn read_command(&mut self, text: &str) {
        let script = shell::parse(text);
        self.unread = script.unread.into_iter().map(|u| u.reason).collect();
        for c in script.commands {
            let effects = shell::effects(&c)
                .into_iter()
                .map(|e| {
                    let paths = e.paths.iter().map(|p| self.resolve(p)).collect();
                    (e.capability, paths)
                })
                .collect();
            let paths = c.paths().iter().map(|p| self.resolve(p)).collect();
            self.commands.push(CommandRead {
                sub: subcommand(&c),
                args_text: c.args.join(" "),
                effects,
                paths,
                command: c,
            });
        }
    }

    fn read_tool(&mut self, call: &ToolCall) {
        let tool = call.tool_name.as_str();
        let input = &call.tool_input;
        let strings = |k: &str| -> Vec<String> {
            match input.get(k) {
                Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect(),
                _ => Vec::new(),
            }
        };
        let mut found: Vec<String> = PATH_ARGS.iter().flat_map(|k| strings(k)).collect();
        found.extend(strings("paths"));
        let recursive = matches!(tool, "Grep" | "Glob" | "LS");
        if recursive {
            let base = strings("path")
                .into_iter()
                .next()
                .unwrap_or_else(|| ".".into());
            if tool == "Glob"
                && let Some(root) = strings("pattern").first().and_then(|p| pattern_root(p))
            {
                found.push(
                    if root.starts_with('/') || root.starts_with('~') || root.starts_with('$') {
                        root
                    } else {
                        format!("{}/{root}", base.trim_end_matches('/'))
                    },
                );
            }
            if found.is_empty() {
                found.push(base);
            }
        }
        self.tool_paths = found.iter().map(|p| (self.resolve(p), recursive)).collect();
        self.tool_capabilities = tool_capabilities(tool);
    }

    /// The parse and what it resolved, for `explain` (never logged: it holds the command).
    pub fn to_json(&self) -> Value {
        let reached = |r: &Reached| {
            if r.real == r.lexical {
                json!({"written": r.written, "resolved": r.lexical})
            } else {
                json!({"written": r.written, "resolved": r.lexical, "real": r.real})
            }
        };
        let mut o = Map::new();
        o.insert("cwd".into(), json!(self.cwd));
        if self.command_text.is_some() {
            o.insert(
                "commands".into(),
                Value::Array(
                    self.commands
                        .iter()
                        .map(|c| {
                            json!({
                                "name": c.command.name,
                                "program": c.command.program,
                                "args": c.command.args,
                                "via": c.command.via,
                                "capabilities": c.effects.iter().map(|(cap, paths)| json!({
                                    "capability": cap.as_str(),
                                    "paths": paths.iter().map(reached).collect::<Vec<_>>(),
                                })).collect::<Vec<_>>(),
                                "paths": c.paths.iter().map(reached).collect::<Vec<_>>(),
                            })
                        })
                        .collect(),
                ),
            );
            o.insert("unread".into(), json!(self.unread));
        } else {
            o.insert(
                "capabilities".into(),
                json!(
                    self.tool_capabilities
                        .iter()
                        .map(|c| c.as_str())
                        .collect::<Vec<_>>()
                ),
            );
            o.insert(
                "paths".into(),
                Value::Array(
                    self.tool_paths
                        .iter()
                        .map(|(r, below)| {
                            let mut v = reached(r);
                            if *below {
                                v["and_below"] = json!(true);
                            }
                            v
                        })
                        .collect(),
                ),
            );
        }
        Value::Object(o)
    }
}

/// The command a tool runs: Bash's `command`, or an MCP tool's `command`,
/// `cmd` or `script` argument; `None` for a tool that runs none.
pub fn command_of(call: &ToolCall) -> Result<Option<String>, ReadError> {
    let fields: &[&str] = if call.tool_name == "Bash" {
        &["command"]
    } else if call.tool_name.starts_with("mcp__") {
        COMMAND_FIELDS
    } else {
        return Ok(None);
    };
    for f in fields {
        match call.tool_input.get(*f) {
            Some(Value::String(s)) => return Ok(Some(s.clone())),
            None if call.tool_name != "Bash" => continue,
            v => {
                return Err(ReadError::Command {
                    tool: call.tool_name.clone(),
                    field: (*f).to_string(),
                    kind: kind(v),
                });
            }
        }
    }
    Ok(None)
}

/// A glob pattern's literal leading directories (`~/.ssh/*` → `~/.ssh`);
/// `None` when it starts with a wildcard.
fn pattern_root(pattern: &str) -> Option<String> {
    let mut root = Vec::new();
    let mut parts = pattern.split('/').peekable();
    while let Some(part) = parts.next() {
        if part.contains(['*', '?', '[', '{']) || parts.peek().is_none() {
            break;
        }
        root.push(part);
    }
    match root.as_slice() {
        [] => None,
        [""] => Some("/".into()),
        r => Some(r.join("/")),
    }
}

/// What a tool that runs no command does, by its name.
pub fn tool_capabilities(tool: &str) -> Vec<Capability> {
    if READING_TOOLS.contains(&tool) {
        return vec![Capability::Read];
    }
    if WRITING_TOOLS.contains(&tool) {
        return vec![Capability::Write];
    }
    if tool == "WebFetch" || tool == "WebSearch" {
        return vec![Capability::Network];
    }
    if let Some(rest) = tool.strip_prefix("mcp__") {
        let verb = rest
            .rsplit("__")
            .next()
            .unwrap_or(rest)
            .to_ascii_lowercase();
        let has = |words: &[&str]| words.iter().any(|w| verb.contains(w));
        let mut caps = Vec::new();
        if has(&[
            "delete", "remove", "destroy", "drop", "purge", "wipe", "unlink",
        ]) {
            caps.push(Capability::Delete);
        }
        if has(&[
            "write", "edit", "create", "move", "rename", "update", "set", "put", "upload",
            "append", "patch", "insert",
        ]) {
            caps.push(Capability::Write);
        }
        if caps.is_empty()
            || has(&[
                "read", "get", "list", "search", "view", "query", "fetch", "tree", "info",
            ])
        {
            caps.push(Capability::Read);
        }
        return caps;
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(tool: &str, input: Value) -> ToolCall {
        ToolCall {
            tool_name: tool.into(),
            tool_input: input.as_object().cloned().unwrap(),
            cwd: Some("/w/p".into()),
        }
    }

    #[test]
    fn a_command_that_is_not_a_string_cannot_be_read() {
        let e = Reading::new(&call("Bash", json!({"command": 7}))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "Bash's command must be a command (a string), not a number"
        );
        assert!(Reading::new(&call("Bash", json!({}))).is_err());
        let e = Reading::new(&call("mcp__x__run", json!({"cmd": ["rm"]}))).unwrap_err();
        assert!(e.to_string().contains("cmd must be a command"), "{e}");
        assert!(Reading::new(&call("mcp__x__get", json!({"id": 1}))).is_ok());
    }

    #[test]
    fn without_a_cwd_a_relative_path_is_under_no_known_directory() {
        let mut c = call("Read", json!({"file_path": "build"}));
        c.cwd = None;
        let r = Reading::new(&c).unwrap();
        assert_eq!(r.tool_paths[0].0.lexical, "/<no cwd>/build");
    }

    #[test]
    fn reading_tools_reach_their_directory_and_the_glob_root() {
        let r = Reading::new(&call("Glob", json!({"pattern": "~/.ssh/*"}))).unwrap();
        assert!(
            r.tool_paths
                .iter()
                .any(|(p, below)| *below && p.written == "~/.ssh"),
            "{r:?}"
        );
        let r = Reading::new(&call("Grep", json!({"pattern": "BEGIN"}))).unwrap();
        assert_eq!(r.tool_paths[0].0.lexical, "/w/p");
        assert_eq!(r.tool_capabilities, [Capability::Read]);
        assert_eq!(pattern_root("src/**/*.rs"), Some("src".into()));
        assert_eq!(pattern_root("/etc/*"), Some("/etc".into()));
        assert_eq!(pattern_root("**/*.rs"), None);
        assert_eq!(
            tool_capabilities("mcp__filesystem__write_file"),
            [Capability::Write]
        );
        assert_eq!(
            tool_capabilities("mcp__github__get_issue"),
            [Capability::Read]
        );
    }

    #[test]
    fn git_global_options_are_skipped_before_the_subcommand() {
        let c = |args: &[&str]| shell::Command {
            name: "git".into(),
            program: "git".into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        };
        assert_eq!(
            subcommand(&c(&["-C", ".", "push", "-f"])),
            Some("push".into())
        );
        assert_eq!(
            subcommand(&c(&["-c", "k=v", "--no-pager", "push"])),
            Some("push".into())
        );
        assert_eq!(
            subcommand(&c(&["--git-dir=.git", "log"])),
            Some("log".into())
        );
    }
}
