//! Commands that run other commands: what each hands on, read from its
//! options the way it reads them (`sudo -u root rm`, `timeout -s KILL 5 rm`,
//! `find . -exec rm {} ;`, `sh -c 'rm …'`, `eval 'rm …'`), and the
//! interpreters whose code the guard does not read.

use super::code::{self, Code, quote};
use super::word::Word;

mod git;

use git::git;
pub(crate) use git::{git_subcommand, git_subcommand_in};

/// What a command hands on to run.
pub(crate) enum Next {
    /// Runs these words as a command, unwrapped from the runner named.
    Run { via: String, words: Vec<Word> },
    /// Runs this text as shell code.
    Script { via: String, text: String },
    /// Reads code from its standard input: shell code when `shell`.
    Stdin { label: String, shell: bool },
    /// Runs something the guard cannot read.
    Unread(String),
}

/// The shells whose `-c` text and standard input are shell code.
pub(crate) fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "mksh"
            | "ash"
            | "fish"
            | "yash"
            | "posh"
            | "csh"
            | "tcsh"
            | "rbash"
    )
}

/// Skips options: returns the index of the first operand (after a `--`).
/// `valued` lists options that take the next word as their value (or an
/// attached one: `-uroot`, `--user=root`).
fn operands_from(args: &[Word], valued: &[&str]) -> usize {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            return i + 1;
        }
        if !t.starts_with('-') || t == "-" {
            return i;
        }
        if valued.contains(&t) {
            i += 1;
        }
        i += 1;
    }
    // A valued option at the end has no value: there is no operand.
    i.min(args.len())
}

