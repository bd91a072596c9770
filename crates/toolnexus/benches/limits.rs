//! Goodput under a rate limit (SPEC §12): a loopback System One server that
//! enforces a token bucket of `R` requests a minute (429 when it is empty),
//! driven by three clients:
//!
//! - (a) the shared [`Limiter`] (`requests_per_minute: R`) with many states in
//!   flight;
//! - (b) today's fixed concurrency: no limiter, the library's own retries;
//! - (c) the classic request-and-token-bucket processor (as in OpenAI's
//!   `api_request_parallel_processor.py`): buckets holding a minute of budget,
//!   refilled continuously, one dispatch per 1 ms loop turn, and after any 429
//!   a fixed cool-down for the dispatcher; refused states are queued again.
//!
//! The server answers 429 with `Retry-After: 1` and `retry-after-ms` set to
//! the exact time until its next token. The library reads `retry-after-ms`
//! first; the classic processor reads neither and waits out its cool-down.
//!
//! For each client: goodput (decisions per minute ÷ R), the share of 429s among
//! all requests the server saw, and p50/p99 latency per state, from the moment
//! the client takes the state up (it enters the window of states in flight, or
//! the classic dispatcher takes it off its queue) to its decision. Every run
//! checks that each state it started was decided once, correctly, and answered
//! with a 200 by the server exactly once.
//!
//! `cargo bench -p toolnexus --bench limits`

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde_json::{Value, json};
use toolnexus::classifier::*;
use toolnexus::limit::{Limiter, LimiterOptions};
use toolnexus::testing::{Reply, Server};

/// The server's budget, requests per minute.
const R: u32 = 6_000;
/// The server's bucket: at most this many requests back to back.
const BURST: f64 = 5.0;
/// States offered to each client.
const STATES: u64 = 2_000;
/// No state starts after this; the ones started finish.
const CAP: Duration = Duration::from_secs(25);
/// The classic processor's pause after a 429 (the script's 15 s, scaled to a
/// run of seconds).
const COOL_DOWN: Duration = Duration::from_secs(1);
/// The classic processor's token budget: large enough never to bind (the
/// server counts requests only).
const CLASSIC_TPM: f64 = 2_000_000.0;

fn per_sec() -> f64 {
    f64::from(R) / 60.0
}

fn questions() -> Questions {
    Questions::from([(
        "refund".to_string(),
        NoulQuestion {
            instructions: "Does the customer ask for money back?".into(),
            criteria: Some(NoulCriteria {
                when_true: "a refund or chargeback is requested".into(),
                when_false: "anything else".into(),
            }),
        }
        .into(),
    )])
}

fn state(n: u64) -> Value {
    json!({"n": n, "text": "I was charged twice for order 1182 and would like one of the payments back."})
}

fn expected(n: u64) -> f64 {
    (n % 100) as f64 / 100.0
}

fn answer(n: u64) -> String {
    format!(
        r#"{{"model":"jev-1.13","answers":{{"refund":{{"type":"noul","noul":{}}}}},"usage":{{"input_tokens":48,"output_tokens":1}}}}"#,
        expected(n)
    )
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// 200 answers per state.
    answered: Mutex<HashMap<u64, u32>>,
    throttled: AtomicU64,
}

/// A server on a thread of its own refilling `R / 60` tokens a second into a
/// bucket of [`BURST`], full at the start.
fn bucket_server() -> (Server, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let counts = seen.clone();
    let bucket = Mutex::new((BURST, Instant::now()));
    let server = Server::builder()
        .handler(move |_, req| {
            let rate = per_sec();
            let mut b = bucket.lock().unwrap();
            let now = Instant::now();
            b.0 = (b.0 + now.duration_since(b.1).as_secs_f64() * rate).min(BURST);
            b.1 = now;
            if b.0 < 1.0 {
                let wait_ms = ((1.0 - b.0) / rate * 1000.0).ceil().max(1.0);
                drop(b);
                counts.throttled.fetch_add(1, Ordering::Relaxed);
                return Reply::json(
                    429,
                    r#"{"error":{"type":"rate_limit_error","message":"rate limit reached"}}"#,
                )
                .with_header("retry-after", "1")
                .with_header("retry-after-ms", &format!("{wait_ms}"));
            }
            b.0 -= 1.0;
            drop(b);
            let n = req.json()["state"]["n"].as_u64().expect("a state number");
            *counts.answered.lock().unwrap().entry(n).or_insert(0) += 1;
            Reply::json(200, answer(n))
        })
        .start_on_thread();
    (server, seen)
}

