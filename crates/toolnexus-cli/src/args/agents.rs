//! The agents' commands: `guard`, its hook installers, and `mcp`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::style::*;

/// `toolnexus guard`: a pre-tool-use gate for coding agents.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true, after_help = GUARD_AFTER_HELP)]
pub struct GuardArgs {
    /// check-policy, test, explain, log, verify-log, install or uninstall;
    /// with none, judge the hook input on stdin.
    #[command(subcommand)]
    pub command: Option<GuardCommand>,
    /// The policy and the judge.
    #[command(flatten)]
    pub judge: GuardJudgeArgs,
}

/// The policy a guard applies and where its decisions come from.
#[derive(Debug, Clone, Default, Args)]
pub struct GuardJudgeArgs {
    /// A guard policy file (default: the built-in policy; print it with
    /// `toolnexus guard check-policy`).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Ask a warm `toolnexus serve` at this address (e.g. http://127.0.0.1:8181)
    /// instead of loading the embedded model in this process; if it cannot be
    /// reached, the built-in judge answers here.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
    /// Where decisions come from (default: the built-in cascade: the guard's
    /// student on the embedded model, the zero-shot style for questions it has
    /// no head for).
    #[command(flatten)]
    pub style: StyleArgs,
}

/// Shown after `toolnexus guard --help`.
pub(crate) const GUARD_AFTER_HELP: &str = "\
The hook: Claude Code runs `toolnexus guard` before each tool call with the
call as JSON on stdin. The guard prints a PreToolUse decision (deny or ask,
with a reason naming the rule or questions that decided and their figures;
allow only when the policy's print_allow is set) or nothing, and exits 0.
Any failure (bad input, no model, a judge slower than the policy's budget_ms,
an internal error) is answered with the policy's on_error verdict (ask unless
set to deny; never allow), with the failure as the reason.

Commands are read as the shell reads them (quotes, escapes, runners such as
sudo, sh -c, xargs and find -exec unwrapped); what cannot be read statically
(a command word from an expansion, decoded text fed to a shell, interpreter
code) is at least ask. A project's .toolnexus/guard.json (found from the
call's cwd up to the repository's root) adds rules and commands it expects.
A call that changes the guard's policy, the agent's hook settings, the log or
a git hook is denied. A hook input with no cwd, or a command that is not a
string, is answered with on_error.

Exit codes: 0 always for a hook input (the verdict is in the output);
check-policy and test: 0 ok, 2 a bad policy or examples file (the key or
line is named), 3 (test) a row labelled deny came out allow; verify-log: 0
the chain holds, 1 a line was changed or removed (named), 2 no such log.";

/// `toolnexus guard …`.
#[derive(Debug, Clone, Subcommand)]
pub enum GuardCommand {
    /// Read a guard policy file and report its first error (naming the key);
    /// without a file, print the built-in policy in full.
    CheckPolicy(CheckPolicyArgs),
    /// Run the guard over labelled tool calls (JSONL, as `toolnexus assess`
    /// reads them, with a `verdict` label) and report verdict accuracy, the
    /// confusion matrix and every row labelled deny that came out allow.
    Test(Box<GuardTestArgs>),
    /// Add the guard as a PreToolUse hook to an agent's settings.
    Install(HookInstallArgs),
    /// Remove the guard's hook from an agent's settings.
    Uninstall(HookInstallArgs),
    /// Judge one call and say why: the parse (commands, capabilities, paths
    /// resolved, what could not be read), every rule and check that fired,
    /// the judge's figures and the verdict, for an allow too.
    Explain(Box<GuardExplainArgs>),
    /// Summarise the guard's log: calls per verdict, the rules that fired
    /// most, and the latency (p50, p99).
    Log(GuardLogArgs),
    /// Check the log's hash chain: name the first line changed or removed
    /// (exit 1), or say how many lines verified.
    VerifyLog(GuardLogArgs),
}

