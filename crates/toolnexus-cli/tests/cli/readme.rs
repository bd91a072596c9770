//! The README cannot drift: its shell examples that run offline are run here,
//! against the files in the repository, and every output it shows is compared
//! with what the binary prints today.
//!
//! What runs:
//!
//! - In a ```` ```sh ```` block, every line (a trailing `\` joins the next)
//!   that starts with `toolnexus ` or `cargo run --release -- ` (both mean the
//!   binary this test was built with) runs and must exit 0. Other lines
//!   (`cargo test`, `claude`, `echo … |`) are not run. A trailing `# comment`
//!   is not part of the command.
//! - In a ```` ```text ```` block, a line `$ toolnexus …` is a command and
//!   the lines after it, up to the next `$ ` line or the end of the block, are
//!   what it prints (standard output, then standard error), compared line by
//!   line (trailing spaces and trailing blank lines aside). A shown output
//!   whose last line is `[exit N]` must end with status N; otherwise a
//!   command whose shown output ends in a `toolnexus: error:` line must
//!   fail, and any other must exit 0. A text block without a `$ ` line is an
//!   illustration and is not run.
//!
//! Commands run from a scratch directory in which `examples/` and `crates/`
//! are the repository's, so the paths the README names are the repository's
//! files and what a command writes stays out of the tree. No API key is set,
//! `HOME` is the scratch directory, and `TOOLNEXUS_MODEL_DIR` is an empty
//! directory unless the block is marked `model`. Only what the shell needs for
//! the README's commands is understood (words, `'…'` and `"…"`, and a last
//! `< FILE` for standard input): a pipe, another redirection, a variable or a
//! `…` in a command fails the test, so such a block must be marked.
//!
//! Elisions in a shown output: a line `...` stands for any number of lines,
//! and `[..]` inside a line for any text on that line (a latency, a path).
//!
//! Markers, an HTML comment (invisible on the rendered page) on the line just
//! before a block's opening fence:
//!
//! - `<!-- readme-test: skip (why) -->`: not run; the reason is required (a
//!   key, the network, a long-running server, files the reader makes);
//! - `<!-- readme-test: model -->`: run with `$TOOLNEXUS_MODEL_DIR` when it
//!   holds the embedded model, else skipped (a failure under
//!   `TOOLNEXUS_REQUIRE_MODEL=1`, as CI sets);
//! - `<!-- readme-test: serve -->`: a transcript of a command that runs until
//!   stopped (`toolnexus serve`): it is started, its standard output is read
//!   until it has printed as many lines as shown (20 s at most), then it is
//!   stopped with SIGTERM. `--addr 127.0.0.1:8787` is run as
//!   `127.0.0.1:0`, and the address it binds is shown as `127.0.0.1:8787`.
//!
//! Refreshing the README after a message changed:
//! `TOOLNEXUS_README_BLESS=1 cargo test -p toolnexus-cli --test cli -- readme`
//! writes what each checked command printed into README.md in place of its
//! shown output (a shown line that matched through `[..]` is kept as
//! written, so volatile figures stay elided); the test then passes, and the
//! diff is for review. A `...` line is replaced by what it stood for.

use std::path::{Path, PathBuf};

use crate::support::{TempDir, run, toolnexus};

const SKIP: &str = "<!-- readme-test: skip";
const MODEL: &str = "<!-- readme-test: model -->";
const SERVE: &str = "<!-- readme-test: serve -->";
/// The address the README's serve examples show; run as `127.0.0.1:0`.
const SHOWN_ADDR: &str = "127.0.0.1:8787";

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One fenced block: the language, the marker above it, its lines (by
/// 0-based index in the README) between the fences.
struct Block {
    lang: String,
    marker: Option<String>,
    first: usize,
    lines: Vec<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let lines: Vec<&str> = readme.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(info) = lines[i].trim_start().strip_prefix("```") else {
            i += 1;
            continue;
        };
        let marker = i
            .checked_sub(1)
            .map(|p| lines[p].trim())
            .filter(|l| l.starts_with("<!-- readme-test:"))
            .map(str::to_string);
        let lang = info.split_whitespace().next().unwrap_or("").to_string();
        let first = i + 1;
        let mut j = first;
        while j < lines.len() && !lines[j].trim_start().starts_with("```") {
            j += 1;
        }
        out.push(Block {
            lang,
            marker,
            first,
            lines: lines[first..j.min(lines.len())]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        });
        i = j + 1;
    }
    out
}

