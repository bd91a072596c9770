//! HTTPS where users are: the binary trusts `--ca-cert FILE` and the
//! platform's store (`SSL_CERT_FILE`), says what is wrong with a certificate
//! it does not trust, and honours the proxy variables. Against a loopback TLS
//! server with its own CA (`tests/fixtures/tls`, see its README).

use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Arc;

use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::pem::PemObject as _;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::support::{Out, TempDir, Upstream, run, spam_questions, toolnexus};

/// A file of the test CA's fixtures.
pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

/// A loopback TLS front: every connection is decrypted with the fixture's
/// server certificate (for 127.0.0.1) and piped to a plain HTTP server.
/// Stops with the test process.
pub struct TlsFront {
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl TlsFront {
    /// In front of the plain server at `plain` (`127.0.0.1:PORT`).
    pub fn start(plain: &str) -> TlsFront {
        let certs: Vec<CertificateDer<'static>> =
            CertificateDer::pem_file_iter(fixture("server.pem"))
                .unwrap()
                .map(Result::unwrap)
                .collect();
        let key = PrivateKeyDer::from_pem_file(fixture("server.key")).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let plain = plain.to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                loop {
                    let Ok((tcp, _)) = listener.accept().await else {
                        return;
                    };
                    let acceptor = acceptor.clone();
                    let plain = plain.clone();
                    tokio::spawn(async move {
                        // A client that refuses the certificate ends here.
                        let Ok(mut tls) = acceptor.accept(tcp).await else {
                            return;
                        };
                        let Ok(mut inner) = tokio::net::TcpStream::connect(&plain).await else {
                            return;
                        };
                        let _ = tokio::io::copy_bidirectional(&mut tls, &mut inner).await;
                    });
                }
            });
        });
        TlsFront { addr }
    }
}

/// `host:port` of a `http://host:port/...` URL.
pub fn authority(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_string()
}

/// A System One upstream answering the spam question, behind a TLS front.
fn https_upstream() -> (Upstream, TlsFront) {
    let up = Upstream::start(|_| {
        (
            200,
            vec![],
            r#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.81}}}"#.to_string(),
        )
    });
    let front = TlsFront::start(&authority(&up.base_url));
    (up, front)
}

fn eval(dir: &TempDir, base_url: &str, extra: &[&str], env: &[(&str, &str)]) -> Out {
    let questions = spam_questions().to_string();
    let mut args = vec![
        "eval",
        "--style",
        "systemone",
        "--base-url",
        base_url,
        "--retries",
        "0",
        "--questions",
        &questions,
        "--state",
        "\"hi\"",
    ];
    args.extend_from_slice(extra);
    let mut cmd = toolnexus(dir.path(), &args);
    cmd.env("TYPESAFE_API_KEY", "sk-tls-test")
        .env_remove("SSL_CERT_DIR");
    cmd.envs(env.iter().copied());
    run(cmd)
}