/// `toolnexus guard explain`.
#[derive(Debug, Clone, Args)]
#[command(after_help = "\
Without --command, a hook input (as Claude Code sends it) is read on stdin.
Exit codes: 0 the call was judged (the verdict is in the output), 2 bad input
or a bad policy.")]
pub struct GuardExplainArgs {
    /// The Bash command to judge (instead of a hook input on stdin).
    #[arg(long, value_name = "TEXT")]
    pub command: Option<String>,
    /// The working directory the command runs in (default: this one).
    #[arg(long, value_name = "DIR", requires = "command")]
    pub cwd: Option<PathBuf>,
    /// Print the explanation as JSON.
    #[arg(long)]
    pub json: bool,
    /// The policy and the judge.
    #[command(flatten)]
    pub judge: GuardJudgeArgs,
}

/// `toolnexus guard log` and `toolnexus guard verify-log`.
#[derive(Debug, Clone, Args)]
pub struct GuardLogArgs {
    /// The log (default: the policy's log file).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The policy whose log it is (default: the built-in policy).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `toolnexus guard test`.
#[derive(Debug, Clone, Args)]
pub struct GuardTestArgs {
    /// Labelled calls: each line `{"state": {"tool_name", "tool_input", "cwd"},
    /// "labels": {"verdict": "allow"|"ask"|"deny", …}}` (`#` lines are comments).
    #[arg(value_name = "FILE")]
    pub examples: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Calls judged at once.
    #[arg(long, value_name = "N", default_value_t = 4,
          value_parser = clap::value_parser!(u32).range(1..=256))]
    pub concurrency: u32,
    /// The policy and the judge.
    #[command(flatten)]
    pub judge: GuardJudgeArgs,
}

/// `toolnexus guard check-policy`.
#[derive(Debug, Clone, Args)]
pub struct CheckPolicyArgs {
    /// The policy file (omit to print the built-in default).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Shown after `toolnexus guard|mcp install|uninstall --help`.
pub(crate) const INSTALL_AFTER_HELP: &str = "\
Only toolnexus's own entry is added, updated or removed; everything else in
the file is kept, other toolnexus guard hooks too (for some tools only, or
run through a shell construct): uninstall names each it leaves, and why. The
arguments are checked as the guard or the server will read them (a --policy
that exists and parses, a known --style). Changes to one file wait for each
other (a lock file .FILE.toolnexus-lock beside it). Before a file is changed,
its old text is copied to its one backup, FILE.toolnexus.bak (replaced by
each change: it holds the text before the latest); the new text then
replaces the file atomically, with its permissions.

Exit codes:
  0  done, or nothing to do (said so)
  2  unknown agent, bad --guard-args/--mcp-args, a file that does not parse
     (file, line and column named) or a key of the wrong type (named); the
     file is left as it is; or uninstall left toolnexus guard hooks that
     `guard install` did not write (each named)
  4  the file or its backup cannot be written, or the file is read-only";

/// `toolnexus guard install|uninstall`.
///
/// Install adds one PreToolUse hook group, `{"matcher": "*", "hooks":
/// [{"type": "command", "command": "<this binary> guard …", "timeout": 10}]}`,
/// to Claude Code's settings and keeps everything else in the file; an older
/// toolnexus guard hook for every tool is updated, never duplicated, and other
/// guard hooks (for some tools only) are left. Uninstall removes only that
/// hook, recognised with an environment prefix or added flags, and names any
/// guard hook it left (exit 2). A changed file is first copied to its one
/// backup (`FILE.toolnexus.bak`), then replaced atomically with its
/// permissions, under a lock. Exit codes: 0 done or nothing to do; 2 an
/// unknown agent, bad arguments, a file that does not parse or a key of the
/// wrong type (the file is left as it is); 4 the file or its backup cannot be
/// written, or it is read-only.
#[derive(Debug, Clone, Args)]
#[command(after_help = INSTALL_AFTER_HELP)]
pub struct HookInstallArgs {
    /// The agent: claude-code.
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// The project's settings (.claude/settings.json under the current directory).
    #[arg(long, conflicts_with = "user")]
    pub project: bool,
    /// The user's settings (~/.claude/settings.json, or settings.json in
    /// $CLAUDE_CONFIG_DIR when it is set; the default).
    #[arg(long)]
    pub user: bool,
    /// Print the change as a line diff and write nothing (no backup either).
    /// Values whose key looks secret are shown as "…".
    #[arg(long)]
    pub dry_run: bool,
    /// Extra arguments for the hook's `toolnexus guard` command line (e.g.
    /// "--policy FILE" or "--server URL"), as one string written after
    /// `guard` as it is (the hook runs it through a shell).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub guard_args: Option<String>,
}

/// `toolnexus mcp`: judgments as MCP tools over stdio.
#[derive(Debug, Clone, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Tools: noul {state, instructions, criteria?}, choice {state, instructions, options}, \
score {state, instructions, levels}, evaluate {state, questions, model?}, guard {tool_name, tool_input, cwd?}.\n\
With no --style, no --tape and no API key set, the embedded model answers (--style local); \
without it the server does not start (exit 2). Standard output carries MCP frames only; \
the server ends with exit 0 when standard input closes."
)]
pub struct McpArgs {
    /// install or uninstall; with none, serve MCP on stdin/stdout.
    #[command(subcommand)]
    pub command: Option<McpCommand>,
    /// A thresholds file (from `toolnexus assess thresholds`): results also
    /// carry each answer read through its question's bands.
    #[arg(long, value_name = "FILE")]
    pub thresholds: Option<PathBuf>,
    /// A decision cache (SQLite file, created if absent).
    #[arg(long, value_name = "FILE")]
    pub cache: Option<PathBuf>,
    /// The guard policy of the `guard` tool (default: the built-in policy).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Where decisions come from: any style `eval` takes. With no --style, no
    /// --tape and no API key set, the embedded model (--style local) when it
    /// is on this machine; without it the server does not start (exit 2).
    #[command(flatten)]
    pub style: StyleArgs,
    /// Prices for the cost each result's usage carries.
    #[command(flatten)]
    pub prices: PriceArgs,
}

