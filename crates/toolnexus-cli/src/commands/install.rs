//! `toolnexus guard install|uninstall` and `toolnexus mcp install|uninstall`:
//! merge toolnexus into an agent's own configuration file.
//!
//! Every change goes the same way ([`apply`]): take the file's lock (a
//! sidecar lock file beside it, so concurrent installs wait for each other),
//! read the file (a missing one is empty), refuse one that does not parse
//! (exit 2, naming file, line and column), edit only toolnexus's own entry,
//! and compare. Nothing to change is said and nothing is written. A read-only
//! file is refused (exit 4). `--dry-run` prints the change as a line diff and
//! writes nothing. Otherwise the old text goes to the file's one backup
//! (`FILE.toolnexus.bak`, replaced by each change) and the new text replaces
//! the file atomically, with its permissions.
//!
//! What is toolnexus's: the first hook in a PreToolUse group for every tool
//! whose command runs a `toolnexus` binary's `guard` (an environment prefix or
//! flags the user added do not hide it); an MCP server entry under `--name`
//! whose command is a `toolnexus` binary. Other guard hooks are the user's:
//! kept, and named by `uninstall` with a non-zero exit. Anything else in the
//! files is kept (JSON key order included; TOML byte for byte, comments too).
//! The arguments written are checked first as the guard or the server will
//! read them.

mod diff;
mod file;
mod mcp;

use mcp::mcp;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::{Map, Value, json};

use crate::args::{HookInstallArgs, McpInstallArgs};
use crate::exit::{self, Exit};
use crate::input;

/// The matcher of a PreToolUse group that every tool call goes through.
const MATCH_EVERY_TOOL: &str = "*";

/// The hook's timeout in seconds (the guard keeps its own budget below it).
const HOOK_TIMEOUT_SECS: u64 = 10;

/// Agents the guard hook installs into.
const GUARD_AGENTS: &[&str] = &["claude-code"];

/// Agents the MCP server installs into.
const MCP_AGENTS: &[&str] = &["claude-code", "cursor", "codex"];

/// `toolnexus guard install AGENT`.
pub fn guard_install(args: HookInstallArgs) -> Result<Exit> {
    guard(args, true)
}

/// `toolnexus guard uninstall AGENT`.
pub fn guard_uninstall(args: HookInstallArgs) -> Result<Exit> {
    guard(args, false)
}

/// `toolnexus mcp install AGENT`.
pub fn mcp_install(args: McpInstallArgs) -> Result<Exit> {
    mcp(args, true)
}

/// `toolnexus mcp uninstall AGENT`.
pub fn mcp_uninstall(args: McpInstallArgs) -> Result<Exit> {
    mcp(args, false)
}

// ---------------------------------------------------------------------------
// The guard hook (Claude Code settings.json)

fn guard(args: HookInstallArgs, install: bool) -> Result<Exit> {
    let verb = if install { "install" } else { "uninstall" };
    known_agent(&format!("guard {verb}"), &args.agent, GUARD_AGENTS)?;
    let path = if args.project {
        std::env::current_dir()
            .map_err(|e| exit::usage(format!("--project: cannot find the current directory: {e}")))?
            .join(".claude")
            .join("settings.json")
    } else {
        claude_dir()?.join("settings.json")
    };
    let line = if install {
        let extra = args.guard_args.as_deref().unwrap_or("").trim();
        let words = split_words(extra).map_err(|e| exit::usage(format!("--guard-args: {e}")))?;
        check_guard_args(&words)?;
        Some(GuardLine {
            before: Vec::new(),
            program: shell_quote(&exe()?),
            flags: Vec::new(),
            extra: extra.to_string(),
        })
    } else {
        None
    };
    let mut left = Vec::new();
    let done = apply(&path, args.dry_run, install, |text, shown| {
        let mut root = parse_json(text, shown)?;
        let before = root.clone();
        let what = "the toolnexus guard hook";
        let found = guard_edit(&mut root, line.as_ref(), shown, &mut left)?;
        Ok(match &line {
            Some(_) if root == before => Edit::Same(format!(
                "{what} is already installed in {shown}; nothing changed"
            )),
            Some(_) => Edit::To(
                json_text(&root),
                format!(
                    "{} {what} in {shown}",
                    if found { "updated" } else { "installed" }
                ),
            ),
            None if !found => Edit::Same(format!("{what} is not in {shown}; nothing to remove")),
            None => Edit::To(json_text(&root), format!("removed {what} from {shown}")),
        })
    })?;
    if left.is_empty() {
        return Ok(done);
    }
    let shown =
        file::read(&path).map_or(path.display().to_string(), |c| c.path.display().to_string());
    let listed: Vec<String> = left.iter().map(|l| format!("  {l}")).collect();
    if install {
        tell!(
            "note: other toolnexus guard hooks in {shown} were left as they are:\n{}",
            listed.join("\n")
        );
        return Ok(done);
    }
    Err(exit::usage(format!(
        "{shown}: {} toolnexus guard hook{} left in place, as `guard install` did not write {}:\n{}\n\
         remove {} by hand if you no longer want {}",
        left.len(),
        if left.len() == 1 { " is" } else { "s are" },
        if left.len() == 1 { "it" } else { "them" },
        listed.join("\n"),
        if left.len() == 1 { "it" } else { "them" },
        if left.len() == 1 { "it" } else { "them" },
    )))
}