/// Splits a command line into words as a shell would, for the little the
/// README uses; anything more is an error naming the line.
fn words(line: &str, at: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        '$' | '`' => panic!(
                            "README.md:{at}: a variable or command in a command: mark the block {SKIP} (why) -->"
                        ),
                        c => word.push(c),
                    }
                }
            }
            // A comment is not part of the command (a `#` inside quotes is).
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            // `< FILE` at the end: standard input from a file (see `exec`).
            '<' if !in_word && chars.peek().is_some_and(|c| c.is_whitespace()) => {
                out.push("<".to_string());
            }
            '|' | '>' | '<' | '$' | '`' | '&' | ';' | '…' | '[' | '~' => panic!(
                "README.md:{at}: {c:?} in a command is not run by this test: mark the block {SKIP} (why) -->"
            ),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

/// The command a README line runs (its arguments after the binary's name),
/// if it runs the binary.
fn command(line: &str, at: usize) -> Option<Vec<String>> {
    let line = line.trim();
    let rest = line.strip_prefix("$ ").unwrap_or(line).trim_start();
    let rest = rest
        .strip_prefix("toolnexus ")
        .or_else(|| rest.strip_prefix("cargo run --release -- "))
        .or_else(|| (rest == "cargo run --release --").then_some(""))?;
    Some(words(rest, at))
}

/// Whether `actual` is what `shown` shows, with `...` lines and `[..]`.
fn matches(shown: &[String], actual: &[String]) -> bool {
    match shown.split_first() {
        None => actual.is_empty(),
        Some((s, rest)) if s.trim() == "..." => {
            (0..=actual.len()).any(|k| matches(rest, &actual[k..]))
        }
        Some((s, rest)) => {
            !actual.is_empty() && line_matches(s, &actual[0]) && matches(rest, &actual[1..])
        }
    }
}