/// `toolnexus mcp …`.
#[derive(Debug, Clone, Subcommand)]
pub enum McpCommand {
    /// Add `toolnexus mcp` to an agent's MCP server configuration.
    Install(McpInstallArgs),
    /// Remove it again.
    Uninstall(McpInstallArgs),
}

/// `toolnexus mcp install|uninstall`.
///
/// Writes each agent's own format, keeping everything else in the file:
/// claude-code `mcpServers.<name>` in ~/.claude.json (`type` stdio, `command`,
/// `args`, `env`; in $CLAUDE_CONFIG_DIR when set), cursor `mcpServers.<name>`
/// in ~/.cursor/mcp.json (`command`, `args`), codex `[mcp_servers.<name>]` in
/// ~/.codex/config.toml ($CODEX_HOME when set), edited in place with its
/// comments. The command is this binary's absolute path; an entry under the
/// name that runs another program is refused. Backups, atomic writes and exit
/// codes as for `guard install`.
#[derive(Debug, Clone, Args)]
#[command(after_help = INSTALL_AFTER_HELP)]
pub struct McpInstallArgs {
    /// The agent: claude-code (`mcpServers.<name>` in ~/.claude.json, or in
    /// $CLAUDE_CONFIG_DIR/.claude.json), cursor (`mcpServers.<name>` in
    /// ~/.cursor/mcp.json) or codex (`[mcp_servers.<name>]` in
    /// ~/.codex/config.toml, or $CODEX_HOME/config.toml; comments kept).
    #[arg(value_name = "AGENT")]
    pub agent: String,
    /// The server's name in the agent's configuration.
    #[arg(long, value_name = "NAME", default_value = "toolnexus")]
    pub name: String,
    /// Print the change as a line diff and write nothing (no backup either).
    /// Values whose key looks secret are shown as "…".
    #[arg(long)]
    pub dry_run: bool,
    /// Extra arguments for the server's `toolnexus mcp` command line (e.g.
    /// "--style local"), as one string split into words as a shell would
    /// (blanks, '…' and "…" quoting, backslash escapes; no expansion).
    #[arg(long, value_name = "ARGS", allow_hyphen_values = true)]
    pub mcp_args: Option<String>,
}