/// Checks `--guard-args` as the hook will read them: flags `toolnexus guard`
/// accepts, and a policy that exists, parses and whose rules build. A
/// `--policy` the shell expands when the hook runs (`$VAR`, a backquote) is
/// not checked; a leading `~/` is read from `HOME`.
fn check_guard_args(words: &[String]) -> Result<()> {
    use clap::Parser as _;
    let mut argv = vec!["toolnexus".to_string(), "guard".to_string()];
    argv.extend(words.iter().cloned());
    let cli = crate::args::Cli::try_parse_from(&argv)
        .map_err(|e| exit::usage(format!("--guard-args: {}", clap_first_line(&e))))?;
    let crate::args::Command::Guard(g) = cli.command else {
        unreachable!("parsed as `toolnexus guard`")
    };
    if g.command.is_some() {
        return Err(exit::usage(format!(
            "--guard-args: `{}` is a subcommand; the hook runs `toolnexus guard` on each call and takes only its flags",
            words
                .iter()
                .find(|w| !w.starts_with('-'))
                .map_or("", String::as_str)
        )));
    }
    if let Some(p) = &g.judge.policy {
        let text = p.to_string_lossy();
        if text.contains('$') || text.contains('`') {
            tell!(
                "note: --guard-args: --policy {text} is expanded by the shell when the hook runs; not checked here"
            );
        } else {
            let p = match text.strip_prefix("~/") {
                Some(rest) => home()?.join(rest),
                None => p.clone(),
            };
            let loaded = toolnexus_guard::Policy::load(&p)
                .map_err(|e| exit::usage(format!("--guard-args: --policy {}: {e}", p.display())))?;
            loaded
                .check_rules()
                .map_err(|e| exit::usage(format!("--guard-args: --policy {}: {e}", p.display())))?;
            for w in &loaded.warnings {
                tell!("warning: {w}");
            }
        }
    }
    // The judge is built only when a call needs it: checking its flags here
    // builds nothing.
    crate::style::guard_judge(&g.judge.style, g.judge.server.as_deref())
        .map_err(|e| exit::usage(format!("--guard-args: {e:#}")))?;
    Ok(())
}

/// A clap error's first line, without its `error: ` prefix.
fn clap_first_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or("").trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

/// A hook command line read as toolnexus's guard: what comes before the
/// program (environment assignments, `env`, `exec`), the program as written,
/// the flags between it and `guard`, and everything after `guard`.
#[derive(Debug, Clone, PartialEq)]
struct GuardLine {
    before: Vec<String>,
    program: String,
    flags: Vec<String>,
    extra: String,
}

impl GuardLine {
    /// Reads `command`; `None` when it is not a plain `toolnexus guard` line.
    fn read(command: &str) -> Option<GuardLine> {
        let words = split_words(command).ok()?;
        let mut i = 0;
        while i < words.len()
            && (is_assignment(&words[i]) || words[i] == "env" || words[i] == "exec")
        {
            i += 1;
        }
        let program = words.get(i)?;
        if !is_toolnexus(program) {
            return None;
        }
        let mut j = i + 1;
        while words.get(j).is_some_and(|w| w.starts_with('-')) {
            j += 1;
        }
        if words.get(j).map(String::as_str) != Some("guard") {
            return None;
        }
        let sub = ["install", "uninstall", "test", "check-policy", "help"];
        if words.get(j + 1).is_some_and(|w| sub.contains(&w.as_str())) {
            return None;
        }
        Some(GuardLine {
            before: words[..i].to_vec(),
            program: shell_quote(program),
            flags: words[i + 1..j].to_vec(),
            extra: words[j + 1..]
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        })
    }

