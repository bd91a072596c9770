//! The capability tables: what each command and argument form does. The
//! table itself is documented on [`super::effects`](fn@super::effects).

mod files;
mod git;

use super::runners::is_shell;
use super::{Capability, Command, Effect, RedirectKind};

use Capability::*;

/// Files that take writes without keeping them: writing there destroys nothing.
fn is_sink(path: &str) -> bool {
    matches!(
        path,
        "/dev/null" | "/dev/stdout" | "/dev/stderr" | "/dev/stdin" | "/dev/tty" | "/dev/zero"
    ) || path.starts_with("/dev/fd/")
}

/// A `/dev/tcp/host/port` or `/dev/udp/…` path: bash opens a socket.
fn is_socket(path: &str) -> bool {
    path.starts_with("/dev/tcp/") || path.starts_with("/dev/udp/")
}

/// The operands of a command: words that are not options, after a `--` all
/// of them; `valued` options take the next word as their value.
fn operands<'a>(args: &'a [String], valued: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut done = false;
    while i < args.len() {
        let a = args[i].as_str();
        if done || !a.starts_with('-') || a == "-" {
            out.push(a);
        } else if a == "--" {
            done = true;
        } else if valued.contains(&a) {
            i += 1;
        }
        i += 1;
    }
    out
}

fn has_flag(args: &[String], short: char, long: &[&str]) -> bool {
    args.iter().take_while(|a| a.as_str() != "--").any(|a| {
        if let Some(l) = a.strip_prefix("--") {
            long.iter()
                .any(|x| l == *x || l.starts_with(&format!("{x}=")))
        } else if let Some(s) = a.strip_prefix('-') {
            !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit()) && s.contains(short)
        } else {
            false
        }
    })
}

/// The value of `-x VALUE`, `-xVALUE`, `--long VALUE` or `--long=VALUE`.
fn option_values(args: &[String], short: &str, long: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if a == short || a == long {
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
            i += 1;
        } else if let Some(v) = a.strip_prefix(&format!("{long}=")) {
            out.push(v.to_string());
        } else if !short.is_empty()
            && a.len() > short.len()
            && a.starts_with(short)
            && !a.starts_with("--")
        {
            out.push(a[short.len()..].to_string());
        }
        i += 1;
    }
    out
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

struct Out(Vec<Effect>);

impl Out {
    fn add(&mut self, capability: Capability, paths: Vec<String>) {
        if let Some(e) = self.0.iter_mut().find(|e| e.capability == capability) {
            for p in paths {
                if !e.paths.contains(&p) {
                    e.paths.push(p);
                }
            }
        } else {
            self.0.push(Effect { capability, paths });
        }
    }
}

/// Whether an rsync or scp operand names another machine (`host:path`,
/// `user@host:path`, `rsync://…`).
fn is_remote(arg: &str) -> bool {
    if arg.contains("://") {
        return true;
    }
    match arg.find(':') {
        Some(i) => {
            let before = &arg[..i];
            !before.is_empty() && !before.contains('/')
        }
        None => false,
    }
}

fn is_url(arg: &str) -> bool {
    arg.contains("://")
}

/// A `chmod` mode that sets the set-user-ID or set-group-ID bit.
fn is_setuid(mode: &str) -> bool {
    if mode.chars().all(|c| c.is_digit(8)) && mode.len() >= 4 {
        let lead = mode.len() - 4;
        return matches!(
            mode.as_bytes()[lead],
            b'2' | b'4' | b'6' | b'3' | b'5' | b'7'
        );
    }
    mode.split(',').any(|clause| {
        clause
            .split_once(['+', '='])
            .is_some_and(|(_, perms)| perms.contains('s'))
    })
}

