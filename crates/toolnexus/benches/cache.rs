//! The decision cache (SPEC §12) in front of a System One classifier pointed at
//! a loopback server: a rerun of a 10,000-state batch sends nothing, a hit is
//! ≤ 100 µs at p99, and 1,000 identical concurrent evaluates send one request.
//!
//! `caching()` over a `SqliteCache` in a temporary file (WAL), then the same
//! with a `MemoryCache` for contrast. Per-hit latency is one `evaluate_request`
//! on a hit, timed call by call over the 10,000 states in turn. After the
//! table, criterion measures the two hit paths on their own.
//!
//! `cargo bench -p toolnexus --bench cache`

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::Criterion;
use futures::StreamExt as _;
use serde_json::{Value, json};
use toolnexus::cache::{Cache, CacheKey, MemoryCache, SqliteCache, cache_key, caching};
use toolnexus::classifier::*;
use toolnexus::testing::{Reply, Server};

mod common;
use common::{THREE_ANSWERS, three_questions};

/// States in the batch.
const STATES: u64 = 10_000;
/// Identical evaluates started together.
const IDENTICAL: usize = 1_000;
/// The state the identical evaluates ask about (outside the batch).
const SHARED_STATE: u64 = 1_000_000;
/// States in flight while the cache is filled.
const WINDOW: usize = 16;

fn state(n: u64) -> Value {
    json!({"ticket": n, "text": "I was charged twice for order 1182 and would like one of the payments back."})
}

fn request(n: u64, qs: &Questions) -> EvalRequest {
    EvalRequest::new(state(n), qs.clone())
}

/// The loopback server: every request gets the 3-answer decision; the shared
/// state's answer waits 50 ms so that the identical evaluates overlap.
fn server() -> Server {
    Server::builder()
        .handler(|_, req| {
            let reply = Reply::json(200, THREE_ANSWERS);
            if req.json()["state"]["ticket"] == SHARED_STATE {
                reply.delayed(Duration::from_millis(50))
            } else {
                reply
            }
        })
        .start_on_thread()
}

fn classifier(server: &Server) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        api_key_env: "TOOLNEXUS_BENCH_NO_KEY".into(),
        ..Default::default()
    })
    .expect("a System One classifier")
}

/// Evaluates every state of the batch, [`WINDOW`] in flight; returns how many
/// were cache hits and the wall time.
async fn batch(judge: &Classifier, qs: &Questions) -> (usize, Duration) {
    let start = Instant::now();
    let hits = futures::stream::iter(0..STATES)
        .map(|n| async move {
            judge
                .evaluate_request(EvalContext::new(), request(n, qs))
                .await
                .unwrap_or_else(|e| panic!("state {n}: {e}"))
                .cache_hit
        })
        .buffer_unordered(WINDOW)
        .filter(|hit| futures::future::ready(*hit))
        .count()
        .await;
    (hits, start.elapsed())
}

/// Times one hit after another over the batch's states.
async fn hits_one_by_one(judge: &Classifier, qs: &Questions) -> Vec<Duration> {
    let mut times = Vec::with_capacity(STATES as usize);
    for n in 0..STATES {
        let r = request(n, qs);
        let t0 = Instant::now();
        let e = judge
            .evaluate_request(EvalContext::new(), r)
            .await
            .unwrap_or_else(|e| panic!("state {n}: {e}"));
        times.push(t0.elapsed());
        assert!(e.cache_hit, "state {n} was not a hit");
    }
    times.sort();
    times
}