/// Whether a word sets a variable (`NAME=value`), as `env` and `sudo` read it.
fn is_assignment(text: &str) -> bool {
    match text.split_once('=') {
        Some((name, _)) => {
            !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// Whether a word holds a command or process substitution: the text of a
/// script run from it is generated, not a file the policy can judge.
fn is_substituted(w: &Word) -> bool {
    w.dynamic
        && (w.raw.contains("$(")
            || w.raw.contains('`')
            || w.raw.contains("<(")
            || w.raw.contains(">("))
}

/// A path that names the process's own input.
fn is_stdin_path(path: &str) -> bool {
    matches!(path, "/dev/stdin" | "/dev/fd/0" | "/proc/self/fd/0")
}

fn run(via: &str, words: &[Word]) -> Vec<Next> {
    if words.is_empty() {
        return Vec::new();
    }
    vec![Next::Run {
        via: via.to_string(),
        words: words.to_vec(),
    }]
}

/// Shell code from words: joined with spaces as `eval` and `sh -c` see it,
/// or unread when any is built from an expansion.
fn script(via: &str, words: &[Word]) -> Vec<Next> {
    if let Some(w) = words.iter().find(|w| w.dynamic) {
        return vec![Next::Unread(format!(
            "`{via}` runs text built from an expansion: {}",
            quote(&w.raw)
        ))];
    }
    let text: Vec<&str> = words.iter().map(|w| w.text.as_str()).collect();
    vec![Next::Script {
        via: via.to_string(),
        text: text.join(" "),
    }]
}

/// What `name` (already normalised) with these arguments hands on.
pub(crate) fn analyse(name: &str, args: &[Word]) -> Vec<Next> {
    if is_shell(name) {
        return shell(name, args);
    }
    if code::is_interpreter(name) {
        return match code::interpreter_code(name, args) {
            Code::Inline(reason) => vec![Next::Unread(reason)],
            Code::Stdin => vec![Next::Stdin {
                label: name.to_string(),
                shell: false,
            }],
            Code::None => Vec::new(),
        };
    }
    match name {
        "eval" => script("eval", args),
        "source" | "." if args.first().is_some_and(|w| is_stdin_path(&w.text)) => {
            vec![Next::Stdin {
                label: name.to_string(),
                shell: true,
            }]
        }
        "source" | "." => match args.first() {
            Some(w) if is_substituted(w) => vec![Next::Unread(format!(
                "`{name}` reads a script from an expansion or substitution: {}",
                quote(&w.raw)
            ))],
            _ => Vec::new(),
        },
        "trap" => match args.first() {
            Some(w) if !w.text.starts_with('-') => script("trap", &args[..1]),
            _ => Vec::new(),
        },
        "alias" => args
            .iter()
            .filter_map(|w| w.text.split_once('=').map(|(_, v)| (w, v)))
            .flat_map(|(w, v)| {
                if w.dynamic {
                    script("alias", std::slice::from_ref(w))
                } else {
                    vec![Next::Script {
                        via: "alias".into(),
                        text: v.to_string(),
                    }]
                }
            })
            .collect(),
        "command" => {
            let i = operands_from(args, &[]);
            if args[..i].iter().any(|w| w.text.contains(['v', 'V'])) {
                return Vec::new();
            }
            run("command", &args[i..])
        }
        "builtin" | "nohup" | "unbuffer" | "nocache" | "catchsegv" | "caffeinate"
        | "proxychains" | "proxychains4" | "torsocks" | "tsocks" | "firejail" | "systemd-run"
        | "fakeroot" => {
            let valued: &[&str] = match name {
                "systemd-run" => &[
                    "-p",
                    "--property",
                    "-u",
                    "--unit",
                    "--uid",
                    "--gid",
                    "-E",
                    "--setenv",
                ],
                _ => &[],
            };
            run(name, &args[operands_from(args, valued)..])
        }
        "exec" => run("exec", &args[operands_from(args, &["-a"])..]),
        "time" => run(
            "time",
            &args[operands_from(args, &["-f", "--format", "-o", "--output"])..],
        ),
        "nice" => {
            let mut i = operands_from(args, &["-n", "--adjustment"]);
            // `nice -10 cmd` is an old spelling of `-n 10`.
            while i < args.len()
                && args[i].text.starts_with('-')
                && args[i].text[1..].parse::<i64>().is_ok()
            {
                i += 1;
            }
            run("nice", &args[i..])
        }
        "ionice" => {
            if args
                .iter()
                .any(|w| w.text == "-p" || w.text == "-P" || w.text == "-u")
            {
                return Vec::new();
            }
            run(
                "ionice",
                &args[operands_from(args, &["-c", "-n", "--class", "--classdata"])..],
            )
        }
        "taskset" => {
            if args
                .iter()
                .any(|w| w.text.starts_with("-p") || w.text == "--pid" || w.text == "-ap")
            {
                return Vec::new();
            }
            let i = operands_from(args, &[]);
            // With `-c`, the list is an operand like the mask.
            run("taskset", args.get(i + 1..).unwrap_or(&[]))
        }
        "setsid" | "stdbuf" | "chrt" | "numactl" | "cgexec" | "sg" | "strace" | "ltrace"
        | "valgrind" => {
            let valued: &[&str] = match name {
                "stdbuf" => &["-i", "-o", "-e", "--input", "--output", "--error"],
                "numactl" => &["-C", "-N", "-m", "-p", "-i"],
                "cgexec" => &["-g"],
                "strace" | "ltrace" => &["-o", "-e", "-p", "-s", "-u", "-E", "-a", "-P"],
                _ => &[],
            };
            let mut i = operands_from(args, valued);
            if name == "chrt" || name == "sg" {
                i += 1;
            }
            run(name, args.get(i..).unwrap_or(&[]))
        }
        "timeout" => {
            let i = operands_from(args, &["-s", "--signal", "-k", "--kill-after"]);
            run("timeout", args.get(i + 1..).unwrap_or(&[]))
        }
        "chroot" => {
            let i = operands_from(args, &["--userspec", "--groups"]);
            run("chroot", args.get(i + 1..).unwrap_or(&[]))
        }
        "env" => env(args),
        "sudo" | "sudoedit" => sudo(name, args),
        "doas" => run("doas", &args[operands_from(args, &["-u", "-C"])..]),
        "pkexec" => run("pkexec", &args[operands_from(args, &["--user"])..]),
        "su" | "runuser" => {
            for (i, w) in args.iter().enumerate() {
                // `-c`, or a cluster ending in it (`su -lc 'cmd'`).
                let short_c = w.text.starts_with('-')
                    && !w.text.starts_with("--")
                    && w.text.ends_with('c')
                    && w.text[1..].chars().all(|c| c.is_ascii_alphabetic());
                if short_c || w.text == "--command" || w.text == "--session-command" {
                    return script(&format!("{name} -c"), args.get(i + 1..i + 2).unwrap_or(&[]));
                }
                if let Some(v) = w.text.strip_prefix("--command=") {
                    return vec![Next::Script {
                        via: format!("{name} -c"),
                        text: v.to_string(),
                    }];
                }
            }
            if let Some(i) = args.iter().position(|w| w.text == "--")
                && name == "runuser"
            {
                return run(name, &args[i + 1..]);
            }
            Vec::new()
        }
        "xargs" => {
            let valued = [
                "-a",
                "-d",
                "-E",
                "-I",
                "-L",
                "-n",
                "-P",
                "-s",
                "--arg-file",
                "--delimiter",
                "--eof",
                "--replace",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ];
            let i = operands_from(args, &valued);
            if i >= args.len() {
                // With no command, xargs runs echo.
                return run("xargs", &[Word::literal("echo")]);
            }
            let mut tokens = vec!["{}".to_string()];
            for (j, w) in args[..i].iter().enumerate() {
                if w.text == "-I" || w.text == "--replace" {
                    tokens.extend(args.get(j + 1).map(|t| t.text.clone()));
                } else if let Some(t) = w
                    .text
                    .strip_prefix("-I")
                    .or_else(|| w.text.strip_prefix("--replace="))
                {
                    tokens.push(t.to_string());
                }
            }
            let words = from_input(&args[i..], &tokens);
            // With -I the input replaces the token; without, it is appended.
            if let Some(reason) = appended_runs("xargs", &words)
                && tokens.len() == 1
            {
                return vec![Next::Unread(reason)];
            }
            run("xargs", &words)
        }
        // `hash -p PATH NAME` makes NAME run another program.
        "hash" if args.iter().any(|w| w.text.starts_with("-p")) => vec![Next::Unread(format!(
            "`hash -p` makes a name run another program: {}",
            quote(
                &args
                    .iter()
                    .map(|w| w.text.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        ))],
        "parallel" => parallel(args),
        "watch" => {
            let i = operands_from(args, &["-n", "--interval", "-q", "--equexit"]);
            if args[..i]
                .iter()
                .any(|w| w.text == "-x" || w.text == "--exec")
            {
                run("watch", &args[i..])
            } else {
                script("watch", &args[i..])
            }
        }
        "flock" => {
            for (i, w) in args.iter().enumerate() {
                if w.text == "-c" || w.text == "--command" {
                    return script("flock -c", args.get(i + 1..i + 2).unwrap_or(&[]));
                }
            }
            let i = operands_from(args, &["-w", "--timeout", "-E", "--conflict-exit-code"]);
            run("flock", args.get(i + 1..).unwrap_or(&[]))
        }
        "script" => {
            for (i, w) in args.iter().enumerate() {
                let short_c = w.text.starts_with('-')
                    && !w.text.starts_with("--")
                    && w.text.ends_with('c')
                    && w.text[1..].chars().all(|c| c.is_ascii_alphabetic());
                if short_c || w.text == "--command" {
                    return script("script -c", args.get(i + 1..i + 2).unwrap_or(&[]));
                }
            }
            Vec::new()
        }
        "at" | "batch" => {
            if args
                .iter()
                .any(|w| w.text == "-f" || matches!(w.text.as_str(), "-l" | "-r" | "-d" | "-c"))
            {
                Vec::new()
            } else {
                vec![Next::Stdin {
                    label: name.to_string(),
                    shell: true,
                }]
            }
        }
        // A cron table read from the input is commands for later.
        "crontab" => {
            let i = operands_from(args, &["-u"]);
            let lists = args[..i]
                .iter()
                .any(|w| matches!(w.text.as_str(), "-l" | "-r" | "-e" | "-i"));
            match args.get(i) {
                _ if lists => Vec::new(),
                Some(w) if w.text != "-" => Vec::new(),
                _ => vec![Next::Stdin {
                    label: "crontab".into(),
                    shell: false,
                }],
            }
        }
        "busybox" | "toybox" => run(name, args),
        "find" => find(args),
        "fd" | "fdfind" => {
            for (i, w) in args.iter().enumerate() {
                if matches!(w.text.as_str(), "-x" | "--exec" | "-X" | "--exec-batch") {
                    let end = args[i + 1..]
                        .iter()
                        .position(|w| w.text == ";")
                        .map_or(args.len(), |p| i + 1 + p);
                    return run(&format!("{name} {}", w.text), &args[i + 1..end]);
                }
            }
            Vec::new()
        }
        "git" => git(args),
        "ssh" => {
            let local = args.iter().find(|w| {
                let t = w.text.to_ascii_lowercase();
                t.contains("proxycommand")
                    || t.contains("localcommand")
                    || t.contains("permitlocalcommand")
            });
            match local {
                Some(w) => vec![Next::Unread(format!(
                    "`ssh` option that runs a local command: {}",
                    quote(&w.text)
                ))],
                None => Vec::new(),
            }
        }
        "tar" | "gtar" | "bsdtar" => {
            let runs = args.iter().find(|w| {
                let t = &w.text;
                t.starts_with("--to-command")
                    || t.starts_with("--checkpoint-action")
                    || t.starts_with("--use-compress-program")
                    || t.starts_with("--info-script")
                    || t.starts_with("--new-volume-script")
                    || t == "-I"
                    || t == "-F"
            });
            match runs {
                Some(w) => vec![Next::Unread(format!(
                    "`{name}` option that runs a command: {}",
                    quote(&w.text)
                ))],
                None => Vec::new(),
            }
        }
        "rg" => match args
            .iter()
            .find(|w| w.text == "--pre" || w.text.starts_with("--pre="))
        {
            Some(w) => vec![Next::Unread(format!(
                "`rg --pre` runs a command on every file: {}",
                quote(&w.text)
            ))],
            None => Vec::new(),
        },
        // Editors run their own commands from the command line, shell
        // escapes (`:!rm …`) included.
        "vi" | "vim" | "nvim" | "ex" | "view" | "gvim" | "emacs" => {
            let code = args.iter().enumerate().find_map(|(i, w)| {
                let t = w.text.as_str();
                let valued = matches!(
                    t,
                    "-c" | "--cmd"
                        | "-S"
                        | "--eval"
                        | "-eval"
                        | "-l"
                        | "--load"
                        | "-f"
                        | "--funcall"
                );
                let plus = t
                    .strip_prefix('+')
                    .is_some_and(|r| !r.is_empty() && !r.chars().all(|c| c.is_ascii_digit()));
                if valued {
                    Some(format!(
                        "{t} {}",
                        args.get(i + 1).map_or("", |w| w.text.as_str())
                    ))
                } else if plus || t.starts_with("--eval=") {
                    Some(t.to_string())
                } else {
                    None
                }
            });
            match code {
                Some(c) => vec![Next::Unread(format!(
                    "`{name}` runs editor commands from its command line: {}",
                    quote(&c)
                ))],
                None => Vec::new(),
            }
        }
        // A terminal multiplexer types into, or starts, a shell.
        "tmux" | "screen" => {
            let types = args.iter().any(|w| {
                matches!(
                    w.text.as_str(),
                    "send-keys"
                        | "send"
                        | "new-session"
                        | "new"
                        | "new-window"
                        | "neww"
                        | "split-window"
                        | "splitw"
                        | "respawn-pane"
                        | "run-shell"
                        | "run"
                        | "-X"
                        | "-dm"
                        | "-dmS"
                        | "stuff"
                )
            });
            if types && args.len() > 1 {
                vec![Next::Unread(format!(
                    "`{name}` runs or types commands the guard does not see: {}",
                    quote(
                        &args
                            .iter()
                            .map(|w| w.text.as_str())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                ))]
            } else {
                Vec::new()
            }
        }
        "awk" | "gawk" | "mawk" | "nawk" => code::awk_runs(name, args)
            .map(Next::Unread)
            .into_iter()
            .collect(),
        "sed" | "gsed" => code::sed_runs(name, args)
            .map(Next::Unread)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

fn shell(name: &str, args: &[Word]) -> Vec<Next> {
    let mut i = 0;
    let mut command = false;
    let mut stdin = false;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            if t == "-" {
                stdin = true;
            }
            break;
        }
        if !(t.starts_with('-') || t.starts_with('+')) {
            break;
        }
        if matches!(t, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 1;
        } else if !t.starts_with("--") {
            command |= t[1..].contains('c');
            stdin |= t[1..].contains('s');
        }
        i += 1;
    }
    let label = format!("{name} -c");
    if command {
        return match args.get(i) {
            Some(w) => script(&label, std::slice::from_ref(w)),
            None => Vec::new(),
        };
    }
    match args.get(i) {
        Some(w) if !stdin && is_stdin_path(&w.text) => vec![Next::Stdin {
            label: name.to_string(),
            shell: true,
        }],
        Some(w) if !stdin && is_substituted(w) => vec![Next::Unread(format!(
            "`{name}` runs a script from an expansion or substitution: {}",
            quote(&w.raw)
        ))],
        Some(_) if !stdin => Vec::new(),
        _ => vec![Next::Stdin {
            label: name.to_string(),
            shell: true,
        }],
    }
}

fn env(args: &[Word]) -> Vec<Next> {
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if matches!(t, "-S" | "--split-string")
            || t.starts_with("--split-string=")
            || (t.starts_with("-S") && t.len() > 2)
        {
            // `env -S 'cmd args'` splits the string into the command.
            let (text, next) = match t.split_once('=') {
                Some((_, v)) => (Some(Word::literal(v)), i + 1),
                None if t.len() > 2 && !t.starts_with("--") => {
                    (Some(Word::literal(&t[2..])), i + 1)
                }
                None => (args.get(i + 1).cloned(), i + 2),
            };
            let mut words: Vec<Word> = text.into_iter().collect();
            words.extend_from_slice(args.get(next..).unwrap_or(&[]));
            return script("env -S", &words);
        }
        if matches!(
            t,
            "-u" | "--unset" | "-C" | "--chdir" | "-P" | "-a" | "--argv0"
        ) {
            i += 2;
            continue;
        }
        if t.starts_with('-') && t != "-" {
            i += 1;
            continue;
        }
        if t == "-" || is_assignment(t) {
            if let Some(reason) = runs_variable(t) {
                return vec![Next::Unread(reason)];
            }
            i += 1;
            continue;
        }
        break;
    }
    run("env", args.get(i..).unwrap_or(&[]))
}

/// Variables whose value is a program, a library or a script that the
/// command (or a program it starts) runs: set on a command line they run
/// code the guard does not see.
const RUNNING_VARIABLES: &[&str] = &[
    "PATH",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "PS4",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_EDITOR",
    "GIT_PAGER",
    "GIT_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_EXEC_PATH",
    "GIT_PROXY_COMMAND",
    "GIT_SEQUENCE_EDITOR",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_GLOBAL",
    "EDITOR",
    "VISUAL",
    "PAGER",
    "MANPAGER",
    "LESSOPEN",
    "LESSCLOSE",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "RUSTC_WRAPPER",
    "RUSTC",
    "CARGO_BUILD_RUSTC_WRAPPER",
    "CC",
    "CXX",
    "MAKESHELL",
];

/// The reason a `NAME=value` word runs code, when its name is one of
/// [`RUNNING_VARIABLES`] (or git's `GIT_CONFIG_KEY_n`/`VALUE_n` pairs).
pub(crate) fn runs_variable(assignment: &str) -> Option<String> {
    let (name, _) = assignment.split_once('=')?;
    let named = RUNNING_VARIABLES.contains(&name)
        || name.starts_with("GIT_CONFIG_KEY_")
        || name.starts_with("GIT_CONFIG_VALUE_")
        || name.starts_with("BASH_FUNC_");
    named.then(|| {
        format!(
            "`{name}=` on a command line makes it run code the guard does not see: {}",
            quote(assignment)
        )
    })
}

/// Marks the words that hold a replace string (`{}`, xargs' `-I` token) as
/// built from the runner's input, so a command word or `sh -c` code made
/// from them is unread like any other expansion.
fn from_input(words: &[Word], tokens: &[String]) -> Vec<Word> {
    words
        .iter()
        .map(|w| {
            let mut w = w.clone();
            if tokens
                .iter()
                .any(|t| !t.is_empty() && w.text.contains(t.as_str()))
            {
                w.dynamic = true;
            }
            w
        })
        .collect()
}

/// Commands that run the command their arguments name.
fn is_runner(name: &str) -> bool {
    matches!(
        name,
        "sudo"
            | "doas"
            | "pkexec"
            | "env"
            | "command"
            | "builtin"
            | "exec"
            | "nice"
            | "nohup"
            | "time"
            | "timeout"
            | "stdbuf"
            | "ionice"
            | "chroot"
            | "flock"
            | "watch"
            | "xargs"
            | "parallel"
            | "setsid"
            | "taskset"
            | "chrt"
            | "busybox"
            | "toybox"
            | "strace"
            | "ltrace"
            | "unbuffer"
            | "systemd-run"
            | "runuser"
            | "su"
    )
}

/// When xargs or parallel append their input to a command that then runs a
/// command of its own (`xargs env`, `xargs sudo`, `xargs sh -c`), the input
/// names what runs: the reason.
fn appended_runs(runner: &str, words: &[Word]) -> Option<String> {
    let mut words = words.to_vec();
    // Each step unwraps one runner; the words only get shorter.
    for _ in 0..words.len() + 1 {
        let first = words.first()?;
        let name = super::word::basename(&first.text).to_string();
        let next = analyse(&name, &words[1..]);
        match next.as_slice() {
            [Next::Run { words: inner, .. }] => words = inner.clone(),
            [] if is_runner(&name)
                || (is_shell(&name)
                    && words[1..].iter().any(|w| {
                        w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('c')
                    })) =>
            {
                return Some(format!(
                    "`{runner}` appends its input to `{name}`, which runs it as a command"
                ));
            }
            _ => return None,
        }
    }
    None
}

fn sudo(name: &str, args: &[Word]) -> Vec<Next> {
    if name == "sudoedit"
        || args
            .iter()
            .take_while(|w| w.text.starts_with('-'))
            .any(|w| w.text == "-e" || w.text == "--edit")
    {
        return Vec::new();
    }
    let valued = [
        "-u",
        "-g",
        "-C",
        "-D",
        "-h",
        "-p",
        "-r",
        "-t",
        "-U",
        "-T",
        "-R",
        "--user",
        "--group",
        "--close-from",
        "--chdir",
        "--host",
        "--prompt",
        "--role",
        "--type",
        "--other-user",
        "--command-timeout",
        "--chroot",
    ];
    let mut i = operands_from(args, &valued);
    while i < args.len() && is_assignment(&args[i].text) {
        i += 1;
    }
    run("sudo", &args[i..])
}

/// GNU parallel: the words before `:::` are a command it runs through a
/// shell; with none, each input line is a command.
fn parallel(args: &[Word]) -> Vec<Next> {
    let valued = [
        "-j",
        "--jobs",
        "-N",
        "-n",
        "--max-args",
        "-S",
        "--sshlogin",
        "--joblog",
        "--results",
        "-a",
        "--arg-file",
        "-d",
        "--delimiter",
        "-I",
        "--colsep",
        "-L",
        "--timeout",
        "--delay",
        "--tmpdir",
        "--workdir",
        "--tag-string",
        "--halt",
    ];
    let i = operands_from(args, &valued);
    let end = args[i..]
        .iter()
        .position(|w| w.text.starts_with(":::"))
        .map_or(args.len(), |p| i + p);
    if i >= end {
        return vec![Next::Stdin {
            label: "parallel".into(),
            shell: true,
        }];
    }
    let tokens = [
        "{}", "{.}", "{/}", "{//}", "{/.}", "{#}", "{%}", "{1}", "{2}",
    ]
    .map(String::from);
    let words = from_input(&args[i..end], &tokens);
    if let Some(reason) = appended_runs("parallel", &words) {
        return vec![Next::Unread(reason)];
    }
    script("parallel", &words)
}

/// `find`'s actions that run commands: `-exec`, `-execdir`, `-ok`, `-okdir`,
/// each up to its `;` or `+`.
fn find(args: &[Word]) -> Vec<Next> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let t = args[i].text.as_str();
        if matches!(t, "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let mut end = start;
            while end < args.len() && args[end].text != ";" && args[end].text != "+" {
                end += 1;
            }
            let via = format!("find {t}");
            let words = from_input(&args[start..end], &["{}".to_string()]);
            out.extend(run(&via, &words));
            i = end;
        }
        i += 1;
    }
    out
}
