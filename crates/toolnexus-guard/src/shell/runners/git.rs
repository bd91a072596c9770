//! Git as a runner: its global options skipped before the subcommand as git
//! skips them, and the subcommands, aliases and configuration keys that run
//! other commands.

use super::super::code::quote;
use super::super::word::Word;
use super::{Next, operands_from, run, script};

/// Git's global options that come before the subcommand, and whether each
/// takes a value; git reads them the same way.
const GIT_VALUED: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--exec-path",
    "--super-prefix",
    "--config-env",
    "--list-cmds",
    "--attr-source",
];

/// The index of git's subcommand among its arguments, past its global
/// options (`-C dir`, `-c k=v`, `--git-dir=…`, `--no-pager`, `-P`…).
pub(crate) fn git_subcommand(args: &[Word]) -> Option<usize> {
    git_subcommand_in(args.iter().map(|w| w.text.as_str()))
}

/// [`git_subcommand`] over the arguments' texts, for a command already read.
pub(crate) fn git_subcommand_in<'a>(args: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    let mut args = args.into_iter().enumerate();
    while let Some((i, t)) = args.next() {
        if !t.starts_with('-') {
            return Some(i);
        }
        if GIT_VALUED.contains(&t) {
            args.next();
        }
    }
    None
}

/// Configuration keys whose value is a command git runs.
fn git_key_runs(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    // An alias renames a subcommand (`alias.p = push -f`) or runs a shell.
    key.starts_with("alias.")
        || matches!(
            key.as_str(),
            "core.sshcommand"
                | "core.pager"
                | "core.editor"
                | "core.fsmonitor"
                | "core.hookspath"
                | "core.askpass"
                | "core.gitproxy"
                | "credential.helper"
                | "diff.external"
                | "sequence.editor"
                | "gpg.program"
                | "gpg.ssh.program"
                | "uploadpack.packobjectshook"
                | "pager.log"
                | "pager.diff"
                | "pager.show"
        )
        || key.ends_with(".command")
        || key.ends_with(".cmd")
        || key.ends_with(".textconv")
        || key.ends_with(".process")
        || key.ends_with(".clean")
        || key.ends_with(".smudge")
        || key.ends_with(".driver")
        || key.ends_with(".helper")
        || key.ends_with(".program")
}

pub(super) fn git(args: &[Word]) -> Vec<Next> {
    let mut out = Vec::new();
    let sub = git_subcommand(args);
    for (i, w) in args[..sub.unwrap_or(args.len())].iter().enumerate() {
        // `-c key=value`, `--config-env key=VAR` and `--config-env=key=VAR`.
        let setting = match w.text.as_str() {
            "-c" | "--config-env" => args.get(i + 1).map(|kv| (kv.text.clone(), kv)),
            t => t
                .strip_prefix("--config-env=")
                .map(|kv| (kv.to_string(), w)),
        };
        if let Some((kv, word)) = setting {
            let k = kv.split_once('=').map_or(kv.as_str(), |(k, _)| k);
            if word.dynamic || git_key_runs(k) {
                out.push(Next::Unread(format!(
                    "`git {}` sets a command git runs: {}",
                    w.text.split('=').next().unwrap_or("-c"),
                    quote(&word.raw)
                )));
            }
        }
    }
    let Some(s) = sub else {
        return out;
    };
    let rest = &args[s + 1..];
    match args[s].text.as_str() {
        "rebase" => {
            for (i, w) in rest.iter().enumerate() {
                if w.text == "-x" || w.text == "--exec" {
                    out.extend(script(
                        "git rebase --exec",
                        rest.get(i + 1..i + 2).unwrap_or(&[]),
                    ));
                } else if let Some(v) = w.text.strip_prefix("--exec=") {
                    out.push(Next::Script {
                        via: "git rebase --exec".into(),
                        text: v.to_string(),
                    });
                }
            }
        }
        "submodule" if rest.iter().any(|w| w.text == "foreach") => {
            let at = rest.iter().position(|w| w.text == "foreach").unwrap_or(0);
            let i = at + 1 + operands_from(&rest[at + 1..], &[]);
            out.extend(script(
                "git submodule foreach",
                rest.get(i..).unwrap_or(&[]),
            ));
        }
        "bisect" if rest.first().is_some_and(|w| w.text == "run") => {
            out.extend(run("git bisect run", &rest[1..]));
        }
        "config" => {
            // Setting a command-running key is a command for later.
            let ops: Vec<&Word> = rest.iter().filter(|w| !w.text.starts_with('-')).collect();
            if let [k, v, ..] = ops.as_slice()
                && git_key_runs(&k.text)
            {
                out.push(Next::Unread(format!(
                    "`git config` sets a command git runs: {} {}",
                    k.text,
                    quote(&v.text)
                )));
            }
        }
        _ => {}
    }
    out
}