fn classifier(server: &Server, retries: i32, limiter: Option<Limiter>) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-1.13".into(),
        api_key_env: "TOOLNEXUS_BENCH_NO_KEY".into(),
        retries,
        retry_budget_ms: 600_000,
        limiter,
        ..Default::default()
    })
    .expect("a System One classifier")
}

/// One state's decision and how long it took.
struct Done {
    n: u64,
    noul: f64,
    latency: Duration,
}

/// A client's run: its decisions, the states it started and its wall time.
struct Run {
    done: Vec<Done>,
    started: u64,
    elapsed: Duration,
}

/// States `0..STATES` through `judge`, `window` in flight; none starts after
/// [`CAP`].
async fn windowed(judge: Classifier, window: usize) -> Run {
    let qs = questions();
    let start = Instant::now();
    let started = AtomicU64::new(0);
    let results: Vec<Option<Done>> = futures::stream::iter(0..STATES)
        .map(|n| {
            let (judge, qs, started) = (&judge, &qs, &started);
            async move {
                if start.elapsed() >= CAP {
                    return None;
                }
                started.fetch_add(1, Ordering::Relaxed);
                let t0 = Instant::now();
                let d = judge
                    .evaluate(state(n), qs)
                    .await
                    .unwrap_or_else(|e| panic!("state {n} failed: {e}"));
                Some(Done {
                    n,
                    noul: d.noul("refund").expect("a noul answer").noul,
                    latency: t0.elapsed(),
                })
            }
        })
        .buffer_unordered(window)
        .collect()
        .await;
    let elapsed = start.elapsed();
    Run {
        done: results.into_iter().flatten().collect(),
        started: started.into_inner(),
        elapsed,
    }
}

/// The classic processor: request and token buckets holding a minute of
/// budget (full at the start) refilled continuously; a loop that takes the
/// next state (refused ones first), dispatches it once both buckets have room,
/// sleeps 1 ms, and sleeps out [`COOL_DOWN`] from the latest 429. Each attempt
/// is one request (`retries: -1`); a refused state goes back on the queue.
async fn classic(judge: Classifier) -> Run {
    let qs = Arc::new(questions());
    let rpm = f64::from(R);
    let estimate = |n: u64| (state(n).to_string().len() / 4) as f64;
    let retry: Arc<Mutex<VecDeque<(u64, Instant)>>> = Arc::default();
    let last_429: Arc<Mutex<Option<Instant>>> = Arc::default();
    let in_progress = Arc::new(AtomicUsize::new(0));
    let done: Arc<Mutex<Vec<Done>>> = Arc::default();
    let (mut requests, mut tokens) = (rpm, CLASSIC_TPM);
    let start = Instant::now();
    let mut last_update = start;
    let (mut next, mut pending) = (0u64, None::<(u64, Instant)>);
    loop {
        if pending.is_none() {
            pending = retry.lock().unwrap().pop_front();
            if pending.is_none() && next < STATES && start.elapsed() < CAP {
                pending = Some((next, Instant::now()));
                next += 1;
                in_progress.fetch_add(1, Ordering::SeqCst);
            }
        }
        let now = Instant::now();
        let dt = now.duration_since(last_update).as_secs_f64();
        requests = (requests + rpm * dt / 60.0).min(rpm);
        tokens = (tokens + CLASSIC_TPM * dt / 60.0).min(CLASSIC_TPM);
        last_update = now;
        if let Some((n, t0)) = pending
            && requests >= 1.0
            && tokens >= estimate(n)
        {
            requests -= 1.0;
            tokens -= estimate(n);
            pending = None;
            let (judge, qs) = (judge.clone(), qs.clone());
            let (retry, last_429, in_progress, done) = (
                retry.clone(),
                last_429.clone(),
                in_progress.clone(),
                done.clone(),
            );
            tokio::spawn(async move {
                match judge.evaluate(state(n), &qs).await {
                    Ok(d) => {
                        done.lock().unwrap().push(Done {
                            n,
                            noul: d.noul("refund").expect("a noul answer").noul,
                            latency: t0.elapsed(),
                        });
                        in_progress.fetch_sub(1, Ordering::SeqCst);
                    }
                    Err(e) => {
                        assert_eq!(e.status(), Some(429), "state {n}: {e}");
                        *last_429.lock().unwrap() = Some(Instant::now());
                        retry.lock().unwrap().push_back((n, t0));
                    }
                }
            });
        }
        if pending.is_none() && in_progress.load(Ordering::SeqCst) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
        let since = last_429.lock().unwrap().map(|t| t.elapsed());
        if let Some(since) = since
            && since < COOL_DOWN
        {
            tokio::time::sleep(COOL_DOWN - since).await;
        }
    }
    let elapsed = start.elapsed();
    let done = std::mem::take(&mut *done.lock().unwrap());
    Run {
        done,
        started: next,
        elapsed,
    }
}

