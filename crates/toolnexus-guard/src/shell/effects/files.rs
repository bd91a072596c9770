//! The file tables that need more than a list of operands: archivers and
//! compressors (which way the data flows), and searches and filters (which
//! operand is the pattern or program, not a file).

use super::{Out, has_flag, operands, option_values, owned};
use crate::shell::Capability::*;
use crate::shell::{Redirect, RedirectKind};

/// `tar` (bundled old-style flags included), `zip`, `unzip`, `7z` and the
/// compressors: what is read, written and removed.
pub(super) fn archive(name: &str, args: &[String], out: &mut Out) {
    match name {
        "tar" | "gtar" | "bsdtar" => tar(args, out),
        "zip" => {
            let ops = operands(args, &["-x", "-i", "-b", "-n", "-t", "-tt", "-O", "--out"]);
            if let Some((archive, files)) = ops.split_first() {
                out.add(Write, vec![archive.to_string()]);
                out.add(Read, owned(files));
            }
            if has_flag(args, 'm', &["move"]) {
                out.add(Delete, owned(ops.get(1..).unwrap_or(&[])));
            }
        }
        "unzip" | "7z" => {
            let ops = operands(args, &["-d", "-x", "-P", "-o"]);
            let ops: Vec<&str> = if name == "7z" {
                ops.into_iter().skip(1).collect()
            } else {
                ops
            };
            out.add(Read, owned(&ops[..ops.len().min(1)]));
            let mut dest = option_values(args, "-d", "");
            if name == "7z" {
                dest.extend(option_values(args, "-o", ""));
            }
            if dest.is_empty() {
                dest.push(".".into());
            }
            out.add(Write, dest);
        }
        _ => {
            // A compressor replaces each file by its compressed (or
            // decompressed) twin unless told to keep it or write to stdout.
            let files = owned(&operands(
                args,
                &["-S", "--suffix", "-T", "--threads", "-o"],
            ));
            out.add(Read, files.clone());
            let keeps = has_flag(args, 'c', &["stdout", "to-stdout"])
                || has_flag(args, 'k', &["keep"])
                || has_flag(args, 't', &["test"])
                || has_flag(args, 'l', &["list"]);
            if !keeps && !files.is_empty() {
                out.add(Write, files.clone());
                out.add(Delete, files);
            }
        }
    }
}

fn tar(args: &[String], out: &mut Out) {
    let mut flags = String::new();
    let mut archive = option_values(args, "-f", "--file");
    let mut rest: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        // The first word may be old-style bundled flags: `tar czf out.tgz dir`.
        let bundled = i == 0 && !a.starts_with('-') && a.chars().all(|c| c.is_ascii_alphabetic());
        if bundled || (a.starts_with('-') && !a.starts_with("--")) {
            let letters = a.trim_start_matches('-');
            flags.push_str(letters);
            if letters.ends_with('f') && a != "-f" {
                if let Some(v) = args.get(i + 1) {
                    archive.push(v.clone());
                    i += 1;
                }
            } else if matches!(
                a,
                "-f" | "-C" | "-T" | "-X" | "-I" | "-b" | "-H" | "-V" | "-N" | "-g"
            ) {
                i += 1;
            }
        } else if let Some(long) = a.strip_prefix("--") {
            match long {
                "create" => flags.push('c'),
                "extract" | "get" => flags.push('x'),
                "list" => flags.push('t'),
                "append" | "update" => flags.push('r'),
                "delete" => flags.push('D'),
                "remove-files" => flags.push('R'),
                "directory" | "file" | "files-from" | "exclude-from" => i += 1,
                _ => {}
            }
        } else {
            rest.push(a);
        }
        i += 1;
    }
    let dirs = option_values(args, "-C", "--directory");
    if flags.contains('x') {
        out.add(Read, archive);
        out.add(
            Write,
            if dirs.is_empty() {
                vec![".".to_string()]
            } else {
                dirs
            },
        );
    } else if flags.contains('c') || flags.contains('r') || flags.contains('u') {
        out.add(Read, owned(&rest));
        out.add(Write, archive);
        if flags.contains('R') {
            out.add(Delete, owned(&rest));
        }
    } else if flags.contains('D') {
        out.add(Write, archive);
    } else {
        out.add(Read, archive);
    }
}

/// Searches and filters: the first operand is the pattern, filter or
/// program unless one was given by option; the rest are the files read.
pub(super) fn search(name: &str, args: &[String], redirects: &[Redirect], out: &mut Out) {
    let valued: &[&str] = match name {
        "grep" | "egrep" | "fgrep" | "zgrep" => &[
            "-e",
            "--regexp",
            "-f",
            "--file",
            "-A",
            "-B",
            "-C",
            "-m",
            "--max-count",
            "-d",
            "-D",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--label",
            "--context",
            "--after-context",
            "--before-context",
        ],
        "rg" | "ag" | "ack" => &[
            "-e",
            "--regexp",
            "-f",
            "--file",
            "-A",
            "-B",
            "-C",
            "-m",
            "--max-count",
            "-g",
            "--glob",
            "--iglob",
            "-t",
            "--type",
            "-T",
            "--type-not",
            "-j",
            "--threads",
            "-M",
            "--max-columns",
            "-r",
            "--replace",
            "-E",
            "--encoding",
            "--colors",
            "--color",
            "-d",
            "--max-depth",
            "--ignore-file",
            "--pre",
            "--pre-glob",
            "--sort",
            "--sortr",
            "-G",
            "--file-search-regex",
        ],
        "awk" | "gawk" | "mawk" | "nawk" => &[
            "-F",
            "-v",
            "-f",
            "--file",
            "-e",
            "--source",
            "-i",
            "--include",
            "-l",
            "--load",
            "--assign",
            "--field-separator",
        ],
        // jq's `--arg NAME VALUE` pairs are dropped below.
        _ => &["-f", "--from-file", "--indent", "-L"],
    };
    let mut kept: Vec<String> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if matches!(name, "jq" | "yq" | "gojq")
            && matches!(
                a,
                "--arg" | "--argjson" | "--slurpfile" | "--rawfile" | "--args" | "--jsonargs"
            )
        {
            if let Some(f) = args.get(i + 2)
                && matches!(a, "--slurpfile" | "--rawfile")
            {
                out.add(Read, vec![f.clone()]);
            }
            i += if matches!(a, "--args" | "--jsonargs") {
                args.len()
            } else {
                3
            };
            continue;
        }
        kept.push(args[i].clone());
        i += 1;
    }
    let given = kept.iter().any(|a| {
        matches!(
            a.as_str(),
            "-e" | "--regexp" | "-f" | "--file" | "--from-file" | "--source"
        ) || a.starts_with("--regexp=")
            || a.starts_with("--file=")
    });
    let mut ops = operands(&kept, valued);
    if !given && !ops.is_empty() {
        ops.remove(0);
    }
    let mut paths = owned(&ops);
    // A pattern file (grep -f) or program file (awk -f) is read too.
    paths.extend(option_values(&kept, "-f", "--file"));
    let recursive =
        has_flag(&kept, 'r', &["recursive"]) || has_flag(&kept, 'R', &["dereference-recursive"]);
    let searches_tree = (matches!(name, "grep" | "egrep" | "fgrep") && recursive)
        || matches!(name, "rg" | "ag" | "ack");
    let fed = redirects
        .iter()
        .any(|r| matches!(r.kind, RedirectKind::HereDoc | RedirectKind::Read));
    if paths.is_empty() && searches_tree && !fed {
        paths.push(".".into());
    }
    out.add(Read, paths);
}