/// Install commands: the package manager and the subcommands that install.
fn installs(name: &str, args: &[String]) -> bool {
    let first = operands(args, &[]).first().copied().unwrap_or("");
    let sub = |subs: &[&str]| subs.contains(&first);
    match name {
        "pip" | "pip3" | "pipx" => sub(&["install", "inject"]),
        "uv" => sub(&["add"]) || (sub(&["pip", "tool"]) && args.iter().any(|a| a == "install")),
        "poetry" | "pdm" | "rye" | "hatch" => sub(&["add", "install"]),
        "conda" | "mamba" | "micromamba" => sub(&["install", "create"]),
        "npm" | "pnpm" => sub(&["i", "install", "add", "ci", "in", "isntall"]),
        "yarn" => {
            sub(&["add", "install"]) || (first.is_empty() && args.is_empty()) || sub(&["global"])
        }
        "bun" => sub(&["add", "install", "i"]),
        "npx" | "pnpx" | "bunx" => true,
        "apt" | "apt-get" | "aptitude" => sub(&["install", "reinstall"]),
        "dnf" | "yum" | "zypper" | "snap" | "flatpak" | "port" => {
            sub(&["install", "in", "reinstall"])
        }
        "apk" => sub(&["add"]),
        "pacman" | "yay" | "paru" => args
            .iter()
            .any(|a| a.starts_with("-S") || a.starts_with("-U")),
        "dpkg" => args.iter().any(|a| a == "-i" || a == "--install"),
        "rpm" => args
            .iter()
            .any(|a| a.starts_with("-i") || a.starts_with("-U")),
        "brew" => sub(&["install", "reinstall", "tap"]),
        "cargo" => sub(&["install", "binstall"]),
        "gem" => sub(&["install"]),
        "go" => sub(&["install", "get"]),
        "composer" => sub(&["require", "install", "global"]),
        "choco" | "winget" | "scoop" => sub(&["install", "add"]),
        "nix-env" => args
            .iter()
            .any(|a| a == "-i" || a == "-iA" || a == "--install"),
        "opam" | "cabal" | "stack" | "luarocks" | "cpan" | "cpanm" => {
            sub(&["install"]) || name == "cpanm"
        }
        _ => false,
    }
}