fn line_matches(shown: &str, actual: &str) -> bool {
    let parts: Vec<&str> = shown.split("[..]").collect();
    if parts.len() == 1 {
        return shown == actual;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !actual.starts_with(first) || !actual[first.len()..].ends_with(last) {
        return false;
    }
    let mut at = first.len();
    let end = actual.len() - last.len();
    for p in &parts[1..parts.len() - 1] {
        match actual[at..end].find(p) {
            Some(i) => at += i + p.len(),
            None => return false,
        }
    }
    at <= end
}

fn tidy(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// What a command printed, for blessing: each line as printed, or as shown
/// when a shown line with `[..]` (used once each, in order) still matches it.
fn blessed(shown: &[String], actual: &[String]) -> Vec<String> {
    let mut elided: Vec<&String> = shown.iter().filter(|s| s.contains("[..]")).collect();
    actual
        .iter()
        .map(|a| match elided.iter().position(|s| line_matches(s, a)) {
            Some(i) => elided.remove(i).clone(),
            None => a.clone(),
        })
        .collect()
}

/// A command that runs until stopped (see the `serve` marker): the first
/// `lines` lines of its standard output, with its bound address shown as
/// the README shows it.
fn until_stopped(dir: &TempDir, args: &[String], model_dir: &Path, lines: usize) -> Vec<String> {
    use std::io::BufRead as _;
    let run: Vec<&str> = args
        .iter()
        .map(|a| {
            if a == SHOWN_ADDR {
                "127.0.0.1:0"
            } else {
                a.as_str()
            }
        })
        .collect();
    let mut cmd = toolnexus(dir.path(), &run);
    cmd.env("TOOLNEXUS_MODEL_DIR", model_dir)
        .env("HOME", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = crate::support::Guard(cmd.spawn().expect("spawn toolnexus"));
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut got: Vec<String> = Vec::new();
    while got.len() < lines {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => got.push(line),
            Err(_) => break,
        }
    }
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status();
    let _ = crate::support::wait(&mut child.0, std::time::Duration::from_secs(20));
    // The address it bound, from its first line, shown as the README shows it.
    let bound = got
        .first()
        .and_then(|l| l.strip_prefix("listening on http://"))
        .map(str::to_string);
    tidy(
        &got.iter()
            .map(|l| match &bound {
                Some(b) => l.replace(b.as_str(), SHOWN_ADDR) + "\n",
                None => format!("{l}\n"),
            })
            .collect::<String>(),
    )
}

fn model_dir() -> Option<PathBuf> {
    std::env::var_os("TOOLNEXUS_MODEL_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("model.safetensors").is_file())
}

#[test]
fn the_readme_examples_run_and_print_what_it_shows() {
    let path = repo().join("README.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let bless = std::env::var_os("TOOLNEXUS_README_BLESS").is_some_and(|v| v == "1");
    let dir = TempDir::new("readme");
    for name in ["examples", "crates"] {
        std::os::unix::fs::symlink(repo().join(name).canonicalize().unwrap(), dir.join(name))
            .unwrap();
    }
    let no_model = dir.join(".no-model");
    std::fs::create_dir_all(&no_model).unwrap();
    let model = model_dir();

    let mut lines: Vec<String> = readme.lines().map(str::to_string).collect();
    // (first line index, count of lines replaced, new lines), applied last to first.
    let mut edits: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut failures = Vec::new();
    let (mut ran, mut skipped) = (0, 0);
    for block in blocks(&readme) {
        if !matches!(block.lang.as_str(), "sh" | "text") {
            continue;
        }
        if let Some(m) = &block.marker {
            if let Some(why) = m.strip_prefix(SKIP) {
                let why = why.trim_end_matches("-->").trim();
                assert!(
                    why.len() > 2,
                    "README.md:{}: a skip marker says why: {m}",
                    block.first
                );
                skipped += 1;
                continue;
            }
            assert!(
                m == MODEL || m == SERVE,
                "README.md:{}: unknown marker {m}",
                block.first
            );
        }
        let wants_model = block.marker.as_deref() == Some(MODEL);
        let model_here = match (wants_model, &model) {
            (false, _) => Some(no_model.clone()),
            (true, Some(m)) => Some(m.clone()),
            (true, None) => {
                assert!(
                    std::env::var_os("TOOLNEXUS_REQUIRE_MODEL").is_none(),
                    "TOOLNEXUS_REQUIRE_MODEL is set but TOOLNEXUS_MODEL_DIR holds no model"
                );
                None
            }
        };
        let Some(model_here) = model_here else {
            skipped += 1;
            continue;
        };
        let exec = |args: &[String]| {
            // `… < FILE`: the file on standard input.
            let (args, stdin) = match args {
                [head @ .., lt, file] if lt == "<" => (head, Some(dir.join(file))),
                _ => (args, None),
            };
            assert!(!args.iter().any(|a| a == "<"), "`<` only last: {args:?}");
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut cmd = toolnexus(dir.path(), &refs);
            cmd.env("TOOLNEXUS_MODEL_DIR", &model_here)
                .env("HOME", dir.path());
            if let Some(file) = stdin {
                cmd.stdin(std::fs::File::open(&file).expect("the file a README command reads"));
            }
            run(cmd)
        };
        if block.lang == "sh" {
            // Continuation lines joined.
            let mut i = 0;
            while i < block.lines.len() {
                let at = block.first + i + 1;
                let mut line = block.lines[i].clone();
                while line.trim_end().ends_with('\\') && i + 1 < block.lines.len() {
                    line = format!(
                        "{} {}",
                        line.trim_end().trim_end_matches('\\'),
                        block.lines[i + 1].trim()
                    );
                    i += 1;
                }
                i += 1;
                let Some(args) = command(&line, at) else {
                    continue;
                };
                ran += 1;
                let out = exec(&args);
                if out.code != 0 {
                    failures.push(format!(
                        "README.md:{at}: `{}` exited {}: {}",
                        line.trim(),
                        out.code,
                        out.stderr
                    ));
                }
            }
            continue;
        }
        // A transcript: `$ ` lines and what follows each.
        let starts: Vec<usize> = (0..block.lines.len())
            .filter(|&i| block.lines[i].starts_with("$ "))
            .collect();
        for (n, &s) in starts.iter().enumerate() {
            let end = starts.get(n + 1).copied().unwrap_or(block.lines.len());
            let at = block.first + s + 1;
            let Some(args) = command(&block.lines[s], at) else {
                failures.push(format!(
                    "README.md:{at}: a `$ ` line that does not run toolnexus"
                ));
                continue;
            };
            ran += 1;
            let shown: Vec<String> = block.lines[s + 1..end]
                .iter()
                .map(|l| l.trim_end().to_string())
                .collect();
            let mut shown_trimmed = shown.clone();
            while shown_trimmed.last().is_some_and(|l| l.is_empty()) {
                shown_trimmed.pop();
            }
            // A last line `[exit N]` is the exit status the command must end with.
            let exit_shown = shown_trimmed.last().and_then(|l| {
                l.strip_prefix("[exit ")?
                    .strip_suffix(']')?
                    .parse::<i32>()
                    .ok()
            });
            if exit_shown.is_some() {
                shown_trimmed.pop();
            }
            if block.marker.as_deref() == Some(SERVE) {
                let actual = until_stopped(&dir, &args, &model_here, shown_trimmed.len());
                if !matches(&shown_trimmed, &actual) {
                    failures.push(format!(
                        "README.md:{at}: `{}` printed otherwise than shown:\n--- shown\n{}\n--- printed\n{}",
                        block.lines[s],
                        shown_trimmed.join("\n"),
                        actual.join("\n")
                    ));
                }
                continue;
            }
            let out = exec(&args);
            let actual = tidy(&format!("{}{}", out.stdout, out.stderr));
            let should_fail = shown_trimmed
                .last()
                .is_some_and(|l| l.starts_with("toolnexus: error:"));
            let code_ok = match exit_shown {
                Some(code) => out.code == code,
                None => (out.code != 0) == should_fail,
            };
            if !code_ok {
                failures.push(format!(
                    "README.md:{at}: `{}` exited {}: {}",
                    block.lines[s], out.code, out.stderr
                ));
            }
            if !matches(&shown_trimmed, &actual) {
                if bless {
                    let mut new = blessed(&shown_trimmed, &actual);
                    // Keep the `[exit N]` line and a blank line before the next command.
                    new.extend(shown[shown_trimmed.len()..].iter().cloned());
                    edits.push((block.first + s + 1, end - s - 1, new));
                } else {
                    failures.push(format!(
                        "README.md:{at}: `{}` printed otherwise than shown (TOOLNEXUS_README_BLESS=1 rewrites it):\n--- shown\n{}\n--- printed\n{}",
                        block.lines[s],
                        shown_trimmed.join("\n"),
                        actual.join("\n")
                    ));
                }
            }
        }
    }
    if bless && !edits.is_empty() {
        edits.sort_by_key(|e| std::cmp::Reverse(e.0));
        for (first, count, new) in edits {
            lines.splice(first..first + count, new);
        }
        let mut text = lines.join("\n");
        text.push('\n');
        std::fs::write(&path, text).unwrap();
    }
    assert!(ran > 0, "no README command ran");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    eprintln!("README: {ran} commands run, {skipped} blocks skipped");
}

#[test]
fn the_harness_matches_elisions_and_splits_words() {
    let s = |v: &[&str]| v.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&s(&["a", "...", "d"]), &s(&["a", "b", "c", "d"])));
    assert!(matches(&s(&["a", "...", "b"]), &s(&["a", "b"])));
    assert!(!matches(&s(&["a", "d"]), &s(&["a", "b", "d"])));
    assert!(line_matches(
        "p50 [..] ms, p95 [..] ms",
        "p50 163 ms, p95 214 ms"
    ));
    assert!(!line_matches("p50 [..] ms", "p95 1 ms"));
    assert_eq!(
        blessed(&s(&["a", "p50 [..] ms"]), &s(&["a", "b", "p50 7 ms"])),
        s(&["a", "b", "p50 [..] ms"])
    );
    assert_eq!(
        command("toolnexus eval --state '{\"a\": 1}'   # live", 1),
        Some(vec!["eval".into(), "--state".into(), "{\"a\": 1}".into()])
    );
    assert_eq!(
        command("cargo run --release -- eval", 1),
        Some(vec!["eval".into()])
    );
    assert_eq!(command("cargo test --workspace", 1), None);
    assert!(
        std::panic::catch_unwind(|| command("toolnexus guard check-policy > p.json", 1)).is_err()
    );
    assert_eq!(
        command("$ toolnexus guard < call.json", 1),
        Some(vec!["guard".into(), "<".into(), "call.json".into()])
    );
    assert!(std::panic::catch_unwind(|| command("toolnexus guard <call.json", 1)).is_err());
}
