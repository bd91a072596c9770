//! `toolnexus serve` under hostile clients: idle and slow connections, a
//! connection flood, shutdown with requests in flight, closed output, replay
//! misses that must not disclose, oversized headers, a host name for `--addr`.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::{DEMO_TAPE, Guard, TempDir, request, tn, toolnexus, wait};

/// A `toolnexus serve` whose stderr (the server's log) is collected.
struct Served {
    child: Guard,
    addr: String,
    log: Arc<Mutex<String>>,
    /// The thread reading the log, until serve closes its stderr.
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Served {
    /// Starts `toolnexus serve --addr 127.0.0.1:0 <args>`.
    fn start(cwd: &Path, args: &[&str]) -> Served {
        let mut all = vec!["serve", "--addr", "127.0.0.1:0"];
        all.extend_from_slice(args);
        Served::spawn(toolnexus(cwd, &all))
    }

    fn spawn(mut cmd: Command) -> Served {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = Guard(cmd.spawn().expect("spawn toolnexus serve"));
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.0.stderr.take().unwrap();
        let sink = Arc::clone(&log);
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let addr = first_line_address(&mut child);
        Served {
            child,
            addr,
            log,
            reader: Some(reader),
        }
    }

    /// What serve has logged so far; once it has exited, all of it (the
    /// reader is joined first, so no last line is still in the pipe).
    fn log(&mut self) -> String {
        if matches!(self.child.0.try_wait(), Ok(Some(_)))
            && let Some(reader) = self.reader.take()
        {
            let _ = reader.join();
        }
        self.log.lock().unwrap().clone()
    }

    /// Sends SIGTERM now.
    fn sigterm(&self) {
        let pid = self.child.0.id().to_string();
        let ok = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -TERM {pid}");
    }
}

/// Reads `listening on http://ADDR` from the child's stdout and keeps draining it.
fn first_line_address(child: &mut Guard) -> String {
    let stdout = child.0.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let _ = tx.send(first);
        for _ in lines {}
    });
    let first = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("serve printed its address");
    first
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
        .trim()
        .to_string()
}

fn demo_body() -> String {
    let tape = toolnexus::judge::Tape::load(DEMO_TAPE).unwrap();
    let e = &tape.entries()[0];
    json!({
        "model": "jev-latest",
        "questions": toolnexus::classifier::questions_wire(&e.questions),
        "state": e.state,
    })
    .to_string()
}

fn post(addr: &str, body: &str) -> crate::support::Reply {
    request(
        addr,
        "POST",
        "/v1/systemone",
        &[("Content-Type", "application/json")],
        body.as_bytes(),
    )
}

/// A POST whose body comes a byte every 100 ms (`len` bytes in all); a reader
/// collects whatever the server answers. Returns the reader.
fn slow_post(addr: &str, len: usize) -> std::thread::JoinHandle<Vec<u8>> {
    let mut s = TcpStream::connect(addr).unwrap();
    let head = format!(
        "POST /v1/systemone HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut reader = s.try_clone().unwrap();
    reader
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    std::thread::spawn(move || {
        for _ in 0..len {
            std::thread::sleep(Duration::from_millis(100));
            if s.write_all(b" ").is_err() {
                break;
            }
        }
    });
    std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        got
    })
}

/// The status and JSON body of a raw response.
fn parse_reply(raw: &[u8]) -> (u16, Value) {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let body = serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    (status, body)
}

/// Whether the server closed this connection within `limit` (EOF or reset).
fn closed_within(s: &mut TcpStream, limit: Duration) -> bool {
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return false;
            }
            Err(_) => return true,
        }
    }
}