/// The effects of a command: see [`super::effects`](fn@super::effects) for the table.
pub(crate) fn of(cmd: &Command) -> Vec<Effect> {
    let mut out = Out(Vec::new());
    let args = &cmd.args;
    let name = cmd.name.as_str();

    // Redirections, whatever the command.
    for r in &cmd.redirects {
        let t = r.target.clone();
        if is_socket(&t) {
            out.add(Network, vec![t]);
            continue;
        }
        match r.kind {
            RedirectKind::Write if !is_sink(&t) => {
                out.add(Write, vec![t.clone()]);
                out.add(Delete, vec![t]);
            }
            RedirectKind::Append | RedirectKind::ReadWrite if !is_sink(&t) => {
                out.add(Write, vec![t])
            }
            RedirectKind::Read if !is_sink(&t) => out.add(Read, vec![t]),
            _ => {}
        }
    }
    // Sockets and URLs named as arguments.
    for a in args {
        if is_socket(a) {
            out.add(Network, vec![a.clone()]);
        }
    }
    // The runner's own class.
    if !cmd.via.is_empty()
        && cmd
            .via
            .iter()
            .any(|v| v == "sudo" || v == "doas" || v == "pkexec")
    {
        // A command run through sudo runs with its privilege.
        out.add(Privilege, Vec::new());
    }

    match name {
        // Delete.
        "rm" | "unlink" | "rmdir" | "shred" | "srm" | "wipe" | "trash" | "trash-put" | "gio" => {
            let ops = operands(
                args,
                &["-n", "--iterations", "-s", "--size", "--random-source"],
            );
            let ops: Vec<&str> = if name == "gio" {
                if ops.first() == Some(&"trash") || ops.first() == Some(&"remove") {
                    ops[1..].to_vec()
                } else {
                    Vec::new()
                }
            } else {
                ops
            };
            if !ops.is_empty() || name != "gio" {
                out.add(Delete, owned(&ops));
            }
        }
        "truncate" => {
            let ops = operands(args, &["-s", "--size", "-r", "--reference"]);
            out.add(Delete, owned(&ops));
            out.add(Write, owned(&ops));
        }
        "mkfs" | "wipefs" | "fdisk" | "sfdisk" | "parted" | "blkdiscard" => {
            out.add(Delete, owned(&operands(args, &["-t", "-L"])));
        }
        n if n.starts_with("mkfs.") => out.add(Delete, owned(&operands(args, &["-L"]))),
        // Write (and the deletes that moving or overwriting is).
        "mv" => {
            let target = option_values(args, "-t", "--target-directory");
            let mut ops = operands(args, &["-t", "--target-directory", "-S", "--suffix"]);
            let dest = match target.first() {
                Some(t) => t.clone(),
                None => ops.pop().unwrap_or_default().to_string(),
            };
            if !ops.is_empty() {
                out.add(Delete, owned(&ops));
            }
            if !dest.is_empty() && !is_sink(&dest) {
                out.add(Write, vec![dest]);
            }
        }
        "cp" | "install" | "ln" | "link" | "rsync" | "scp" | "ditto" => {
            let valued = [
                "-t",
                "--target-directory",
                "-S",
                "--suffix",
                "-m",
                "--mode",
                "-o",
                "--owner",
                "-g",
                "--group",
                "-e",
                "--rsh",
                "-P",
                "-i",
                "-F",
                "-l",
                "-o",
                "--exclude",
                "--include",
                "--filter",
            ];
            let target = option_values(args, "-t", "--target-directory");
            let mut ops = operands(args, &valued);
            let dest = match target.first() {
                Some(t) => t.clone(),
                None if ops.len() >= 2 || name == "install" => {
                    ops.pop().unwrap_or_default().to_string()
                }
                None => String::new(),
            };
            let sources: Vec<&str> = ops.clone();
            if name == "cp" && sources.iter().all(|s| *s == "/dev/null") && !sources.is_empty() {
                out.add(Delete, vec![dest.clone()]);
            }
            if name != "ln" && name != "link" {
                let local: Vec<&str> = sources
                    .iter()
                    .copied()
                    .filter(|s| !is_remote(s) || name == "cp")
                    .collect();
                out.add(Read, owned(&local));
            }
            let remote_dest = matches!(name, "rsync" | "scp") && is_remote(&dest);
            if !(dest.is_empty() || is_sink(&dest) || remote_dest) {
                out.add(Write, vec![dest.clone()]);
            }
            if matches!(name, "rsync" | "scp")
                && (is_remote(&dest) || sources.iter().any(|s| is_remote(s)))
            {
                out.add(Network, Vec::new());
            }
            if name == "rsync" {
                if args
                    .iter()
                    .any(|a| a.starts_with("--delete") || a == "--remove-sent-files")
                    && !dest.is_empty()
                {
                    out.add(Delete, vec![dest.clone()]);
                }
                if args.iter().any(|a| a == "--remove-source-files") {
                    out.add(Delete, owned(&sources));
                }
            }
        }
        "tee" => {
            let ops = operands(args, &[]);
            let files: Vec<String> = owned(&ops).into_iter().filter(|p| !is_sink(p)).collect();
            out.add(Write, files.clone());
            if !has_flag(args, 'a', &["append"]) {
                out.add(Delete, files);
            }
        }
        "touch" | "mkdir" | "mkfifo" | "mknod" | "split" | "csplit" => {
            out.add(
                Write,
                owned(&operands(
                    args,
                    &[
                        "-d",
                        "--date",
                        "-r",
                        "--reference",
                        "-t",
                        "-m",
                        "--mode",
                        "-b",
                        "-l",
                        "-n",
                        "-C",
                    ],
                )),
            );
        }
        "dd" => {
            let of: Vec<String> = args
                .iter()
                .filter_map(|a| a.strip_prefix("of="))
                .map(String::from)
                .collect();
            let input: Vec<String> = args
                .iter()
                .filter_map(|a| a.strip_prefix("if="))
                .map(String::from)
                .collect();
            if !input.is_empty() {
                out.add(Read, input);
            }
            let of: Vec<String> = of.into_iter().filter(|p| !is_sink(p)).collect();
            if !of.is_empty() {
                out.add(Write, of.clone());
                out.add(Delete, of);
            }
        }
        "sed" | "gsed" | "perl" => {
            let in_place = args.iter().any(|a| {
                a == "-i"
                    || a.starts_with("-i")
                    || a.starts_with("--in-place")
                    || (name == "perl"
                        && a.starts_with('-')
                        && !a.starts_with("--")
                        && a.contains('i'))
            });
            let scripted = args.iter().any(|a| {
                a == "-e"
                    || a == "--expression"
                    || a == "-f"
                    || a.starts_with("--expression=")
                    || a.starts_with("--file=")
            });
            // BSD sed's `-i ''` names an empty backup suffix, not a script.
            let bsd: Vec<String> = args
                .iter()
                .enumerate()
                .filter(|(i, a)| !(a.is_empty() && *i > 0 && args[i - 1] == "-i"))
                .map(|(_, a)| a.clone())
                .collect();
            let mut ops = operands(
                &bsd,
                &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
            );
            if !scripted && !ops.is_empty() && name != "perl" {
                ops.remove(0);
            }
            if in_place {
                out.add(Write, owned(&ops));
            } else if name != "perl" {
                out.add(Read, owned(&ops));
            }
        }
        "patch" => out.add(
            Write,
            owned(&operands(
                args,
                &["-i", "--input", "-p", "-d", "-o", "--output"],
            )),
        ),
        "vi" | "vim" | "nvim" | "nano" | "emacs" | "ed" | "ex" | "pico" | "micro" | "code"
        | "subl" => {
            out.add(Write, owned(&operands(args, &["-c", "-S", "-u", "-e"])));
        }
        "tar" | "gtar" | "bsdtar" | "unzip" | "7z" | "gunzip" | "bunzip2" | "unxz" | "zip"
        | "gzip" | "bzip2" | "xz" | "zstd" | "unzstd" | "lz4" => {
            files::archive(name, args, &mut out)
        }
        // Read.
        "cat" | "tac" | "nl" | "head" | "tail" | "less" | "more" | "most" | "bat" | "batcat"
        | "strings" | "xxd" | "hexdump" | "hd" | "od" | "base64" | "base32" | "basenc" | "cut"
        | "sort" | "uniq" | "wc" | "diff" | "cmp" | "comm" | "paste" | "join" | "fold" | "fmt"
        | "pr" | "file" | "md5sum" | "sha1sum" | "sha256sum" | "sha512sum" | "b2sum" | "cksum"
        | "sum" | "zcat" | "zless" | "zmore" | "bzcat" | "xzcat" | "lzcat" | "zstdcat" | "view"
        | "iconv" | "expand" | "unexpand" | "rev" | "column" | "look" | "shuf" | "tr" | "xattr"
        | "getfacl" | "lsattr" | "openssl" | "gpg" | "ssh-keygen" | "ssh-add" | "sqlite3"
        | "plutil" | "defaults" | "security" | "secret-tool" | "pass" | "keyctl" => {
            let mut ops = owned(&operands(args, reader_valued(name)));
            for opt in ["-f", "-in", "-i", "--input", "-inkey", "-o"] {
                if matches!(name, "ssh-keygen" | "openssl" | "sqlite3" | "iconv") {
                    ops.extend(option_values(args, opt, ""));
                }
            }
            if name == "sort" {
                let outs = option_values(args, "-o", "--output");
                if !outs.is_empty() {
                    out.add(Write, outs);
                }
            }
            out.add(Read, ops);
        }
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack" | "zgrep" | "jq" | "yq" | "gojq"
        | "awk" | "gawk" | "mawk" | "nawk" => files::search(name, args, &cmd.redirects, &mut out),
        "source" | "." => {
            out.add(
                Exec,
                owned(&operands(args, &[])[..operands(args, &[]).len().min(1)]),
            );
        }
        // Permissions.
        "chmod" | "chown" | "chgrp" | "setfacl" | "chattr" | "chcon" | "chflags" | "icacls"
        | "takeown" | "attrib" => {
            let ops = operands(
                args,
                &["--reference", "-m", "-M", "-x", "-X", "--set", "--set-file"],
            );
            let (spec, files): (Option<&str>, Vec<&str>) = match name {
                "chmod" | "chown" | "chgrp" | "chattr" | "chcon" | "chflags" => {
                    // chmod's mode may look like an option (`-x`, `-w`).
                    let mode = args.iter().find(|a| {
                        a.starts_with('-')
                            && a.len() > 1
                            && a[1..].chars().all(|c| "rwxXst".contains(c))
                    });
                    match mode {
                        Some(m) if name == "chmod" => (Some(m.as_str()), ops.clone()),
                        _ => (ops.first().copied(), ops.get(1..).unwrap_or(&[]).to_vec()),
                    }
                }
                _ => (None, ops.clone()),
            };
            out.add(Permissions, owned(&files));
            if name == "chmod" && spec.is_some_and(is_setuid) {
                out.add(Privilege, owned(&files));
            }
            if name == "chown"
                && spec.is_some_and(|s| {
                    s == "root" || s.starts_with("root:") || s.starts_with("0:") || s == "0"
                })
            {
                out.add(Privilege, owned(&files));
            }
        }
        "setcap" | "visudo" | "usermod" | "useradd" | "groupadd" | "gpasswd" | "passwd"
        | "chpasswd" | "adduser" | "newgrp" => {
            out.add(Privilege, Vec::new());
        }
        // Privilege runners.
        "sudo" | "doas" | "su" | "pkexec" | "runuser" => out.add(Privilege, Vec::new()),
        "sudoedit" => {
            out.add(Privilege, Vec::new());
            out.add(Write, owned(&operands(args, &["-u", "-g"])));
        }
        // Network.
        "curl" | "wget" | "nc" | "ncat" | "netcat" | "socat" | "ssh" | "sftp" | "ftp" | "tftp"
        | "telnet" | "http" | "https" | "xh" | "aria2c" | "lynx" | "w3m" | "links" | "elinks"
        | "ping" | "dig" | "nslookup" | "host" | "whois" | "nmap" | "mosh" | "lftp"
        | "smbclient" | "s3cmd" | "gsutil" | "rclone" | "ncftp" | "axel" | "httpie"
        | "websocat" | "openvpn" => {
            out.add(
                Network,
                args.iter().filter(|a| is_url(a)).cloned().collect(),
            );
            if matches!(name, "curl" | "wget" | "http" | "xh" | "aria2c") {
                let mut files = option_values(args, "-o", "--output");
                files.extend(option_values(args, "-O", "--output-document"));
                files.extend(option_values(args, "", "--output-file"));
                let files: Vec<String> = files
                    .into_iter()
                    .filter(|f| f != "-" && !is_sink(f) && !f.is_empty())
                    .collect();
                if !files.is_empty() {
                    out.add(Write, files);
                }
                // Files sent out: `-d @file`, `-F k=@file`, `-T file`, `--post-file`.
                let mut sent = Vec::new();
                for (short, long) in [
                    ("-d", "--data"),
                    ("", "--data-binary"),
                    ("", "--data-raw"),
                    ("", "--data-urlencode"),
                    ("-F", "--form"),
                    ("-T", "--upload-file"),
                    ("", "--post-file"),
                    ("", "--body-file"),
                    ("-K", "--config"),
                ] {
                    for v in option_values(args, short, long) {
                        if let Some(i) = v.find('@') {
                            sent.push(v[i + 1..].to_string());
                        } else if matches!(short, "-T" | "-K")
                            || long == "--post-file"
                            || long == "--body-file"
                        {
                            sent.push(v);
                        }
                    }
                }
                if !sent.is_empty() {
                    out.add(Read, sent);
                }
            }
            if name == "ssh"
                && operands(
                    args,
                    &[
                        "-i", "-p", "-o", "-l", "-F", "-J", "-L", "-R", "-D", "-W", "-b", "-c",
                        "-E", "-e", "-m", "-O", "-Q", "-S", "-w", "-B", "-I",
                    ],
                )
                .len()
                    > 1
            {
                out.add(Exec, Vec::new());
            }
        }
        "git" => git::effects(args, &mut out),
        "hg" | "svn" => {
            let sub = operands(args, &[]).first().copied().unwrap_or("");
            if matches!(
                sub,
                "push" | "pull" | "clone" | "fetch" | "checkout" | "co" | "update" | "commit"
            ) && name == "svn"
                || matches!(
                    sub,
                    "push" | "pull" | "clone" | "fetch" | "incoming" | "outgoing"
                )
            {
                out.add(Network, Vec::new());
            }
            if name == "hg"
                && (matches!(sub, "strip" | "histedit" | "rebase" | "prune")
                    || sub == "push" && has_flag(args, 'f', &["force"])
                    || sub == "commit" && args.iter().any(|a| a == "--amend"))
            {
                out.add(VcsRewrite, Vec::new());
            }
        }
        _ => {}
    }

    // Exec: shells, interpreters, eval, exec.
    if is_shell(name)
        || super::code::is_interpreter(name)
        || matches!(
            name,
            "eval"
                | "exec"
                | "xargs"
                | "parallel"
                | "watch"
                | "at"
                | "batch"
                | "crontab"
                | "systemd-run"
                | "busybox"
                | "toybox"
                | "expect"
        )
    {
        let ops = operands(
            args,
            &[
                "-c", "-o", "-O", "-m", "-W", "-X", "-I", "-n", "-P", "-L", "-d", "-a", "-s",
            ],
        );
        let script: Vec<String> = if is_shell(name)
            && !args
                .iter()
                .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('c'))
        {
            owned(&ops[..ops.len().min(1)])
        } else {
            Vec::new()
        };
        out.add(Exec, script);
    }
    // A program run from a path outside the system's directories runs code
    // the guard cannot see (`./build.sh`, `~/bin/tool`).
    if cmd.program.contains('/') && !is_system_dir(&cmd.program) {
        out.add(Exec, vec![cmd.program.clone()]);
    }
    if name == "find" {
        let starts: Vec<String> = args
            .iter()
            .take_while(|a| !a.starts_with('-') && !a.starts_with('(') && a.as_str() != "!")
            .cloned()
            .collect();
        let starts = if starts.is_empty() {
            vec![".".to_string()]
        } else {
            starts
        };
        if args.iter().any(|a| a == "-delete") {
            out.add(Delete, starts.clone());
        }
        for (flag, cap) in [
            ("-fprint", Write),
            ("-fprintf", Write),
            ("-fls", Write),
            ("-fprint0", Write),
        ] {
            let files = option_values(args, flag, "");
            if !files.is_empty() {
                out.add(cap, files);
            }
        }
    }
    if installs(name, args)
        || (super::code::is_interpreter(name)
            && args.iter().any(|a| a == "-m")
            && args.iter().any(|a| a == "pip")
            && args.iter().any(|a| a == "install"))
    {
        out.add(Install, Vec::new());
    }
    // A filter with no file operand reads its input, not a file; through
    // xargs or parallel its files are appended unseen, so the read stays.
    let appended = cmd.via.iter().any(|v| v == "xargs" || v == "parallel");
    if !appended {
        out.0
            .retain(|e| e.capability != Read || !e.paths.is_empty());
    }
    out.0
}

