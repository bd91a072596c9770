//! Self-protection: a call that changes the guard's own policy, the agent's
//! hook settings, the guard's log or a git hook is denied, whatever the
//! policy says and whichever tool or command does it (`sed -i`, `printf >`,
//! `tee`, `mv`, `rm`, an editor tool, an MCP tool, `toolnexus guard
//! uninstall`, `git config core.hooksPath`). Without it an agent could switch
//! the guard off with one allowed call.

use std::path::Path;

use crate::call::{Reading, WRITING_TOOLS};
use crate::paths::{Glob, Reached};
use crate::policy::Policy;
use crate::shell::Capability;

/// The files that keep the guard on, wherever they are (`~` is the home).
pub const PROTECTED: &[&str] = &[
    "**/.toolnexus/guard.json",
    "~/.config/toolnexus/**",
    "~/.local/state/toolnexus/**",
    "**/.claude/settings*.json",
    "**/.codex/config.toml",
    "**/.codex/hooks.json",
    "**/.cursor/hooks.json",
    "**/.gemini/settings.json",
    "**/.git/hooks",
    "**/.git/hooks/**",
    "**/.git/config",
];

/// Why the call is denied to protect the guard, if it is.
pub(crate) fn check(
    tool: &str,
    reading: &Reading,
    policy: &Policy,
    project: Option<&Path>,
) -> Option<String> {
    let mut globs: Vec<Glob> = PROTECTED.iter().map(|g| Glob::new(g)).collect();
    for p in policy.source.iter().map(|p| p.as_path()).chain(project) {
        globs.push(Glob::new(&p.to_string_lossy()));
    }
    if let Some(log) = &policy.log {
        let path = log.path.to_string_lossy();
        globs.push(Glob::new(&path));
        globs.push(Glob::new(&format!("{path}.1")));
    }
    let home = reading.home.as_deref();
    let hit = |r: &Reached| {
        globs
            .iter()
            .find(|g| {
                [&r.lexical, &r.real]
                    .iter()
                    .any(|p| g.matches(p, &reading.cwd, home))
            })
            .map(|_| r.written.clone())
    };
    // Removing, moving or re-moding a directory changes what lies under it.
    let under = |r: &Reached| {
        globs
            .iter()
            .find(|g| {
                [&r.lexical, &r.real]
                    .iter()
                    .any(|p| g.reaches(p, &reading.cwd, home))
            })
            .map(|_| r.written.clone())
    };
    if reading.command_text.is_none() {
        let changes = WRITING_TOOLS.contains(&tool)
            || (tool.starts_with("mcp__")
                && reading
                    .tool_capabilities
                    .iter()
                    .any(|c| matches!(c, Capability::Write | Capability::Delete)));
        if changes && let Some(p) = reading.tool_paths.iter().find_map(|(r, _)| hit(r)) {
            return Some(format!("{tool} would change {p}, which keeps the guard on"));
        }
        return None;
    }
    for c in &reading.commands {
        let name = c.command.name.as_str();
        let args = &c.command.args;
        if name == "toolnexus"
            && args.first().map(String::as_str) == Some("guard")
            && args.iter().any(|a| a == "install" || a == "uninstall")
        {
            return Some("changes the guard's hook (toolnexus guard install/uninstall)".into());
        }
        if name == "git" {
            let hooks = |a: &str| a.to_ascii_lowercase().contains("core.hookspath");
            // `git -c core.hooksPath=… <cmd>` runs hooks from elsewhere once;
            // `git config core.hooksPath …` does it for good. A commit message
            // that mentions it is data.
            let once = args
                .windows(2)
                .any(|w| (w[0] == "-c" || w[0] == "--config-env") && hooks(&w[1]))
                || args
                    .iter()
                    .any(|a| a.starts_with("--config-env=") && hooks(a));
            let reads = args
                .iter()
                .any(|a| a.starts_with("--get") || a == "--list" || a == "-l");
            let config =
                c.sub.as_deref() == Some("config") && args.iter().any(|a| hooks(a)) && !reads;
            if once || config {
                return Some("changes where git finds its hooks (core.hooksPath)".into());
            }
        }
        for (cap, paths) in &c.effects {
            let found = match cap {
                Capability::Write => paths.iter().find_map(hit),
                Capability::Delete | Capability::Permissions => paths.iter().find_map(under),
                _ => None,
            };
            if let Some(p) = found {
                return Some(format!("{name} would change {p}, which keeps the guard on"));
            }
        }
        if matches!(
            name,
            "mv" | "rm" | "unlink" | "shred" | "truncate" | "ln" | "chmod" | "chown"
        ) && let Some(p) = c.paths.iter().find_map(under)
        {
            return Some(format!("{name} would change {p}, which keeps the guard on"));
        }
        for r in &c.command.redirects {
            if matches!(
                r.kind,
                crate::shell::RedirectKind::Write
                    | crate::shell::RedirectKind::Append
                    | crate::shell::RedirectKind::ReadWrite
            ) && let Some(p) = hit(&crate::paths::resolve(&reading.cwd, home, &r.target))
            {
                return Some(format!(
                    "a redirection would change {p}, which keeps the guard on"
                ));
            }
        }
    }
    None
}