    /// The command line, with `self`'s program and arguments and what the
    /// user put around them in `old` (assignments before it, flags before `guard`).
    fn written(&self, old: Option<&GuardLine>) -> String {
        let mut words: Vec<String> = Vec::new();
        if let Some(old) = old {
            words.extend(old.before.iter().map(|w| shell_quote_assignment(w)));
        }
        words.push(self.program.clone());
        if let Some(old) = old {
            words.extend(old.flags.iter().map(|w| shell_quote(w)));
        }
        words.push("guard".into());
        if !self.extra.is_empty() {
            words.push(self.extra.clone());
        }
        words.join(" ")
    }
}

/// `NAME=value`, a shell's environment assignment.
fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// An assignment with its value quoted (the name must stay bare for the shell).
fn shell_quote_assignment(word: &str) -> String {
    match word.split_once('=') {
        Some((name, value)) if is_assignment(word) => format!("{name}={}", shell_quote(value)),
        _ => shell_quote(word),
    }
}

/// Whether a PreToolUse group's matcher takes every tool.
fn matches_every_tool(group: &Value) -> bool {
    match group.get("matcher") {
        None | Some(Value::Null) => true,
        Some(Value::String(m)) => m.is_empty() || m == MATCH_EVERY_TOOL,
        _ => false,
    }
}

/// Installs `line` as toolnexus's own guard hook (or, with `None`, removes
/// it) in `hooks.PreToolUse`; returns whether it was there.
///
/// Toolnexus's own hook is the first guard hook ([`GuardLine::read`]: edited
/// with an environment prefix or added flags, it is still recognised) in a
/// group matching every tool, the only kind `guard install` writes. Install
/// updates its program and arguments in place, keeping the user's prefix and
/// its other fields, or adds a new group at the end. Uninstall removes it, and
/// a group, `PreToolUse` or `hooks` left empty. Every other hook that runs
/// toolnexus's guard — for some tools only, a second one for every tool, or a
/// command line too complex to read — is the user's: it is left as it is and
/// described in `left`, with where it is and why.
fn guard_edit(
    root: &mut Value,
    line: Option<&GuardLine>,
    shown: &str,
    left: &mut Vec<String>,
) -> Result<bool> {
    let top = top_object(root, shown)?;
    if line.is_none() && !top.contains_key("hooks") {
        return Ok(false);
    }
    let hooks = top.entry("hooks").or_insert_with(|| json!({}));
    let hooks = object_at(hooks, shown, "hooks")?;
    if line.is_none() && !hooks.contains_key("PreToolUse") {
        return Ok(false);
    }
    let pre = hooks.entry("PreToolUse").or_insert_with(|| json!([]));
    let kind = crate::input::json_kind(pre);
    let groups = pre.as_array_mut().ok_or_else(|| {
        exit::usage(format!(
            "{shown}: `hooks.PreToolUse` is {kind}, not an array; the file is left as it is"
        ))
    })?;
    let mut ours: Option<(usize, usize)> = None;
    for (g, group) in groups.iter().enumerate() {
        let Some(entries) = group.get("hooks").and_then(Value::as_array) else {
            continue;
        };
        let matcher = match group.get("matcher") {
            Some(Value::String(m)) => format!("matcher {m:?}"),
            _ => "no matcher".to_string(),
        };
        for (h, entry) in entries.iter().enumerate() {
            let command = entry.get("command").and_then(Value::as_str).unwrap_or("");
            let at = format!("hooks.PreToolUse[{g}].hooks[{h}] ({matcher})");
            if GuardLine::read(command).is_some() {
                if ours.is_none() && matches_every_tool(group) {
                    ours = Some((g, h));
                } else if matches_every_tool(group) {
                    left.push(format!(
                        "{at}: a second guard hook for every tool; toolnexus's own is the first"
                    ));
                } else {
                    left.push(format!(
                        "{at}: runs the guard for some tools only; `guard install` writes one for every tool (\"*\")"
                    ));
                }
            } else if command.contains("toolnexus") && command.contains("guard") {
                // Only the program: a command line may carry a secret.
                let program = command.split_whitespace().next().unwrap_or("");
                left.push(format!(
                    "{at}: runs `{program}` …, which mentions toolnexus guard but is not a plain \
                     `toolnexus guard` command line (a shell construct, a wrapper): it cannot be told apart from yours"
                ));
            }
        }
    }
    match (line, ours) {
        (Some(line), Some((g, h))) => {
            let entry = &mut groups[g]["hooks"][h];
            let old = entry
                .get("command")
                .and_then(Value::as_str)
                .and_then(GuardLine::read);
            let command = line.written(old.as_ref());
            match entry.as_object_mut() {
                Some(o) => {
                    o.insert("type".into(), json!("command"));
                    o.insert("command".into(), json!(command));
                    o.insert("timeout".into(), json!(HOOK_TIMEOUT_SECS));
                }
                None => {
                    *entry =
                        json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_SECS})
                }
            }
            Ok(true)
        }
        (Some(line), None) => {
            let entry = json!({"type": "command", "command": line.written(None), "timeout": HOOK_TIMEOUT_SECS});
            groups.push(json!({"matcher": MATCH_EVERY_TOOL, "hooks": [entry]}));
            Ok(false)
        }
        (None, Some((g, h))) => {
            let entries = groups[g]["hooks"].as_array_mut().expect("read above");
            entries.remove(h);
            if entries.is_empty() {
                groups.remove(g);
            }
            if groups.is_empty() {
                hooks.shift_remove("PreToolUse");
                if hooks.is_empty() {
                    top.shift_remove("hooks");
                }
            }
            Ok(true)
        }
        (None, None) => Ok(false),
    }
}