/// Whether the connection is still open right now (nothing to read, no EOF).
fn still_open(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 1];
    let open = matches!(s.peek(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    s.set_nonblocking(false).unwrap();
    open
}

#[test]
fn idle_and_slow_connections_leave_a_normal_request_answered_and_idle_ones_closed() {
    let dir = TempDir::new("serve-hostile");
    let mut server = Served::start(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--idle-timeout",
            "3s",
            "--body-timeout",
            "4s",
        ],
    );
    let body = demo_body();
    let opened = Instant::now();
    let mut idle: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(&server.addr).unwrap())
        .collect();
    // 20 bodies of 300 bytes at a byte every 100 ms: 30 s each if let be.
    let slow: Vec<_> = (0..20).map(|_| slow_post(&server.addr, 300)).collect();
    std::thread::sleep(Duration::from_millis(300));

    let asked = Instant::now();
    let r = post(&server.addr, &body);
    let took = asked.elapsed();
    assert_eq!(r.status, 200, "{r:?}");
    assert!(
        took < Duration::from_secs(1),
        "a normal request took {took:?} beside 200 idle and 20 slow connections"
    );
    assert!(
        idle.iter().all(still_open),
        "idle connections are kept until the idle timeout"
    );

    for s in &mut idle {
        assert!(
            closed_within(s, Duration::from_secs(30)),
            "an idle connection outlived --idle-timeout 3s"
        );
    }
    assert!(
        opened.elapsed() >= Duration::from_millis(2500),
        "closed by the idle timeout, not before: {:?}",
        opened.elapsed()
    );
    // The slow bodies were cut at the body timeout: a 408 with the wire error
    // body, or a closed connection.
    let cut = Instant::now();
    for h in slow {
        let raw = h.join().unwrap();
        if !raw.is_empty() {
            let (status, v) = parse_reply(&raw);
            assert_eq!(status, 408, "{v}");
            assert_eq!(v["detail"]["error_type"], "request_timeout", "{v}");
        }
    }
    assert!(
        cut.elapsed() < Duration::from_secs(20),
        "slow bodies outlived --body-timeout 4s: {:?}",
        cut.elapsed()
    );
    // And it still answers.
    assert_eq!(post(&server.addr, &body).status, 200);
    assert!(server.log().contains(" 408 "), "{}", server.log());
}

