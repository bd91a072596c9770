//! A command line read the way the shell reads it (SPEC §21).
//!
//! [`parse`] turns Bash text into the simple commands the shell would run, in
//! every list, pipeline, subshell, group, loop, conditional, function body,
//! command or process substitution and here-document fed to a shell. Words
//! are normalised as the shell would (quote removal, backslashes, line
//! continuations, `$'…'`, brace expansion, the basename of the command's
//! path) and runners are unwrapped (`sh -c`, `eval` of a literal, `env`,
//! `sudo`, `xargs`, `find -exec`…). What cannot be read statically (a
//! command word built from an expansion, decoded text fed to a shell,
//! interpreter code, a parse error) is an [`Unread`] naming it, never a
//! harmless command. [`effects`] classes each command into [`Capability`]
//! values by the tables documented there.
//!
//! ```
//! use toolnexus_guard::shell::{self, Capability};
//!
//! let script = shell::parse("c''at ~/.ssh/id_rsa | sudo tee /etc/x");
//! let names: Vec<&str> = script.commands.iter().map(|c| c.name.as_str()).collect();
//! // The runner is listed, and the command it runs, unwrapped.
//! assert_eq!(names, ["cat", "sudo", "tee"]);
//! assert_eq!(script.commands[2].via, ["sudo"]);
//! let caps: Vec<Capability> = shell::effects(&script.commands[0])
//!     .into_iter()
//!     .map(|e| e.capability)
//!     .collect();
//! assert!(caps.contains(&Capability::Read));
//! ```

mod capability;
mod code;
mod effects;
mod runners;
mod syntax;
#[cfg(test)]
mod tests;
mod word;

pub use capability::{Capability, UnknownCapability};

/// What a command text runs, as far as it can be read statically.
///
/// ```
/// let script = toolnexus_guard::shell::parse("$(echo rm) -rf ~");
/// assert!(!script.unread.is_empty());
/// assert!(!script.is_fully_read());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Script {
    /// Every simple command the shell would run, in source order, runners
    /// unwrapped (the runner itself is listed too, with its own arguments).
    pub commands: Vec<Command>,
    /// What could not be read; empty when the whole text was understood.
    pub unread: Vec<Unread>,
}

impl Script {
    /// Whether everything the text runs was read (no [`Unread`]).
    ///
    /// ```
    /// assert!(toolnexus_guard::shell::parse("ls -la").is_fully_read());
    /// ```
    pub fn is_fully_read(&self) -> bool {
        self.unread.is_empty()
    }
}

/// One simple command the shell would run.
///
/// ```
/// let script = toolnexus_guard::shell::parse("/usr/bin/r\\m -r 'my dir'");
/// let cmd = &script.commands[0];
/// assert_eq!(cmd.name, "rm");
/// assert_eq!(cmd.program, "/usr/bin/rm");
/// assert_eq!(cmd.args, ["-r", "my dir"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Command {
    /// The command's name after normalisation: quotes and backslashes
    /// removed, the basename of a path (`/bin/rm` is `rm`).
    pub name: String,
    /// The command word as the shell would run it (the path kept).
    pub program: String,
    /// The argument words after normalisation. An expansion the guard cannot
    /// know (`$HOME`, `$x`, `$(…)`) is kept as written, so a path argument
    /// reads `$HOME/.ssh` for the policy to resolve.
    pub args: Vec<String>,
    /// The command's redirections, in source order (those of an enclosing
    /// group or loop included).
    pub redirects: Vec<Redirect>,
    /// The runners this command was unwrapped from, outermost first
    /// (`sudo`, `sh -c`, `xargs`, `find -exec`…); empty when run directly.
    pub via: Vec<String>,
}