/// The options of the reading commands that take a value, so the value is
/// not taken for a file.
fn reader_valued(name: &str) -> &'static [&'static str] {
    match name {
        "head" | "tail" => &[
            "-n",
            "--lines",
            "-c",
            "--bytes",
            "-s",
            "--sleep-interval",
            "--pid",
        ],
        "cut" => &[
            "-d",
            "-f",
            "-c",
            "-b",
            "--delimiter",
            "--fields",
            "--output-delimiter",
        ],
        "sort" => &[
            "-k",
            "-t",
            "-o",
            "-S",
            "-T",
            "--key",
            "--output",
            "--buffer-size",
        ],
        "uniq" => &["-f", "-s", "-w"],
        "od" => &["-A", "-j", "-N", "-t", "-w", "-S"],
        "hexdump" | "hd" => &["-n", "-s", "-e", "-f"],
        "xxd" => &["-c", "-g", "-l", "-s", "-o", "-n"],
        "fold" | "fmt" | "column" => &["-w", "-s", "-t", "-c"],
        "nl" | "pr" | "paste" | "join" => &[
            "-s", "-d", "-w", "-b", "-v", "-i", "-n", "-t", "-1", "-2", "-o",
        ],
        "base64" | "base32" | "basenc" => &["-w", "--wrap"],
        "strings" => &["-n", "-t", "-e"],
        "diff" => &["-U", "-C", "-x", "-X", "-I", "--label"],
        "iconv" => &["-f", "-t", "-o", "--from-code", "--to-code", "--output"],
        "openssl" => &[
            "-in", "-out", "-inkey", "-passin", "-passout", "-key", "-cert", "-CAfile",
        ],
        "ssh-keygen" => &["-f", "-t", "-b", "-C", "-N", "-P", "-E", "-m"],
        "gpg" => &[
            "-o",
            "--output",
            "-r",
            "--recipient",
            "-u",
            "--local-user",
            "--homedir",
        ],
        "security" => &["-s", "-a", "-l", "-c", "-D", "-g", "-w"],
        _ => &[],
    }
}

fn is_system_dir(program: &str) -> bool {
    [
        "/bin/",
        "/usr/bin/",
        "/usr/local/bin/",
        "/sbin/",
        "/usr/sbin/",
        "/usr/local/sbin/",
        "/opt/homebrew/bin/",
        "/usr/libexec/",
    ]
    .iter()
    .any(|d| program.starts_with(d) && !program[d.len()..].contains('/'))
}