/// Times `f` once per item, sorted.
fn timed(items: impl Iterator<Item = u64>, mut f: impl FnMut(u64)) -> Vec<Duration> {
    let mut times: Vec<Duration> = items
        .map(|n| {
            let t0 = Instant::now();
            f(n);
            t0.elapsed()
        })
        .collect();
    times.sort();
    times
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn us(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

fn main() {
    // `cargo test --all-targets` runs bench binaries without `--bench`: this
    // one measures for a minute or more, so it only says how to run it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("a measurement: run it with `cargo bench -p toolnexus --bench cache`");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    let qs = three_questions();
    let dir = std::env::temp_dir().join(format!("toolnexus-bench-cache-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let path = dir.join("decisions.db");

    let server = server();
    let sqlite: Arc<dyn Cache> =
        Arc::new(SqliteCache::open(&path, Default::default()).expect("a cache file"));
    let inner = classifier(&server);
    let endpoint = inner.endpoint().expect("a System One endpoint").to_string();
    let model = inner.model().to_string();
    let judge = caching(inner, sqlite.clone());

    let (hits, first) = rt.block_on(batch(&judge, &qs));
    let sent_first = server.count();
    assert_eq!(hits, 0, "an empty cache has no hits");
    assert_eq!(
        sent_first, STATES as usize,
        "one request per distinct state"
    );

    let (hits, rerun) = rt.block_on(batch(&judge, &qs));
    let sent_rerun = server.count() - sent_first;
    assert_eq!(hits, STATES as usize, "every state of the rerun is a hit");
    assert_eq!(sent_rerun, 0, "the rerun sends nothing");

    let sqlite_hits = rt.block_on(hits_one_by_one(&judge, &qs));
    assert_eq!(server.count(), sent_first, "the timed hits send nothing");

    // The hit's parts on the calling thread, without the runtime: the key, and
    // the store's read.
    let requests: Vec<EvalRequest> = (0..STATES).map(|n| request(n, &qs)).collect();
    let keys: Vec<CacheKey> = requests
        .iter()
        .map(|r| cache_key(&endpoint, &model, r))
        .collect();
    let key_times = timed(0..STATES, |n| {
        std::hint::black_box(cache_key(&endpoint, &model, &requests[n as usize]));
    });
    let request_times = timed(0..STATES, |n| {
        std::hint::black_box(request(n, &qs));
    });
    let get_times = timed(0..STATES, |n| {
        let found = sqlite.get(&keys[n as usize]).expect("a readable cache");
        assert!(found.is_some(), "state {n} is stored");
    });
    // The store's SELECT on a connection of its own: the statement prepared
    // on every read (as `SqliteCache::get` does) against one prepared once.
    let conn = rusqlite::Connection::open(&path).expect("the cache file");
    let select = "SELECT decision, model, stored_at FROM entries WHERE key = ?1";
    let read = |stmt: &mut rusqlite::Statement<'_>, key: &CacheKey| {
        let (text, _model, _at): (String, String, i64) = stmt
            .query_row([&key.0[..]], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .expect("a stored entry");
        text
    };
    let prepare_times = timed(0..STATES, |n| {
        let mut stmt = conn.prepare(select).expect("a statement");
        std::hint::black_box(read(&mut stmt, &keys[n as usize]));
    });
    let mut once = conn.prepare(select).expect("a statement");
    let reused_times = timed(0..STATES, |n| {
        std::hint::black_box(read(&mut once, &keys[n as usize]));
    });
    drop(once);
    let text = read(&mut conn.prepare(select).expect("a statement"), &keys[0]);
    let parse_times = timed(0..STATES, |_| {
        std::hint::black_box(serde_json::from_str::<Value>(&text).expect("stored JSON"));
    });
    drop(conn);
    let stored = sqlite
        .get(&keys[0])
        .expect("a readable cache")
        .expect("stored")
        .decision;
    let decode_times = timed(0..STATES, |_| {
        std::hint::black_box(Decision::from_value(&stored).expect("a stored decision"));
    });
    let inline_times = timed(0..STATES, |n| {
        let key = cache_key(&endpoint, &model, &requests[n as usize]);
        let found = sqlite.get(&key).expect("a readable cache").expect("stored");
        std::hint::black_box(Decision::from_value(&found.decision).expect("a stored decision"));
    });
    let hop_times = rt.block_on(async {
        let mut times = Vec::with_capacity(STATES as usize);
        for _ in 0..STATES {
            let t0 = Instant::now();
            tokio::task::spawn_blocking(|| ())
                .await
                .expect("a blocking task");
            times.push(t0.elapsed());
        }
        times.sort();
        times
    });

    let before = server.count();
    let shared = rt
        .block_on(futures::future::join_all((0..IDENTICAL).map(|_| {
            judge.evaluate_request(EvalContext::new(), request(SHARED_STATE, &qs))
        })));
    let sent_identical = server.count() - before;
    let waiters = shared
        .iter()
        .map(|r| r.as_ref().expect("an identical evaluate failed"))
        .filter(|e| e.cache_hit)
        .count();
    assert_eq!(
        sent_identical, 1,
        "identical concurrent evaluates send one request"
    );
    assert_eq!(
        waiters,
        IDENTICAL - 1,
        "all but the leader share its answer"
    );

    let memory: Arc<dyn Cache> = Arc::new(MemoryCache::new());
    let in_memory = caching(classifier(&server), memory);
    let before = server.count();
    rt.block_on(batch(&in_memory, &qs));
    assert_eq!(server.count() - before, STATES as usize);
    let memory_hits = rt.block_on(hits_one_by_one(&in_memory, &qs));
    assert_eq!(
        server.count() - before,
        STATES as usize,
        "the timed hits send nothing"
    );

    println!("| measurement | figure |");
    println!("|---|---|");
    println!(
        "| first pass, {STATES} distinct states ({WINDOW} in flight): requests sent | {sent_first} ({:.2} s) |",
        first.as_secs_f64()
    );
    println!(
        "| rerun of the same {STATES} states ({WINDOW} in flight): requests sent | {sent_rerun} ({:.2} s, {} hits) |",
        rerun.as_secs_f64(),
        hits
    );
    for (name, t) in [
        ("SqliteCache hit, one `evaluate_request`", &sqlite_hits),
        ("MemoryCache hit, one `evaluate_request`", &memory_hits),
        (
            "of a hit: building the `EvalRequest` (state + questions clone)",
            &request_times,
        ),
        (
            "of a hit: `cache_key` (canonical request + state, SHA-256)",
            &key_times,
        ),
        ("of a hit: `SqliteCache::get` called directly", &get_times),
        (
            "of that: the SELECT, statement prepared each time (rusqlite)",
            &prepare_times,
        ),
        (
            "of that: the SELECT, one statement prepared once and reused",
            &reused_times,
        ),
        (
            "of that: the stored text parsed into a `serde_json::Value`",
            &parse_times,
        ),
        (
            "of a hit: `Decision::from_value` of the stored entry",
            &decode_times,
        ),
        (
            "a hit's own work on the calling thread: `cache_key` + `SqliteCache::get` + `Decision::from_value`",
            &inline_times,
        ),
        (
            "of a hit: a `spawn_blocking` round trip (empty closure)",
            &hop_times,
        ),
    ] {
        println!(
            "| {name} ({} in turn): p50 / p99 / max | {} / {} / {} |",
            t.len(),
            us(percentile(t, 0.50)),
            us(percentile(t, 0.99)),
            us(*t.last().expect("timed hits")),
        );
    }
    println!(
        "| {IDENTICAL} identical concurrent evaluates (SqliteCache, answer delayed 50 ms): requests sent | {sent_identical} ({waiters} shared the answer) |"
    );
    let p99 = percentile(&sqlite_hits, 0.99);
    println!(
        "target: SqliteCache hit p99 <= 100 µs: {} ({})",
        us(p99),
        if p99 <= Duration::from_micros(100) {
            "met"
        } else {
            "NOT met"
        }
    );
    println!();

    let mut c = Criterion::default().configure_from_args();
    let mut g = c.benchmark_group("cache_hit");
    let one = request(STATES / 2, &qs);
    g.bench_function("SqliteCache evaluate_request", |b| {
        b.to_async(&rt).iter(|| async {
            judge
                .evaluate_request(EvalContext::new(), one.clone())
                .await
                .unwrap()
        })
    });
    g.bench_function("MemoryCache evaluate_request", |b| {
        b.to_async(&rt).iter(|| async {
            in_memory
                .evaluate_request(EvalContext::new(), one.clone())
                .await
                .unwrap()
        })
    });
    g.finish();
    c.final_summary();

    drop((judge, sqlite));
    let _ = std::fs::remove_dir_all(&dir);
}