#[test]
fn a_head_trickled_a_byte_at_a_time_is_cut_at_the_header_timeout() {
    let dir = TempDir::new("serve-slow-head");
    let server = Served::start(dir.path(), &["--style", "static", "--header-timeout", "1s"]);
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut writer = s.try_clone().unwrap();
    let trickle = std::thread::spawn(move || {
        for _ in 0..600 {
            std::thread::sleep(Duration::from_millis(100));
            if writer.write_all(b"a").is_err() {
                return true;
            }
        }
        false
    });
    let started = Instant::now();
    assert!(
        closed_within(&mut s, Duration::from_secs(30)),
        "a head still arriving after --header-timeout 1s kept its connection (the idle timeout is 60s)"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(800),
        "{:?}",
        started.elapsed()
    );
    drop(s);
    let _ = trickle.join();
    let r = request(&server.addr, "GET", "/v1/models", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");
}

#[test]
fn a_slow_body_holds_a_concurrency_slot_no_longer_than_the_body_timeout() {
    let dir = TempDir::new("serve-slow-slot");
    let server = Served::start(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--max-concurrency",
            "2",
            "--body-timeout",
            "2s",
        ],
    );
    let body = demo_body();
    let slow: Vec<_> = (0..2).map(|_| slow_post(&server.addr, 300)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let r = post(&server.addr, &body);
    assert_eq!(r.status, 529, "both slots held by slow bodies: {r:?}");

    for h in slow {
        let (status, v) = parse_reply(&h.join().unwrap());
        assert_eq!(status, 408, "{v}");
        assert_eq!(v["detail"]["error_type"], "request_timeout", "{v}");
        assert!(
            v["detail"]["message"]
                .as_str()
                .unwrap()
                .contains("--body-timeout"),
            "{v}"
        );
    }
    let r = post(&server.addr, &body);
    assert_eq!(r.status, 200, "the slots are free again: {r:?}");
}

#[test]
fn connections_beyond_the_cap_are_refused_at_once_not_queued() {
    let dir = TempDir::new("serve-cap");
    let server = Served::start(dir.path(), &["--style", "static", "--max-connections", "8"]);
    let held: Vec<TcpStream> = (0..8)
        .map(|_| TcpStream::connect(&server.addr).unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    let mut extra = TcpStream::connect(&server.addr).unwrap();
    extra
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut raw = Vec::new();
    let read = extra.read_to_end(&mut raw);
    assert!(
        !matches!(&read, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "a connection beyond --max-connections was left waiting: {read:?}"
    );
    if !raw.is_empty() {
        let (status, v) = parse_reply(&raw);
        assert_eq!(status, 529, "{v}");
        assert_eq!(v["detail"]["error_type"], "overloaded_error", "{v}");
        assert!(
            v["detail"]["message"]
                .as_str()
                .unwrap()
                .contains("--max-connections 8"),
            "{v}"
        );
    }

    drop(held);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, _) = crate::support::http(&server.addr, "GET", "/v1/models", b"");
        if status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "no answer once the flood ended");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_request_longer_than_the_shutdown_grace_does_not_keep_serve_alive() {
    let dir = TempDir::new("serve-grace");
    let mut server = Served::start(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--delay-ms",
            "120000",
            "--shutdown-grace",
            "1s",
        ],
    );
    let (addr, body) = (server.addr.clone(), demo_body());
    let (sent, sent_rx) = std::sync::mpsc::channel();
    let client = std::thread::spawn(move || {
        let mut s = TcpStream::connect(&addr).unwrap();
        let head = format!(
            "POST /v1/systemone HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        let _ = sent.send(());
        closed_within(&mut s, Duration::from_secs(60))
    });
    // The request is written before the signal, and serve has had time to
    // read it (on a loaded machine a fixed sleep from the start was not enough).
    sent_rx.recv_timeout(Duration::from_secs(20)).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let asked = Instant::now();
    server.sigterm();
    let status = wait(&mut server.child.0, Duration::from_secs(30))
        .expect("serve outlived --shutdown-grace 1s by far");
    assert_eq!(status.code(), Some(0));
    assert!(
        asked.elapsed() >= Duration::from_millis(900),
        "the grace was given"
    );
    assert!(
        client.join().unwrap(),
        "the request's connection was closed"
    );
    let log = server.log();
    assert!(log.contains("still busy after --shutdown-grace"), "{log}");
    assert!(log.contains("serve: stopped"), "{log}");
}

#[test]
fn shutdown_lets_a_request_in_flight_finish_within_the_grace() {
    let dir = TempDir::new("serve-drain");
    let mut server = Served::start(
        dir.path(),
        &[
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
            "--delay-ms",
            "1500",
        ],
    );
    let (addr, body) = (server.addr.clone(), demo_body());
    let client = std::thread::spawn(move || post(&addr, &body));
    std::thread::sleep(Duration::from_millis(500));
    server.sigterm();
    let r = client.join().unwrap();
    assert_eq!(r.status, 200, "{r:?}");
    let status = wait(&mut server.child.0, Duration::from_secs(30)).expect("serve stopped");
    assert_eq!(status.code(), Some(0));
    assert!(
        TcpStream::connect(&server.addr).is_err(),
        "no longer accepting"
    );
}

#[test]
fn serve_keeps_answering_with_stdout_and_stderr_closed() {
    let dir = TempDir::new("serve-closed-output");
    let mut cmd = toolnexus(
        dir.path(),
        &[
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--style",
            "static",
            "--tape",
            DEMO_TAPE,
        ],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = Guard(cmd.spawn().unwrap());
    // Nobody reads stderr: its read end is closed from the start.
    drop(child.0.stderr.take());
    let mut stdout = BufReader::new(child.0.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("{first:?}"))
        .to_string();
    // Nor stdout, from here on.
    drop(stdout);
    let body = demo_body();
    for i in 0..10 {
        let r = if i % 2 == 0 {
            post(&addr, &body)
        } else {
            request(&addr, "GET", "/v1/models", &[], b"")
        };
        assert_eq!(r.status, 200, "request {i}: {r:?}");
    }
    let r = request(&addr, "GET", "/nothing", &[], b"");
    assert_eq!(r.status, 404, "{r:?}");
    let pid = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = wait(&mut child.0, Duration::from_secs(30)).expect("serve stopped");
    assert_eq!(status.code(), Some(0), "a quiet stop, never a panic");
}

#[test]
fn a_replay_miss_names_the_call_only_and_the_detail_goes_to_the_log_with_log_misses() {
    let dir = TempDir::new("serve-miss");
    let private = dir.join("private-recordings");
    std::fs::create_dir_all(&private).unwrap();
    let tape = private.join("customers.tape.json");
    std::fs::copy(DEMO_TAPE, &tape).unwrap();
    let tape = tape.display().to_string();
    let asked = json!({
        "questions": {"leak": {"type": "noul", "instructions": "QUESTION-TEXT-7f3a: is it?"}},
        "state": "STATE-TEXT-91c2 account 4242",
    })
    .to_string();
    let recorded: Vec<String> = toolnexus::judge::Tape::load(DEMO_TAPE)
        .unwrap()
        .entries()
        .iter()
        .filter(|e| e.call_name == "triage")
        .map(|e| e.state.to_string())
        .collect();

    for (style, want) in [
        ("tape", "tape: no recorded decision for call \"triage\""),
        (
            "static",
            "classifier: static: no recorded decision for this request+state",
        ),
    ] {
        for log_misses in [false, true] {
            let mut args = vec!["--style", style, "--tape", &tape, "--call", "triage"];
            if log_misses {
                args.push("--log-misses");
            }
            let mut server = Served::start(dir.path(), &args);
            let r = post(&server.addr, &asked);
            assert_eq!(r.status, 404, "{r:?}");
            let v = r.json();
            assert_eq!(v["detail"]["error_type"], "not_recorded", "{v}");
            assert_eq!(v["detail"]["message"], want, "{style}: {v}");
            for secret in ["QUESTION-TEXT", "STATE-TEXT", "private-recordings"] {
                assert!(!r.body.contains(secret), "{style}: {secret} in {}", r.body);
            }
            for state in &recorded {
                assert!(
                    !r.body.contains(state.as_str()),
                    "{style}: recorded {state}"
                );
            }

            // GET /v1/models never names the file either.
            let m = request(&server.addr, "GET", "/v1/models", &[], b"");
            assert_eq!(m.status, 200);
            assert!(
                !m.body.contains("private-recordings") && !m.body.contains(".tape.json"),
                "{style}: {}",
                m.body
            );

            server.sigterm();
            wait(&mut server.child.0, Duration::from_secs(30)).expect("serve stopped");
            let log = server.log();
            assert!(log.contains(" 404 "), "{log}");
            if log_misses {
                assert!(log.contains("miss: "), "{style}: {log}");
            } else {
                assert!(!log.contains("miss: "), "{style}: {log}");
                assert!(!log.contains("STATE-TEXT"), "{style}: {log}");
            }
        }
    }
}

#[test]
fn headers_too_large_get_the_wire_error_body() {
    let dir = TempDir::new("serve-431");
    let server = Served::start(dir.path(), &["--style", "static"]);
    let big = "a".repeat(512 * 1024);
    let r = request(&server.addr, "GET", "/v1/models", &[("X-Big", &big)], b"");
    assert_eq!(r.status, 431, "{r:?}");
    let v = r.json();
    assert_eq!(
        v["detail"]["error_type"], "request_header_fields_too_large",
        "{v}"
    );
    assert!(
        v["detail"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty())
    );
    assert!(r.header("x-typesafe-request-id").is_some(), "{r:?}");
    assert_eq!(r.header("content-type"), Some("application/json"));
    // A head that is not HTTP at all: 400, the same body shape.
    let mut s = TcpStream::connect(&server.addr).unwrap();
    s.write_all(b"NOT HTTP \x01\r\n\r\n").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let (status, v) = parse_reply(&raw);
    assert_eq!(status, 400, "{v}");
    assert_eq!(v["detail"]["error_type"], "invalid_request", "{v}");
}

#[test]
fn addr_takes_a_host_name_and_prints_the_bound_address() {
    let dir = TempDir::new("serve-localhost");
    let mut cmd = toolnexus(
        dir.path(),
        &["serve", "--addr", "localhost:0", "--style", "static"],
    );
    cmd.stdin(Stdio::null());
    let server = Served::spawn(cmd);
    assert!(
        server.addr.starts_with("127.0.0.1:") || server.addr.starts_with("[::1]:"),
        "a loopback address is printed: {}",
        server.addr
    );
    let r = request(&server.addr, "GET", "/v1/models", &[], b"");
    assert_eq!(r.status, 200, "{r:?}");

    let out = tn(
        dir.path(),
        &["serve", "--addr", "localhost", "--style", "static"],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("--addr \"localhost\": want HOST:PORT"),
        "{}",
        out.stderr
    );
}

#[test]
fn the_bounds_are_flags_with_documented_defaults() {
    let dir = TempDir::new("serve-help");
    let out = tn(dir.path(), &["serve", "--help"]);
    assert_eq!(out.code, 0);
    for flag in [
        "--max-concurrency",
        "--max-connections",
        "--header-timeout",
        "--body-timeout",
        "--idle-timeout",
        "--shutdown-grace",
        "--log-misses",
    ] {
        assert!(out.stdout.contains(flag), "{flag} in {}", out.stdout);
    }
    for default in [
        "default 64",
        "default 512",
        "default 10s",
        "default 30s",
        "default 60s",
    ] {
        assert!(out.stdout.contains(default), "{default} in {}", out.stdout);
    }
    let out = tn(dir.path(), &["serve", "--idle-timeout", "0s"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--idle-timeout"), "{}", out.stderr);
}
