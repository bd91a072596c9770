//! The team's bypass and benign corpora (`data/bypass.jsonl`,
//! `data/benign.jsonl`) against the shell reader.
//!
//! Each bypass line is first proven: bash runs it in a throwaway directory
//! with HOME pointed into it and stand-ins for the network tools first on
//! PATH, and the act's check shows it did what it says. Then the reader must
//! see it: [`shell::parse`] and [`shell::effects`] of the command yield one of
//! the line's expected capabilities, or an unread reason. Every benign line
//! must be read fully. Without bash the proofs are skipped with a note.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use toolnexus_guard::shell::{self, Capability};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data");

/// The marker the environment carries for the exfiltration checks.
const ENV_MARKER: &str = "EXFIL-MARKER-7f3a";
/// The marker inside the stand-in private key.
const KEY_MARKER: &str = "PRIVATE-KEY-MARKER-5c1d";

/// The longest a proof may run before it counts as failed.
const PROOF_LIMIT: Duration = Duration::from_secs(30);

/// The stand-in for curl, wget and nc: records its arguments and what it
/// would send in `$NETLOG`, and answers with a script that touches
/// `$HOME/pwned` (on stdout, or in the file `-o`/`-O` names).
const STAND_IN: &str = r#"#!/bin/sh
log="$NETLOG"; out=-; prev=
echo "$(basename "$0") $*" >> "$log"
for a in "$@"; do
  case "$prev" in
    -o|-O|--output|--output-document|-[a-zA-Z]*o|-[a-zA-Z]*O) out="$a";;
    -d|--data|--data-binary|--data-raw|--data-urlencode|-T|--upload-file|-F|--form)
      case "$a" in
        @-|-) cat >> "$log";;
        @*) cat "${a#@}" >> "$log" 2>/dev/null;;
        *=@*) cat "${a#*=@}" >> "$log" 2>/dev/null;;
        *) if [ "$prev" = "-T" ] || [ "$prev" = "--upload-file" ]; then cat "$a" >> "$log"; else echo "$a" >> "$log"; fi;;
      esac;;
  esac
  case "$a" in
    --output=*|--output-document=*) out="${a#*=}";;
    --post-file=*|--body-file=*) cat "${a#*=}" >> "$log";;
    --post-data=*|--body-data=*) echo "${a#*=}" >> "$log";;
  esac
  prev="$a"
done
if [ "$(basename "$0")" = nc ]; then cat >> "$log"; exit 0; fi
payload='touch "$HOME/pwned"'
if [ "$out" = "-" ]; then echo "$payload"; else echo "$payload" > "$out"; fi
"#;

fn lines(file: &str) -> Vec<Value> {
    let path = Path::new(DATA).join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{file} line {}: {e}", i + 1))
        })
        .filter(|v: &Value| v.get("header").is_none())
        .collect()
}

fn text<'a>(line: &'a Value, key: &str) -> &'a str {
    line.get(key).and_then(Value::as_str).unwrap_or("")
}

