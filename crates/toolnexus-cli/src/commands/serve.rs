//! `toolnexus serve`: the flags → the stack and the server's settings →
//! `toolnexus_server::systemone` → the start-up lines and the exit code. What
//! the server does is documented there.

use std::sync::Arc;

use anyhow::Result;
use toolnexus_server::systemone::{ApiKey, ServeConfig, ServeError, Server, ThresholdsFile};
use toolnexus_server::{Backend, shutdown_signal};

use crate::args::{ServeArgs, StyleName};
use crate::exit::{self, Exit};
use crate::style::{self, Fallback};

/// A start-up failure with its exit code: a setting is bad input (2), an
/// address that cannot be listened on is I/O (4).
fn failed(e: ServeError) -> anyhow::Error {
    match e.is_input() {
        true => exit::usage(e),
        false => exit::io(e),
    }
}

/// Runs `toolnexus serve` until Ctrl-C or SIGTERM.
pub async fn run(mut args: ServeArgs) -> Result<Exit> {
    // The SDK in front retries; serve does not multiply its attempts unless asked.
    args.style.live.retries = Some(args.style.live.retries.unwrap_or(-1));
    let key = args
        .require_key_env
        .as_deref()
        .map(ApiKey::from_env)
        .transpose()
        .map_err(failed)?;
    // A cache that cannot be opened is a warning and exit 4 at the end, never
    // a silent run without one; a file that is not a cache is exit 2 now.
    let built = style::build_with(
        &args.style,
        Fallback::Demo(StyleName::Static),
        &style::Layers {
            prices: Some(&args.prices),
            cache: args.cache.as_deref().map(|p| (p, args.alias_ttl)),
            fallback_base_urls: &args.fallback_base_urls,
            ..Default::default()
        },
    )?;
    let thresholds = match &args.thresholds {
        Some(p) => Some(ThresholdsFile {
            path: p.clone(),
            thresholds: toolnexus::judge::Thresholds::load(p)
                .map_err(|e| exit::usage(format!("--thresholds: {e}")))?,
        }),
        None => None,
    };
    style::pin::check(
        &args.pin,
        &args.style,
        built.style,
        args.thresholds.as_deref(),
    )?;
    let config = ServeConfig {
        max_body_bytes: args.max_body_bytes,
        delay: std::time::Duration::from_millis(args.delay_ms),
        key,
        thresholds,
        max_concurrency: args.max_concurrency,
        max_connections: args.max_connections,
        header_timeout: args.header_timeout,
        body_timeout: args.body_timeout,
        idle_timeout: args.idle_timeout,
        shutdown_grace: args.shutdown_grace,
        log_misses: args.log_misses,
        strict_fields: args.strict_fields,
        pinned: args.pin.pinned,
        metrics: args.metrics.then(toolnexus::metrics::Metrics::new),
    };
    let backend = Backend::new(
        built.classifier.clone(),
        built.style.as_str(),
        built.call.clone(),
    );
    let server = Server::bind(
        &args.addr,
        backend,
        config,
        Arc::new(crate::warnings::ServerLog),
    )
    .await
    .map_err(failed)?;
    let addr = server.local_addr();
    let stop = shutdown_signal();
    // The first line is what scripts and tests read to find the server.
    say!("listening on http://{addr}");
    if let Some(why) = &built.offline_reason {
        say!(
            "offline: {why}; serving the recorded decisions of the built-in demo tape; {}",
            style::real_answer_hint(&args.style.live)
        );
    }
    say!(
        "serving {}: POST http://{addr}/v1/systemone, GET http://{addr}/v1/models",
        style::describe(&built)
    );
    if args.metrics {
        say!("metrics: GET http://{addr}/metrics (Prometheus text)");
    }
    say!(
        "official SDKs take the API root as base URL and append /v1/systemone: TypeSafeClient(base_url=\"http://{addr}\") or TYPESAFE_BASE_URL=http://{addr}"
    );
    say!(
        "the toolnexus library and CLI take it with /v1: base_url \"http://{addr}/v1\", --base-url http://{addr}/v1"
    );
    match &args.require_key_env {
        Some(var) => say!(
            "requests must carry Authorization: Bearer <the value of {}>",
            var.trim()
        ),
        None => {
            say!("no authentication (--require-key-env VAR to require a key): keep it on loopback")
        }
    }
    let stopped = server.run(stop).await;
    if stopped.cut > 0 {
        let s = if stopped.cut == 1 { "" } else { "s" };
        tell!(
            "serve: {} connection{s} still busy after --shutdown-grace {:?}: closed",
            stopped.cut,
            args.shutdown_grace
        );
    }
    tell!("serve: stopped");
    Ok(Exit::Success)
}