/// Whether a hook entry runs toolnexus's guard ([`GuardLine::read`]).
#[cfg(test)]
fn is_guard_hook(entry: &Value) -> bool {
    entry
        .get("command")
        .and_then(Value::as_str)
        .and_then(GuardLine::read)
        .is_some()
}

// ---------------------------------------------------------------------------
// The MCP server (Claude Code ~/.claude.json, Cursor ~/.cursor/mcp.json,
// Codex ~/.codex/config.toml)

/// What an edit of a file's text came to.
enum Edit {
    /// Nothing to change; the sentence says so.
    Same(String),
    /// The new text, and the sentence saying what was done.
    To(String, String),
}

/// Reads the file at `path`, lets `edit` decide its new text (`edit` gets the
/// text, `None` for a missing file, and the file's name as shown), and then
/// says so, prints the diff (`dry_run`), or writes the backup and the new file.
///
/// Outside a dry run the whole read, edit and write happens under the file's
/// lock ([`file::lock`]): concurrent installs wait for each other instead of
/// each writing its own edit of the same old text. `create`: the change may
/// create the file (and its directory). A read-only file is refused.
fn apply(
    path: &Path,
    dry_run: bool,
    create: bool,
    edit: impl FnOnce(Option<&str>, &str) -> Result<Edit>,
) -> Result<Exit> {
    let first = file::read(path)?;
    let shown = first.path.display().to_string();
    let lock = if dry_run {
        None
    } else {
        file::lock(&first.path, create).map_err(|e| {
            exit::io(format!(
                "cannot write {shown}: its lock file cannot be made or taken beside it: {e}; \
                 the file is left as it is"
            ))
        })?
    };
    // Read again under the lock: another process may have changed it.
    let config = if lock.is_some() {
        file::read(&first.path)?
    } else {
        first
    };
    let (new, done) = match edit(config.text.as_deref(), &shown)? {
        Edit::Same(said) => {
            say!("{said}");
            return Ok(Exit::Success);
        }
        Edit::To(new, done) => (new, done),
    };
    if let Some(why) = file::refuse_read_only(&config) {
        return Err(exit::io(format!(
            "{shown}: {why}; the file is left as it is (make it writable to change it)"
        )));
    }
    let old = config.text.as_deref().unwrap_or("");
    if dry_run {
        put!("{}", diff::unified(&shown, old, &new));
        say!("dry run: would have {done}; nothing written");
        return Ok(Exit::Success);
    }
    let backup = match &config.text {
        Some(old) => Some(file::backup(&config, old).map_err(|e| {
            exit::io(format!(
                "cannot write the backup of {shown} ({}): {e}; the file is left as it is",
                file::backup_path(&config).display()
            ))
        })?),
        None => None,
    };
    file::replace(&config, &new).map_err(|e| {
        exit::io(format!(
            "cannot write {shown}: {e}; the file is left as it is"
        ))
    })?;
    drop(lock);
    match backup {
        Some(b) => say!("{done} (backup: {})", b.display()),
        None => say!("{done} (new file)"),
    }
    Ok(Exit::Success)
}

// ---------------------------------------------------------------------------
// JSON files

/// The file's JSON value; an empty or missing file is `{}`. Invalid JSON (or a
/// key written twice, which a rewrite would silently drop) is refused naming
/// the file, line and column.
fn parse_json(text: Option<&str>, shown: &str) -> Result<Value> {
    match text {
        Some(t) if !input::strip_bom(t).trim().is_empty() => input::parse_json_text(t)
            .map_err(|e| exit::usage(format!("{shown}: {e}; the file is left as it is"))),
        _ => Ok(json!({})),
    }
}