/// One row of the table.
struct Row {
    client: &'static str,
    window: String,
    started: u64,
    decided: usize,
    elapsed: Duration,
    requests: usize,
    throttled: u64,
    p50: Duration,
    p99: Duration,
    note: String,
}

/// Checks the run lost and duplicated nothing, and summarises it.
fn summarise(
    client: &'static str,
    window: String,
    run: Run,
    server: &Server,
    seen: &Seen,
    note: String,
) -> Row {
    let mut decided: HashMap<u64, f64> = HashMap::new();
    for d in &run.done {
        assert!(
            decided.insert(d.n, d.noul).is_none(),
            "{client}: state {} decided twice",
            d.n
        );
        assert_eq!(d.noul, expected(d.n), "{client}: state {} wrong", d.n);
    }
    assert_eq!(
        decided.len() as u64,
        run.started,
        "{client}: a started state was lost"
    );
    let answered = seen.answered.lock().unwrap();
    assert_eq!(
        answered.len(),
        decided.len(),
        "{client}: the server answered states the client never reported"
    );
    for (n, count) in answered.iter() {
        assert!(
            decided.contains_key(n),
            "{client}: state {n} answered, not decided"
        );
        assert_eq!(*count, 1, "{client}: state {n} answered {count} times");
    }
    let requests = server.count();
    let throttled = seen.throttled.load(Ordering::Relaxed);
    assert_eq!(
        requests as u64,
        throttled + answered.len() as u64,
        "{client}: every request was answered 200 or 429"
    );
    let mut latencies: Vec<Duration> = run.done.iter().map(|d| d.latency).collect();
    latencies.sort();
    Row {
        client,
        window,
        started: run.started,
        decided: decided.len(),
        elapsed: run.elapsed,
        requests,
        throttled,
        p50: percentile(&latencies, 0.50),
        p99: percentile(&latencies, 0.99),
        note,
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// The limiter on its own, no HTTP: `grants` permits taken one after another
/// at `R`, as a share of `R`; how late a Tokio sleep of one spacing
/// (`60 s / R`) wakes, on average; and, for reference, the share of `R` of a
/// loop that sleeps until fixed deadlines `start + k × spacing`.
async fn pacing(grants: u32) -> (f64, Duration, f64) {
    let limiter = Limiter::new(LimiterOptions {
        requests_per_minute: Some(R),
        ..Default::default()
    });
    let cancel = tokio_util::sync::CancellationToken::new();
    let start = Instant::now();
    for _ in 0..grants {
        let p = limiter.acquire(0, &cancel).await.expect("not cancelled");
        p.finish(toolnexus::limit::Outcome::Success);
    }
    // The first permit is free; the rest are spaced.
    let share = f64::from(grants - 1) / start.elapsed().as_secs_f64() / per_sec();
    let spacing = Duration::from_secs_f64(1.0 / per_sec());
    let mut late = Duration::ZERO;
    for _ in 0..100 {
        let t0 = Instant::now();
        tokio::time::sleep(spacing).await;
        late += t0.elapsed().saturating_sub(spacing);
    }
    let start = tokio::time::Instant::now();
    for k in 1..grants {
        tokio::time::sleep_until(start + spacing * k).await;
    }
    let fixed = f64::from(grants - 1) / start.elapsed().as_secs_f64() / per_sec();
    (share, late / 100, fixed)
}

fn main() {
    // `cargo test --all-targets` runs bench binaries without `--bench`: this
    // one measures for a minute or more, so it only says how to run it.
    if !std::env::args().any(|a| a == "--bench") {
        println!("a measurement: run it with `cargo bench -p toolnexus --bench limits`");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a Tokio runtime");
    println!(
        "server: token bucket of {R}/min ({:.0}/s), burst {BURST}, 429 with Retry-After: 1 and retry-after-ms to the next token",
        per_sec()
    );
    println!(
        "offered: {STATES} states per client; none starts after {} s; classic cool-down {} s",
        CAP.as_secs(),
        COOL_DOWN.as_secs()
    );
    let mut rows = Vec::new();

    for window in [64usize, 16] {
        let (server, seen) = bucket_server();
        let limiter = Limiter::new(LimiterOptions {
            requests_per_minute: Some(R),
            ..Default::default()
        });
        let judge = classifier(&server, 100, Some(limiter.clone()));
        let run = rt.block_on(windowed(judge, window));
        let s = limiter.stats();
        let note = format!(
            "limiter: {} granted, {} throttled, concurrency {} at the end",
            s.granted, s.throttled, s.concurrency
        );
        rows.push(summarise(
            "(a) Limiter, rpm = R",
            window.to_string(),
            run,
            &server,
            &seen,
            note,
        ));
        eprintln!("{}", row_line(rows.last().unwrap()));
    }

    {
        let (server, seen) = bucket_server();
        let judge = classifier(&server, 10_000, None);
        let run = rt.block_on(windowed(judge, 16));
        rows.push(summarise(
            "(b) fixed concurrency, no limiter",
            "16".into(),
            run,
            &server,
            &seen,
            "library retries, waits = retry-after-ms".into(),
        ));
        eprintln!("{}", row_line(rows.last().unwrap()));
    }

    {
        let (server, seen) = bucket_server();
        let judge = classifier(&server, -1, None);
        let run = rt.block_on(classic(judge));
        rows.push(summarise(
            "(c) classic buckets + cool-down",
            "unbounded".into(),
            run,
            &server,
            &seen,
            format!(
                "{} s cool-down after a 429, refused states queued again",
                COOL_DOWN.as_secs()
            ),
        ));
        eprintln!("{}", row_line(rows.last().unwrap()));
    }

    println!();
    println!(
        "| client | in flight | states started | decided | elapsed | decisions/min | goodput (÷ R) | requests seen | 429s | 429 share | p50 | p99 |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        println!("{}", row_line(r));
    }
    println!();
    for r in &rows {
        println!("{} ({} in flight): {}", r.client, r.window, r.note);
    }
    let (share, late, fixed) = rt.block_on(pacing(300));
    println!(
        "limiter alone (no HTTP, one caller, 300 permits at R): {:.1}% of R; a Tokio sleep of {} wakes {} late on average; sleeping until fixed deadlines start + k x {} instead: {:.1}% of R",
        share * 100.0,
        ms(Duration::from_secs_f64(1.0 / per_sec())),
        ms(late),
        ms(Duration::from_secs_f64(1.0 / per_sec())),
        fixed * 100.0
    );
    let a = &rows[0];
    let goodput = per_minute(a) / f64::from(R);
    let share = a.throttled as f64 / a.requests as f64;
    println!(
        "target for (a): goodput >= 95% of R with <= 1% 429s: {:.1}% of R, {:.2}% 429s: {}",
        goodput * 100.0,
        share * 100.0,
        if goodput >= 0.95 && share <= 0.01 {
            "met"
        } else {
            "NOT met"
        }
    );
}

fn per_minute(r: &Row) -> f64 {
    r.decided as f64 / r.elapsed.as_secs_f64() * 60.0
}

fn row_line(r: &Row) -> String {
    format!(
        "| {} | {} | {} | {} | {:.2} s | {:.0} | {:.1}% | {} | {} | {:.2}% | {} | {} |",
        r.client,
        r.window,
        r.started,
        r.decided,
        r.elapsed.as_secs_f64(),
        per_minute(r),
        per_minute(r) / f64::from(R) * 100.0,
        r.requests,
        r.throttled,
        r.throttled as f64 / r.requests.max(1) as f64 * 100.0,
        ms(r.p50),
        ms(r.p99),
    )
}
