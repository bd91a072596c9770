use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::resume::read_header;
use super::*;

/// A file written in a directory of its own under the temp dir; the
/// directory, and what a test made beside the file, is removed on drop.
struct Temp {
    dir: PathBuf,
    path: PathBuf,
}

impl std::ops::Deref for Temp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Temp {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn temp(name: &str, body: &[u8]) -> Temp {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("toolnexus-out-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    Temp { dir, path }
}

#[test]
fn a_test_file_leaves_nothing_behind_in_the_temp_dir() {
    let t = temp("x.jsonl", b"x");
    let dir = t.dir.clone();
    std::os::unix::fs::symlink(&*t, dir.join("link")).unwrap();
    assert!(dir.join("x.jsonl").exists());
    drop(t);
    assert!(!dir.exists(), "{} is left", dir.display());
}

fn fp(states: &[u8]) -> Fingerprint {
    let q = crate::classifier::questions_from_wire(&serde_json::json!(
        {"spam": {"type": "noul", "instructions": "Spam?"}}
    ))
    .unwrap();
    Fingerprint::new(
        states,
        &q,
        "tape",
        "rule-1",
        &crate::classifier::Fingerprint::new("tape"),
    )
}

const PLAN: Plan = Plan {
    restart: false,
    rerun_errors: false,
    last_line: 3,
};

#[test]
fn the_states_digest_is_the_standard_sha256() {
    assert_eq!(
        fp(b"").states,
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    assert_eq!(
        fp(b"abc").states,
        "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn the_header_names_the_format_and_round_trips() {
    let f = fp(b"{}\n");
    let h = f.header();
    assert!(
        h.starts_with(r#"{"toolnexus":"batch","version":1,"fingerprint":{"states":"sha256:"#),
        "{h}"
    );
    assert!(
        h.ends_with("\"style\":\"tape\",\"model\":\"rule-1\",\"stack\":\"plain\"}}\n"),
        "{h}"
    );
    let back = read_header(Path::new("x"), h.as_bytes()).unwrap();
    assert_eq!(back, f);
    let other = Fingerprint {
        style: "systemone".into(),
        ..fp(b"{}\n{}\n")
    };
    let said = join(&f.changes(&other));
    assert!(said.contains("the states file changed (sha256:"), "{said}");
    assert!(
        said.contains("the style changed (tape then, systemone now)"),
        "{said}"
    );
    assert!(!said.contains("questions"), "{said}");
}

#[test]
fn a_torn_final_line_of_our_own_file_is_truncated_and_redone() {
    let f = fp(b"a\nb\nc\n");
    let mut body = f.header().into_bytes();
    body.extend_from_slice(
        b"{\"line\":2,\"decision\":{}}\n{\"line\":1,\"error\":\"x\"}\n{\"line\":3,\"deci",
    );
    let p = temp("torn.jsonl", &body);
    let r = open(&p, &f, PLAN).unwrap();
    assert_eq!(r.done, BTreeSet::from([1, 2]));
    assert_eq!((r.truncated, r.errors), (15, 1));
    drop(r);
    assert!(std::fs::read(&p).unwrap().ends_with(b"\"x\"}\n"));
}

#[test]
fn a_file_that_is_not_ours_is_refused_untouched() {
    let f = fp(b"a\n");
    // Another run's header without its newline: not provably ours.
    let other = fp(b"b\n").header();
    for (name, body) in [
        ("hello.txt", &b"hello"[..]),
        ("other-header.txt", other.trim_end().as_bytes()),
        ("blank.txt", b"\n"),
        ("old.jsonl", b"{\"line\":1,\"error\":\"x\"}\n{\"li"),
    ] {
        let p = temp(name, body);
        let e = open(
            &p,
            &f,
            Plan {
                restart: true,
                ..PLAN
            },
        )
        .err()
        .unwrap_or_else(|| panic!("{name} accepted"));
        assert!(
            matches!(e, OutError::Foreign { .. } | OutError::Legacy { .. }),
            "{name}: {e}"
        );
        assert!(!e.is_io(), "{name}");
        assert_eq!(std::fs::read(&p).unwrap(), body, "{name}");
    }
}

#[test]
fn a_torn_header_of_this_run_starts_over_and_nothing_shorter_does() {
    let f = fp(b"a\n");
    let header = f.header();
    let p = temp("torn-header.jsonl", &header.as_bytes()[..40]);
    let r = open(&p, &f, PLAN).unwrap();
    assert!(matches!(r.notes[..], [Note::TornHeader]), "{:?}", r.notes);
    drop(r);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), header);
    for short in [&b"{"[..], b"{\"toolnexus\""] {
        let p = temp("short.jsonl", short);
        assert!(open(&p, &f, PLAN).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), short);
    }
}

#[test]
fn rerun_errors_rewrites_the_file_without_its_error_lines() {
    let f = fp(b"a\nb\nc\n");
    let mut body = f.header().into_bytes();
    body.extend_from_slice(
        b"{\"line\":2,\"decision\":{}}\n{\"line\":1,\"error\":\"x\"}\n{\"line\":3,\"error\":\"y\"}\n{\"line\":2,\"error\":\"z\"}\n",
    );
    let real = temp("rerun.jsonl", &body);
    // Named through a symbolic link, which stays one.
    let p = real.with_file_name("rerun-link.jsonl");
    let _ = std::fs::remove_file(&p);
    std::os::unix::fs::symlink(&real, &p).unwrap();
    let plan = Plan {
        rerun_errors: true,
        ..PLAN
    };
    let mut r = open(&p, &f, plan).unwrap();
    assert_eq!(r.done, BTreeSet::from([2]));
    assert_eq!((r.rerun, r.errors), (2, 0));
    r.sink.write("{\"line\":1,\"decision\":{}}\n").unwrap();
    let mut want = f.header();
    want.push_str("{\"line\":2,\"decision\":{}}\n{\"line\":1,\"decision\":{}}\n");
    assert_eq!(std::fs::read_to_string(&p).unwrap(), want);
    assert!(
        std::fs::symlink_metadata(&p)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    // The lock is held on the new file too.
    let e = open(&p, &f, PLAN).err().unwrap();
    assert!(matches!(e, OutError::Busy { .. }), "{e}");
}

#[test]
fn the_reader_and_a_resume_agree_on_what_a_result_line_is() {
    let f = fp(b"a\nb\nc\n");
    for (line, fault) in [
        (&b"{\"line\":0,\"error\":\"x\"}"[..], "no \"line\" number"),
        (b"{\"line\":1}", "neither \"decision\" nor \"error\""),
        (
            b"{\"line\":1,\"decision\":{},\"error\":\"x\"}",
            "both \"decision\" and \"error\"",
        ),
        (
            b"[1",
            "invalid JSON at line 1, column 2: EOF while parsing a list",
        ),
    ] {
        let mut body = f.header().into_bytes();
        body.extend_from_slice(line);
        body.extend_from_slice(b"\n{\"line\":2,\"error\":\"y\"}\n");
        let p = temp("faults.jsonl", &body);
        let e = open(&p, &f, PLAN).err().unwrap();
        assert!(matches!(e, OutError::BadLine { at: 2, .. }), "{e}");
        assert!(e.to_string().ends_with(&format!("({fault})")), "{e}");
        let text = String::from_utf8(body).unwrap();
        let e = OutFile::parse(&text, &p).err().unwrap();
        assert!(matches!(e, OutError::BadLine { at: 2, .. }), "{e}");
    }
    let e = open(
        &temp(
            "beyond.jsonl",
            format!("{}{{\"line\":4,\"error\":\"x\"}}\n", f.header()).as_bytes(),
        ),
        &f,
        PLAN,
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            e,
            OutError::BeyondStates {
                at: 2,
                line: 4,
                last_line: 3,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn the_reader_reads_streams_and_leaves_a_torn_final_line_out() {
    let text = "\u{feff}{\"line\":3,\"decision\":{},\"cached\":true}\n\n{\"line\":1,\"error\":\"x\"}\n{\"li";
    let out = OutFile::parse(text, "o").unwrap();
    assert!(out.header.is_none());
    let seen: Vec<(usize, usize, bool)> = out
        .lines
        .iter()
        .map(|l| (l.at, l.line, l.is_error()))
        .collect();
    assert_eq!(seen, [(1, 3, false), (3, 1, true)]);
    assert_eq!(out.torn_line, Some(4));
    assert!(out.lines[0].cached());
    // A complete final line without its newline is read; a broken one
    // elsewhere is an error.
    assert_eq!(
        OutFile::parse("{\"line\":1,\"error\":\"x\"}", "o")
            .unwrap()
            .lines
            .len(),
        1
    );
    assert!(OutFile::parse("{\"li\n{\"line\":1,\"error\":\"x\"}\n", "o").is_err());
}