fn expected(line: &Value) -> Vec<Capability> {
    line.get("expect")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| {
                    c.as_str()
                        .unwrap_or("")
                        .parse()
                        .unwrap_or_else(|e| panic!("{e} in {line}"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the reader sees the act: an expected capability or an unread.
fn seen(command: &str, expect: &[Capability]) -> Result<String, String> {
    let script = shell::parse(command);
    if let Some(u) = script.unread.first() {
        return Ok(format!("unread: {}", u.reason));
    }
    for c in &script.commands {
        for e in shell::effects(c) {
            if expect.contains(&e.capability) {
                return Ok(format!("{} by {}", e.capability, c.name));
            }
        }
    }
    let names: Vec<String> = script
        .commands
        .iter()
        .map(|c| format!("{} {:?} -> {:?}", c.name, c.args, shell::effects(c)))
        .collect();
    Err(names.join("; "))
}

#[test]
fn the_reader_sees_every_bypass() {
    let corpus = lines("bypass.jsonl");
    assert!(
        corpus.len() >= 150,
        "the corpus holds {} lines",
        corpus.len()
    );
    let acts: std::collections::BTreeSet<&str> = corpus.iter().map(|l| text(l, "act")).collect();
    assert!(acts.len() >= 6, "acts: {acts:?}");
    let mut misses = Vec::new();
    for line in &corpus {
        let command = text(line, "command");
        if let Err(got) = seen(command, &expected(line)) {
            misses.push(format!(
                "{} [{}] {command:?}\n    read as: {got}",
                text(line, "act"),
                text(line, "family")
            ));
        }
    }
    assert!(
        misses.is_empty(),
        "{} re-spellings read as harmless:\n{}",
        misses.len(),
        misses.join("\n")
    );
}

#[test]
fn the_reader_reads_every_benign_command() {
    let corpus = lines("benign.jsonl");
    assert!(
        corpus.len() >= 100,
        "the corpus holds {} lines",
        corpus.len()
    );
    let mut unread = Vec::new();
    for line in &corpus {
        let command = text(line, "command");
        let script = shell::parse(command);
        if !script.is_fully_read() || script.commands.is_empty() {
            unread.push(format!("{command:?}: {:?}", script.unread));
        }
    }
    assert!(
        unread.is_empty(),
        "benign commands not read:\n{}",
        unread.join("\n")
    );
}

fn has_bash() -> bool {
    Command::new("bash")
        .arg("-c")
        .arg("true")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn on_path(binary: &str) -> bool {
    Command::new("bash")
        .arg("-c")
        .arg(format!("command -v {binary}"))
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A listener on 127.0.0.1 that keeps what it receives and answers HTTP 200.
fn listener() -> (u16, Arc<Mutex<Vec<u8>>>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = l.local_addr().expect("a bound address").port();
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&got);
    std::thread::spawn(move || {
        for stream in l.incoming().flatten() {
            let mut s = stream;
            let _ = s.set_read_timeout(Some(Duration::from_millis(400)));
            let mut buf = [0u8; 8192];
            loop {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => keep
                        .lock()
                        .expect("the buffer")
                        .extend_from_slice(&buf[..n]),
                }
            }
            let _ = s.write_all(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, got)
}

struct Sandbox {
    root: PathBuf,
    home: PathBuf,
    work: PathBuf,
    bin: PathBuf,
    netlog: PathBuf,
}

fn git(dir: &Path, home: &Path, args: &[&str]) {
    let status = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

fn sandbox(n: usize, act: &str) -> Sandbox {
    let root =
        std::env::temp_dir().join(format!("toolnexus-shell-corpus-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let home = root.join("home");
    let work = root.join("work");
    let bin = root.join("bin");
    for d in [&home, &work, &bin, &home.join(".ssh"), &home.join("proj")] {
        std::fs::create_dir_all(d).expect("a temp dir");
    }
    std::fs::write(home.join("keep.txt"), "keep me\n").expect("a file");
    std::fs::write(home.join("proj/file.txt"), "data\n").expect("a file");
    std::fs::write(
        home.join(".ssh/id_rsa"),
        format!("-----BEGIN KEY-----\n{KEY_MARKER}\n-----END KEY-----\n"),
    )
    .expect("a key");
    for tool in ["curl", "wget", "nc"] {
        let p = bin.join(tool);
        std::fs::write(&p, STAND_IN).expect("a stand-in");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            home.join("proj/file.txt"),
            std::fs::Permissions::from_mode(0o644),
        )
        .expect("chmod");
    }
    if act == "force-push" {
        let remote = root.join("remote.git");
        git(&work, &home, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("a.txt"), "a\n").expect("a file");
        git(&work, &home, &["add", "a.txt"]);
        git(&work, &home, &["commit", "-q", "-m", "first"]);
        git(
            &root,
            &home,
            &["init", "-q", "--bare", "-b", "main", "remote.git"],
        );
        git(
            &work,
            &home,
            &["remote", "add", "origin", remote.to_str().unwrap_or("")],
        );
        git(&work, &home, &["push", "-q", "-u", "origin", "main"]);
        git(
            &work,
            &home,
            &["commit", "-q", "--amend", "-m", "rewritten"],
        );
    }
    let netlog = root.join("netlog");
    Sandbox {
        root,
        home,
        work,
        bin,
        netlog,
    }
}

fn rev(dir: &Path, git_dir: Option<&Path>) -> String {
    let mut c = Command::new("git");
    if let Some(g) = git_dir {
        c.arg("--git-dir").arg(g);
    }
    let out = c
        .args(["rev-parse", "main"])
        .current_dir(dir)
        .output()
        .expect("git runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Whether a tree holds a file containing `needle`.
fn tree_holds(dir: &Path, needle: &str) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let p = e.path();
        if p.is_dir() {
            tree_holds(&p, needle)
        } else {
            std::fs::read(&p).is_ok_and(|b| String::from_utf8_lossy(&b).contains(needle))
        }
    })
}

/// Runs one proof; `Err` says why it did not show the act.
fn prove(n: usize, line: &Value, port: u16, got: &Arc<Mutex<Vec<u8>>>) -> Result<(), String> {
    let act = text(line, "act");
    let proof = line
        .get("proof")
        .and_then(Value::as_str)
        .unwrap_or_else(|| text(line, "command"))
        .replace("{PORT}", &port.to_string());
    // The proofs only ever touch the sandbox: nothing names a system path.
    for forbidden in ["/home", "/root", "/etc", "/var", " / ", "-rf /"] {
        assert!(
            !proof.contains(forbidden),
            "a proof names {forbidden}: {proof}"
        );
    }
    let sb = sandbox(n, act);
    let before = got.lock().map(|g| g.len()).unwrap_or(0);
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", sb.bin.display());
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&proof)
        .current_dir(&sb.work)
        .env_clear()
        .env("HOME", &sb.home)
        .env("PATH", &path)
        .env("NETLOG", &sb.netlog)
        .env("API_TOKEN", ENV_MARKER)
        .env("TMPDIR", &sb.root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("bash: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    loop {
        if child.try_wait().map_err(|e| e.to_string())?.is_some() {
            break;
        }
        if start.elapsed() > PROOF_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return Err("timed out".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let out = String::from_utf8_lossy(&reader.join().unwrap_or_default()).to_string();
    // The loopback listener reads until the sender is quiet.
    if proof.contains("127.0.0.1") {
        std::thread::sleep(Duration::from_millis(600));
    }
    // A process substitution (`>(sh)`) may still run after bash exits: the
    // check is polled for a little while before it counts as failed.
    let check = || -> Result<bool, String> {
        let netlog = std::fs::read_to_string(&sb.netlog).unwrap_or_default();
        let heard = got
            .lock()
            .map(|g| String::from_utf8_lossy(&g[before.min(g.len())..]).to_string())
            .unwrap_or_default();
        Ok(match act {
            "delete-home" => {
                let keep = sb.home.join("keep.txt");
                !keep.exists() || std::fs::metadata(&keep).is_ok_and(|m| m.len() == 0)
            }
            "read-ssh-key" => out.contains(KEY_MARKER) || tree_holds(&sb.work, KEY_MARKER),
            "pipe-download-to-shell" => sb.home.join("pwned").exists(),
            "force-push" => {
                let remote = rev(&sb.root, Some(&sb.root.join("remote.git")));
                !remote.is_empty() && remote == rev(&sb.work, None)
            }
            "chmod-777-tree" => {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::PermissionsExt;
                    std::fs::metadata(sb.home.join("proj/file.txt"))
                        .is_ok_and(|m| m.permissions().mode() & 0o777 == 0o777)
                }
                #[cfg(not(unix))]
                true
            }
            "exfiltrate-env" => netlog.contains(ENV_MARKER) || heard.contains(ENV_MARKER),
            other => return Err(format!("no check for the act {other}")),
        })
    };
    let mut ok = check()?;
    for _ in 0..30 {
        if ok {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        ok = check()?;
    }
    // Make everything removable again (a proof may chmod or move the home).
    let _ = Command::new("chmod")
        .arg("-R")
        .arg("u+rwx")
        .arg(&sb.root)
        .status();
    let _ = std::fs::remove_dir_all(&sb.root);
    if ok {
        Ok(())
    } else {
        Err(format!("the act did not happen (stdout {out:?})"))
    }
}

#[test]
fn every_bypass_does_what_it_says() {
    if !has_bash() {
        eprintln!("note: bash is missing: the bypass proofs are skipped");
        return;
    }
    let (port, got) = listener();
    let mut failures = Vec::new();
    for (n, line) in lines("bypass.jsonl").iter().enumerate() {
        let needs: Vec<&str> = line
            .get("needs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if let Some(missing) = needs.iter().find(|b| !on_path(b)) {
            eprintln!(
                "note: {missing} is missing: skipped the proof of {:?}",
                text(line, "command")
            );
            continue;
        }
        if let Err(why) = prove(n, line, port, &got) {
            failures.push(format!(
                "{} [{}] {:?}: {why}",
                text(line, "act"),
                text(line, "family"),
                text(line, "command")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} proofs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