#[test]
fn an_untrusted_certificate_is_named_and_ca_cert_or_ssl_cert_file_trusts_it() {
    let dir = TempDir::new("tls-eval");
    let (up, front) = https_upstream();
    let base = format!("https://{}/v1", front.addr);
    let ca = fixture("ca.pem");
    let ca = ca.to_str().unwrap();

    // Not trusted: a clear error naming the certificate problem, nothing sent.
    let out = eval(&dir, &base, &[], &[]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr.contains("certificate") && out.stderr.contains("UnknownIssuer"),
        "{}",
        out.stderr
    );
    assert!(up.requests().is_empty());

    // --ca-cert FILE trusts its CA.
    let out = eval(&dir, &base, &["--ca-cert", ca], &[]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("0.81"), "{}", out.stdout);
    assert_eq!(up.requests().len(), 1);

    // So does the platform store's SSL_CERT_FILE.
    let out = eval(&dir, &base, &[], &[("SSL_CERT_FILE", ca)]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 2);

    // And SSL_CERT_DIR, a directory of PEM files.
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::copy(ca, certs.join("test-ca.pem")).unwrap();
    let out = eval(
        &dir,
        &base,
        &[],
        &[("SSL_CERT_DIR", certs.to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(up.requests().len(), 3);

    // A --ca-cert that holds no certificate is bad usage naming it.
    let bogus = dir.write("not-a-cert.pem", "hello");
    let out = eval(&dir, &base, &["--ca-cert", &bogus], &[]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("--ca-cert") && out.stderr.contains("not-a-cert.pem"),
        "{}",
        out.stderr
    );
    // An offline style has no use for it.
    let out = crate::support::tn(
        dir.path(),
        &[
            "eval",
            "--style",
            "tape",
            "--call",
            "triage",
            "--ca-cert",
            ca,
            "--questions",
            &spam_questions().to_string(),
            "--state",
            "\"hi\"",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--ca-cert"), "{}", out.stderr);
}

/// HTTP_PROXY is used for a plain-HTTP base URL, and NO_PROXY bypasses it.
#[test]
fn the_proxy_variables_are_honoured() {
    let dir = TempDir::new("tls-proxy");
    // The "proxy" answers as the upstream would; the upstream itself is a
    // port nobody listens on, so only the proxy can answer.
    let proxy = Upstream::start(|_| {
        (
            200,
            vec![],
            r#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.81}}}"#.to_string(),
        )
    });
    let closed = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let base = format!("http://{closed}/v1");
    let proxy_url = format!("http://{}", authority(&proxy.base_url));

    let out = eval(&dir, &base, &[], &[("HTTP_PROXY", &proxy_url)]);
    assert_eq!(out.code, 0, "{out:?}");
    let seen = proxy.requests();
    assert_eq!(seen.len(), 1);
    assert!(
        seen[0].path.contains(&closed),
        "the proxy was asked for the upstream: {}",
        seen[0].path
    );

    let out = eval(
        &dir,
        &base,
        &[],
        &[("HTTP_PROXY", &proxy_url), ("NO_PROXY", "127.0.0.1")],
    );
    assert_ne!(out.code, 0, "NO_PROXY bypasses the proxy: {out:?}");
    assert_eq!(proxy.requests().len(), 1);
}

/// A loopback CONNECT proxy: each tunnel's target is recorded, then bytes are
/// copied both ways.
struct ConnectProxy {
    url: String,
    targets: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ConnectProxy {
    fn start() -> ConnectProxy {
        use std::io::{BufRead as _, BufReader, Write as _};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let targets = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = targets.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { return };
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(client.try_clone().unwrap());
                    let mut line = String::new();
                    let _ = reader.read_line(&mut line);
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    let mut parts = line.split(' ');
                    let (Some("CONNECT"), Some(target)) = (parts.next(), parts.next()) else {
                        let _ = client.write_all(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n");
                        return;
                    };
                    seen.lock().unwrap().push(target.to_string());
                    let Ok(upstream) = std::net::TcpStream::connect(target) else {
                        let _ = client.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n");
                        return;
                    };
                    let _ = client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n");
                    let mut up_read = upstream.try_clone().unwrap();
                    let mut client_write = client.try_clone().unwrap();
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut up_read, &mut client_write);
                        let _ = client_write.shutdown(std::net::Shutdown::Both);
                    });
                    let mut up_write = upstream;
                    let _ = std::io::copy(&mut reader, &mut up_write);
                    let _ = up_write.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        ConnectProxy { url, targets }
    }

    fn targets(&self) -> Vec<String> {
        self.targets.lock().unwrap().clone()
    }
}

/// HTTPS_PROXY tunnels HTTPS through CONNECT; NO_PROXY=127.0.0.1 goes direct.
#[test]
fn https_goes_through_the_https_proxy_unless_no_proxy_names_the_host() {
    let dir = TempDir::new("tls-connect");
    let (up, front) = https_upstream();
    let base = format!("https://{}/v1", front.addr);
    let ca = fixture("ca.pem");
    let ca = ca.to_str().unwrap();
    let proxy = ConnectProxy::start();

    let out = eval(
        &dir,
        &base,
        &["--ca-cert", ca],
        &[("HTTPS_PROXY", &proxy.url)],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(proxy.targets(), vec![front.addr.clone()]);
    assert_eq!(up.requests().len(), 1);

    let out = eval(
        &dir,
        &base,
        &["--ca-cert", ca],
        &[("HTTPS_PROXY", &proxy.url), ("NO_PROXY", "127.0.0.1")],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(proxy.targets().len(), 1, "NO_PROXY went direct");
    assert_eq!(up.requests().len(), 2);
}
