//! Git's subcommands by capability, past its global options as git reads
//! them (`-C dir`, `-c k=v`, `--git-dir=…`, `--no-pager`).

use super::super::runners::git_subcommand;
use super::super::word::Word;
use super::{Out, has_flag, operands, owned};
use crate::shell::Capability::*;

/// Git's subcommands by capability, past its global options.
pub(super) fn effects(args: &[String], out: &mut Out) {
    let words: Vec<Word> = args.iter().map(|a| Word::literal(a)).collect();
    let Some(s) = git_subcommand(&words) else {
        return;
    };
    let sub = args[s].as_str();
    let rest = &args[s + 1..];
    let flag = |short: char, long: &[&str]| has_flag(rest, short, long);
    let any = |xs: &[&str]| rest.iter().any(|a| xs.contains(&a.as_str()));
    match sub {
        "push" => {
            out.add(Network, Vec::new());
            let refs = operands(
                rest,
                &["--repo", "-o", "--push-option", "--receive-pack", "--exec"],
            );
            let forced = flag('f', &["force", "force-with-lease", "force-if-includes", "mirror", "delete", "prune"])
                || flag('d', &[])
                || refs.iter().skip(1).any(|r| r.starts_with('+') || r.starts_with(':'))
                // An argument built from an expansion may be any of those.
                || rest.iter().any(|a| a.contains('$') || a.contains('`'));
            if forced {
                out.add(VcsRewrite, Vec::new());
            }
        }
        "fetch" | "pull" | "clone" | "ls-remote" | "remote" | "archive" | "request-pull"
        | "send-email" | "svn" => {
            if sub != "remote" || any(&["update", "prune", "show"]) {
                out.add(Network, Vec::new());
            }
            if sub == "clone" {
                let ops = operands(
                    rest,
                    &[
                        "-b",
                        "--branch",
                        "-o",
                        "--origin",
                        "--depth",
                        "-c",
                        "--config",
                        "--reference",
                        "-j",
                        "--template",
                        "--separate-git-dir",
                        "-u",
                        "--upload-pack",
                    ],
                );
                if let Some(dir) = ops.get(1) {
                    out.add(Write, vec![dir.to_string()]);
                }
            }
            if sub == "pull" && any(&["--rebase", "-r"]) {
                out.add(VcsRewrite, Vec::new());
            }
            if sub == "fetch" && (flag('f', &["force"]) || rest.iter().any(|r| r.starts_with('+')))
            {
                out.add(VcsRewrite, Vec::new());
            }
        }
        "submodule" if any(&["update", "add", "sync"]) => out.add(Network, Vec::new()),
        "reset" if any(&["--hard", "--keep", "--merge"]) => {
            out.add(VcsRewrite, Vec::new());
            out.add(Delete, Vec::new());
        }
        "rebase" if !any(&["--abort", "--quit", "--show-current-patch", "--edit-todo"]) => {
            out.add(VcsRewrite, Vec::new())
        }
        "filter-branch" | "filter-repo" | "replace" => out.add(VcsRewrite, Vec::new()),
        "commit"
            if any(&["--amend"])
                || rest
                    .iter()
                    .any(|a| a.starts_with("--fixup=amend") || a.starts_with("--fixup=reword")) =>
        {
            out.add(VcsRewrite, Vec::new())
        }
        "branch"
            if flag('D', &["delete"])
                || flag('d', &[])
                || flag('M', &[])
                || flag('C', &[])
                || (flag('f', &["force"]) && !any(&["--list"])) =>
        {
            out.add(VcsRewrite, Vec::new())
        }
        "tag" if flag('d', &["delete"]) || flag('f', &["force"]) => out.add(VcsRewrite, Vec::new()),
        "update-ref" | "symbolic-ref"
            if !rest.is_empty()
                && (rest.iter().any(|a| a == "-d" || a == "--stdin")
                    || operands(rest, &["-m"]).len() >= 2) =>
        {
            out.add(VcsRewrite, Vec::new())
        }
        "reflog" if any(&["expire", "delete", "drop"]) => out.add(VcsRewrite, Vec::new()),
        "stash" if any(&["drop", "clear"]) => out.add(VcsRewrite, Vec::new()),
        "gc" | "prune" if rest.iter().any(|a| a.starts_with("--prune")) || sub == "prune" => {
            out.add(VcsRewrite, Vec::new())
        }
        "checkout" | "switch"
            if flag('f', &["force", "discard-changes"]) || any(&["-B", "--orphan", "-C"]) =>
        {
            out.add(VcsRewrite, Vec::new());
            out.add(Write, Vec::new());
        }
        "checkout" | "restore" if any(&["--", "."]) || sub == "restore" => out.add(
            Write,
            operands(rest, &["-s", "--source"])
                .into_iter()
                .map(String::from)
                .collect(),
        ),
        "clean" => {
            let ops = operands(rest, &["-e", "--exclude"]);
            let paths = if ops.is_empty() {
                vec![".".to_string()]
            } else {
                owned(&ops)
            };
            // A dry run only lists what it would remove.
            if !flag('n', &["dry-run"]) {
                out.add(Delete, paths);
            }
        }
        "rm" => out.add(Delete, owned(&operands(rest, &[]))),
        "mv" => {
            let ops = operands(rest, &[]);
            if let Some((dest, src)) = ops.split_last() {
                out.add(Delete, owned(src));
                out.add(Write, vec![dest.to_string()]);
            }
        }
        "apply" | "am" | "cherry-pick" | "merge" | "revert" => out.add(Write, Vec::new()),
        "config"
            if !any(&["--get", "--list", "-l", "--get-all", "--get-regexp"])
                && operands(rest, &["-f", "--file"]).len() >= 2 =>
        {
            out.add(Write, Vec::new())
        }
        _ => {}
    }
}
