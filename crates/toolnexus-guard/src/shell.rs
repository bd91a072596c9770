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
//! harmless command. [`effects`](fn@effects) classes each command into [`Capability`]
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

pub(crate) use runners::git_subcommand_in;
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
/// assert_eq!(cmd.piped_from, None);
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
    /// In a pipeline, the index in [`Script::commands`] of the command whose
    /// output this one reads: the last command of the element before it
    /// (`env | curl -d @- …` gives `curl` the index of `env`).
    pub piped_from: Option<usize>,
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
///
/// ```
/// use toolnexus_guard::shell::{self, RedirectKind};
/// let script = shell::parse("exec 3>&1");
/// assert_eq!(script.commands[0].redirects[0].kind, RedirectKind::Dup);
/// ```
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
///
/// ```
/// let script = toolnexus_guard::shell::parse("python3 -c 'import os'");
/// assert_eq!(script.unread[0].reason, "python3 code: import os");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    /// What could not be read, quoting the text.
    pub reason: String,
}

/// One effect of a command: a capability and the paths it applies to, as
/// written (unresolved: `~`, `$HOME` and `..` are the policy's to resolve).
///
/// ```
/// use toolnexus_guard::shell::{self, Capability, Effect};
/// let script = shell::parse("chmod -R 777 ~/proj");
/// assert_eq!(
///     shell::effects(&script.commands[0]),
///     [Effect { capability: Capability::Permissions, paths: vec!["~/proj".into()] }]
/// );
/// ```
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