/// Pretty JSON (two-space indent) with a trailing newline.
fn json_text(v: &Value) -> String {
    let mut s = serde_json::to_string_pretty(v).expect("a JSON value serialises");
    s.push('\n');
    s
}

/// The file's top-level object, or exit 2.
fn top_object<'a>(root: &'a mut Value, shown: &str) -> Result<&'a mut Map<String, Value>> {
    let kind = crate::input::json_kind(root);
    root.as_object_mut().ok_or_else(|| {
        exit::usage(format!(
            "{shown}: the top-level value is {kind}, not an object; the file is left as it is"
        ))
    })
}

/// `v` as an object, or exit 2 naming `key`.
fn object_at<'a>(v: &'a mut Value, shown: &str, key: &str) -> Result<&'a mut Map<String, Value>> {
    let kind = crate::input::json_kind(v);
    v.as_object_mut().ok_or_else(|| {
        exit::usage(format!(
            "{shown}: `{key}` is {kind}, not an object; the file is left as it is"
        ))
    })
}

// ---------------------------------------------------------------------------
// Where the files are

/// The agent, if it is one of `known`; else exit 2 listing them.
fn known_agent<'a>(command: &str, agent: &str, known: &[&'a str]) -> Result<&'a str> {
    known.iter().copied().find(|k| *k == agent).ok_or_else(|| {
        exit::usage(format!(
            "{command}: unknown agent `{agent}`; known agents: {}",
            known.join(", ")
        ))
    })
}

/// The home directory, from `HOME`.
fn home() -> Result<PathBuf> {
    match std::env::var_os("HOME") {
        Some(h) if !h.is_empty() => Ok(PathBuf::from(h)),
        _ => Err(exit::usage(
            "HOME is not set: cannot find the agent's configuration in the home directory",
        )),
    }
}

/// Claude Code's user directory: `CLAUDE_CONFIG_DIR` when set, else `~/.claude`.
fn claude_dir() -> Result<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(d) if !d.is_empty() => Ok(PathBuf::from(d)),
        _ => Ok(home()?.join(".claude")),
    }
}

/// Claude Code's state file holding user MCP servers: `.claude.json` in
/// `CLAUDE_CONFIG_DIR` when set, else `~/.claude.json`.
fn claude_json() -> Result<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(d) if !d.is_empty() => Ok(PathBuf::from(d).join(".claude.json")),
        _ => Ok(home()?.join(".claude.json")),
    }
}

/// Codex's directory: `CODEX_HOME` when set, else `~/.codex`.
fn codex_dir() -> Result<PathBuf> {
    match std::env::var_os("CODEX_HOME") {
        Some(d) if !d.is_empty() => Ok(PathBuf::from(d)),
        _ => Ok(home()?.join(".codex")),
    }
}

/// The absolute path of the running binary, as the agents will start it.
fn exe() -> Result<String> {
    let exe = std::env::current_exe()
        .map_err(|e| exit::io(format!("cannot find the toolnexus binary's own path: {e}")))?;
    exe.to_str().map(str::to_string).ok_or_else(|| {
        exit::usage(format!(
            "the toolnexus binary's path {} is not UTF-8; agents' configuration files cannot name it",
            exe.display()
        ))
    })
}

/// Whether a program (a path or a name) is a `toolnexus` binary.
fn is_toolnexus(program: &str) -> bool {
    let base = program.rsplit(['/', '\\']).next().unwrap_or(program);
    base == "toolnexus" || base == "toolnexus.exe"
}

// ---------------------------------------------------------------------------
// Shell words

use toolnexus_guard::shell::quote_word as shell_quote;

/// Splits a command line into words as a shell would, for simple quoting:
/// blanks separate words, `'…'` is literal, `"…"` keeps blanks and honours
/// `\"`, `\\`, `\$` and `` \` ``, and a backslash outside quotes escapes the
/// next character. No expansion happens. An unterminated quote is an error.
fn split_words(line: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a ' quote is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => word.push(c),
                            Some(c) => {
                                word.push('\\');
                                word.push(c);
                            }
                            None => return Err("a \" quote is not closed".into()),
                        },
                        Some(c) => word.push(c),
                        None => return Err("a \" quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(c) => word.push(c),
                    None => return Err("it ends with a lone backslash".into()),
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// The 1-based line and column (in characters) of byte `at` of `text`.
fn line_column(text: &str, at: usize) -> (usize, usize) {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