/// A redirection of a command's input or output.
///
/// ```
/// use toolnexus_guard::shell::{self, RedirectKind};
/// let script = shell::parse("sort < in.txt >> out.txt");
/// let kinds: Vec<RedirectKind> = script.commands[0].redirects.iter().map(|r| r.kind).collect();
/// assert_eq!(kinds, [RedirectKind::Read, RedirectKind::Append]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redirect {
    /// What the redirection does.
    pub kind: RedirectKind,
    /// The file it names (normalised like an argument), the descriptor of a
    /// duplication, or the text of a here-document or here-string.
    pub target: String,
}

/// The kinds of redirection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RedirectKind {
    /// `>`, `>|`, `&>`: the file is created or truncated, then written.
    Write,
    /// `>>`, `&>>`: the file is created or appended to.
    Append,
    /// `<`: the file is read.
    Read,
    /// `<>`: the file is opened for reading and writing.
    ReadWrite,
    /// `>&N`, `<&N`, `N>&-`: a descriptor is duplicated or closed.
    Dup,
    /// `<<`, `<<-` or `<<<`: the command reads the given text.
    HereDoc,
}

/// Something in a command text the guard could not read statically; the
/// reason names it (for example `the command word is built from an
/// expansion: $(echo rm)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// What could not be read, quoting the text.
    pub reason: String,
}

/// One effect of a command: a capability and the paths it applies to, as
/// written (unresolved: `~`, `$HOME` and `..` are the policy's to resolve).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effect {
    /// The class of effect.
    pub capability: Capability,
    /// The paths it applies to, as written; empty when it names none (a
    /// network command) or they are not known.
    pub paths: Vec<String>,
}

/// Reads a command text into the commands it runs; never panics (a parse
/// error is an [`Unread`]).
///
/// ```
/// let script = toolnexus_guard::shell::parse("git commit -m 'do not rm -rf /'");
/// assert_eq!(script.commands.len(), 1);
/// assert_eq!(script.commands[0].name, "git");
/// ```
pub fn parse(text: &str) -> Script {
    let joined = syntax::join_continuations(text);
    let mut reader = syntax::Reader::new(&joined, 0, Vec::new());
    reader.read();
    reader.script
}

/// The effects of one command, by the capability tables.
///
/// ```
/// use toolnexus_guard::shell::{self, Capability};
/// let script = shell::parse("rm -rf build");
/// let effects = shell::effects(&script.commands[0]);
/// assert_eq!(effects[0].capability, Capability::Delete);
/// assert_eq!(effects[0].paths, ["build"]);
/// ```
pub fn effects(command: &Command) -> Vec<Effect> {
    effects::of(command)
}

impl Command {
    /// Every path-like word the command touches: its arguments that look
    /// like paths and its redirections' files.
    ///
    /// ```
    /// let script = toolnexus_guard::shell::parse("cp -r src ~/backup > log.txt");
    /// let paths = script.commands[0].paths();
    /// assert!(paths.contains(&"~/backup".to_string()));
    /// assert!(paths.contains(&"log.txt".to_string()));
    /// ```
    pub fn paths(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut add = |p: &str| {
            if !p.is_empty() && !out.iter().any(|o| o == p) {
                out.push(p.to_string());
            }
        };
        for effect in effects::of(self) {
            for p in &effect.paths {
                add(p);
            }
        }
        for a in &self.args {
            // `--file=PATH` names its path after the `=`.
            let value = match a.split_once('=') {
                Some((k, v)) if k.starts_with('-') => v,
                _ => a.as_str(),
            };
            if is_path_like(value) {
                add(value);
            }
        }
        for r in &self.redirects {
            if !matches!(r.kind, RedirectKind::Dup | RedirectKind::HereDoc) {
                add(&r.target);
            }
        }
        out
    }
}

/// Whether a word reads as a path: it holds a `/`, or starts with `~`, `.`
/// or `$` (`$HOME/…`).
fn is_path_like(word: &str) -> bool {
    !word.starts_with('-')
        && !word.contains("://")
        && (word.contains('/')
            || word.starts_with('~')
            || word.starts_with('.')
            || word.starts_with('$'))
}