/// The effects of one command, by the capability tables below. Paths are
/// as written (`~`, `$HOME`, `..` unresolved); an effect with no paths
/// applies to paths the guard cannot name (`git reset --hard`, `xargs rm`).
///
/// Whatever the command:
/// - a `>`, `>|` or `&>` redirection onto a file is **write** and **delete**
///   (it truncates the file); `>>` and `<>` are **write**; `<` is **read**;
///   `/dev/null`, `/dev/std*`, `/dev/tty` and `/dev/fd/*` are neither;
/// - a `/dev/tcp/…` or `/dev/udp/…` redirection or argument is **network**;
/// - a command run through `sudo`, `doas` or `pkexec` is also **privilege**;
/// - a program run by a path outside the system's bin directories
///   (`./build.sh`, `~/bin/x`) is **exec** of that path.
///
/// | capability | commands and argument forms |
/// | --- | --- |
/// | `delete` | `rm`, `unlink`, `rmdir`, `shred`, `srm`, `wipe`, `trash`, `gio trash/remove`, `truncate`, `mkfs*`, `wipefs`, `fdisk`, `sfdisk`, `parted`, `blkdiscard`; `mv`'s sources; `cp /dev/null F`; `dd of=F`; `tee F` without `-a`; `find … -delete` (its start points); `rsync --delete*` (the destination), `--remove-source-files` (the sources); `git clean` (not `-n`), `git rm`, `git mv`'s sources, `git reset --hard/--keep/--merge` |
/// | `write` | the redirections above; `tee`, `cp`, `mv`, `install`, `ln`, `link`, `rsync`, `scp`, `ditto` (the destination); `touch`, `mkdir`, `mkfifo`, `mknod`, `split`, `csplit`; `sed -i`, `perl -i`; `dd of=`; `truncate`; `patch`; editors (`vi`, `vim`, `nvim`, `nano`, `emacs`, `ed`, `code`…); `sudoedit`; archive extraction (`tar`, `unzip`, `7z`, `gunzip`… into `-C`/`-d` or `.`); `curl -o/--output`, `wget -O`; `sort -o`; `find -fprint*`; `git clone DIR`, `git checkout/switch -f`, `git restore`, `git checkout -- …`, `git apply/am/cherry-pick/merge/revert`, `git config KEY VALUE` |
/// | `read` | `cat`, `tac`, `nl`, `head`, `tail`, `less`, `more`, `bat`, `strings`, `xxd`, `hexdump`, `od`, `base64`, `base32`, `basenc`, `cut`, `sort`, `uniq`, `wc`, `diff`, `cmp`, `comm`, `paste`, `join`, `fold`, `fmt`, `pr`, `file`, `*sum`, `zcat` and kin, `iconv`, `rev`, `column`, `tr`, `getfacl`, `lsattr`, `openssl`, `gpg`, `ssh-keygen`, `ssh-add`, `sqlite3`, `security`, `secret-tool`, `pass`, `keyctl`; `grep`, `egrep`, `fgrep`, `rg`, `ag`, `ack`, `zgrep`, `jq`, `yq`, `awk` (files after the pattern, filter or program; `-r` or `rg` with none is `.`); `sed` without `-i`; the sources of `cp`, `install`, `rsync`, `scp`, archives; `dd if=`; files `curl` sends (`-d @F`, `-F k=@F`, `-T F`, `--data-binary @F`…) |
/// | `permissions` | `chmod` (a mode like `-x` included), `chown`, `chgrp`, `setfacl`, `chattr`, `chcon`, `chflags`, `icacls`, `takeown`, `attrib` |
/// | `network` | `curl`, `wget`, `nc`, `ncat`, `netcat`, `socat`, `ssh`, `sftp`, `ftp`, `tftp`, `telnet`, `http`/`xh`, `aria2c`, `lynx`, `w3m`, `links`, `ping`, `dig`, `nslookup`, `host`, `whois`, `nmap`, `mosh`, `lftp`, `smbclient`, `s3cmd`, `gsutil`, `rclone`, `websocat`, `openvpn`; `rsync`/`scp` with a `host:` or `://` operand; `git push/fetch/pull/clone/ls-remote/archive/send-email`, `git remote update`, `git submodule update/add/sync`; `hg`/`svn` push, pull, clone…; `/dev/tcp` |
/// | `exec` | shells (`sh`, `bash`, `zsh`, `dash`, `ksh`, `fish`, `csh`…, with the script's path), interpreters (`python*`, `perl`, `ruby`, `node`, `deno`, `bun`, `php`, `lua`, `Rscript`, `osascript`, `pwsh`, `julia`…), `eval`, `exec`, `source`/`.` (the file), `xargs`, `parallel`, `watch`, `at`, `batch`, `crontab`, `systemd-run`, `busybox`, `expect`; `ssh HOST CMD`; a program run by a path outside the system's bin directories |
/// | `privilege` | `sudo`, `doas`, `su`, `pkexec`, `runuser`, `sudoedit`, `setcap`, `visudo`, `usermod`, `useradd`, `groupadd`, `gpasswd`, `passwd`, `chpasswd`, `adduser`, `newgrp`; `chmod` setting set-user-ID or set-group-ID (`u+s`, `4755`…); `chown root` |
/// | `vcs-rewrite` | `git push` with `-f`, `--force`, `--force-with-lease`, `--force-if-includes`, `--mirror`, `--delete`, `-d`, `--prune`, a `+refspec` or `:ref`, or any argument built from an expansion; `git reset --hard/--keep/--merge`; `git rebase` (not `--abort`, `--quit`…); `git filter-branch`, `filter-repo`, `replace`; `git commit --amend` (and `--fixup=amend:`); `git branch -D/-d/-M/-C/-f`; `git tag -d/-f`; `git update-ref -d` or setting a ref, `git symbolic-ref`; `git reflog expire/delete`; `git stash drop/clear`; `git gc --prune`, `git prune`; `git checkout/switch -f/-B/-C/--orphan`; `git pull --rebase`; `git fetch -f` or `+refspec`; `hg strip/histedit/rebase/prune`, `hg push -f`, `hg commit --amend` |
/// | `install` | `pip`/`pip3`/`pipx install`, `python -m pip install`, `uv add`/`uv pip install`/`uv tool install`, `poetry`/`pdm`/`rye`/`hatch add`, `conda`/`mamba install`, `npm`/`pnpm i/install/add/ci`, `yarn` (bare, `add`, `install`, `global`), `bun add/install`, `npx`, `pnpx`, `bunx`, `apt`/`apt-get install`, `dnf`/`yum`/`zypper`/`snap`/`flatpak install`, `apk add`, `pacman -S/-U`, `dpkg -i`, `rpm -i/-U`, `brew install/tap`, `cargo install/binstall`, `gem install`, `go install/get`, `composer require`, `choco`/`winget`/`scoop install`, `nix-env -i`, `opam`/`cabal`/`stack`/`luarocks`/`cpan install`, `cpanm` |
///
/// Text fed to a shell (`curl … | sh`) is an [`Unread`] of [`parse`] rather
/// than an effect: the shell's own command is **exec**, the download's
/// **network**.
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

/// `word` as one word for a POSIX shell: as it is when every character is
/// plain, else in single quotes (a `'` inside written `'\''`). What [`parse`]
/// reads back as `word`.
///
/// ```
/// use toolnexus_guard::shell::{parse, quote_word};
/// assert_eq!(quote_word("--style=local"), "--style=local");
/// assert_eq!(quote_word(""), "''");
/// assert_eq!(quote_word("it's here"), r"'it'\''s here'");
/// assert_eq!(parse(&format!("echo {}", quote_word("a b"))).commands[0].args, ["a b"]);
/// ```
pub fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}
