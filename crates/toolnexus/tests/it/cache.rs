//! The decision cache: hits, misses and single flight through the `caching`
//! wrapper; the SQLite store's limits, its refusal of foreign and damaged
//! files, and two processes sharing one file.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use toolnexus::cache::{
    Cache, CacheErrorKind, CacheKey, Cached, MemoryCache, SqliteCache, SqliteOptions, caching,
};
use toolnexus::classifier::*;

use crate::support::{Dir, Reply, Server};

fn spam() -> Questions {
    Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )])
}

fn entry(i: u64) -> Cached {
    Cached {
        decision: json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.5}}, "i": i}),
        model: "m".into(),
        stored_at: toolnexus::cache::MemoryCache::now(),
        requested: None,
    }
}

fn key(i: u64) -> CacheKey {
    let mut k = [0u8; 32];
    k[..8].copy_from_slice(&i.to_le_bytes());
    CacheKey(k)
}

const SPAM_ANSWER: &str = r#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.91}},"usage":{"input_tokens":10,"output_tokens":2,"cost":0.001}}"#;

fn system_one(server: &Server) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-1.13".into(),
        retries: -1,
        ..Default::default()
    })
    .unwrap()
}

#[tokio::test]
async fn a_rerun_sends_nothing_and_hits_are_marked_and_cost_nothing_in_metrics() {
    let server = Server::start([Reply::json(200, SPAM_ANSWER)]).await;
    let dir = Dir::new("cache-rerun");
    let cache = Arc::new(SqliteCache::open(dir.join("c.db"), SqliteOptions::default()).unwrap());
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = events.clone();
    let inner = system_one(&server);
    let judge = caching(inner, cache.clone());
    let metered = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        evaluator: Some(Arc::new(judge.clone())),
        on_metric: Some(Arc::new(move |e: &MetricEvent| {
            seen.lock()
                .unwrap()
                .push((e.cache_hit, e.cost, e.input_tokens));
        })),
        ..Default::default()
    })
    .unwrap();
    for i in 0..20 {
        let r = metered
            .evaluate_request(
                EvalContext::new(),
                EvalRequest::new(json!({"n": i}), spam()),
            )
            .await
            .unwrap();
        assert!(!r.cache_hit);
    }
    assert_eq!(server.count(), 20);
    for i in 0..20 {
        let r = metered
            .evaluate_request(
                EvalContext::new(),
                EvalRequest::new(json!({"n": i}), spam()),
            )
            .await
            .unwrap();
        assert!(r.cache_hit, "state {i}");
        assert_eq!(r.decision.noul("spam").unwrap().noul, 0.91);
        assert_eq!(
            r.decision.usage.cost,
            Some(0.001),
            "the recorded decision is kept whole"
        );
    }
    assert_eq!(server.count(), 20, "the rerun sent 0 requests");
    let events = events.lock().unwrap().clone();
    assert_eq!(events.len(), 40);
    assert!(
        events[..20]
            .iter()
            .all(|&(hit, cost, tokens)| !hit && cost == Some(0.001) && tokens == 10)
    );
    assert!(
        events[20..]
            .iter()
            .all(|&(hit, cost, tokens)| hit && cost == Some(0.0) && tokens == 0)
    );
    // A fresh handle on the same file (a rerun in a new process) hits too.
    drop(judge);
    let again = caching(
        system_one(&server),
        Arc::new(SqliteCache::open(dir.join("c.db"), SqliteOptions::default()).unwrap()),
    );
    assert!(
        again
            .evaluate_request(
                EvalContext::new(),
                EvalRequest::new(json!({"n": 3}), spam())
            )
            .await
            .unwrap()
            .cache_hit
    );
    assert_eq!(server.count(), 20);
}

#[tokio::test]
async fn errors_are_never_cached() {
    let server = Server::start([
        Reply::json(503, r#"{"detail": "busy"}"#),
        Reply::json(400, r#"{"detail": "bad"}"#),
        Reply::json(200, SPAM_ANSWER),
    ])
    .await;
    let judge = caching(system_one(&server), Arc::new(MemoryCache::new()));
    let qs = spam();
    assert!(judge.evaluate(json!("x"), &qs).await.is_err());
    assert!(judge.evaluate(json!("x"), &qs).await.is_err());
    assert!(judge.evaluate(json!("x"), &qs).await.is_ok());
    assert!(judge.evaluate(json!("x"), &qs).await.is_ok());
    assert_eq!(
        server.count(),
        3,
        "two failures asked again, then one success stored"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_identical_concurrent_evaluates_send_one_request() {
    let server =
        Server::start([Reply::json(200, SPAM_ANSWER).delayed(Duration::from_millis(200))]).await;
    let judge = caching(system_one(&server), Arc::new(MemoryCache::new()));
    let qs = spam();
    let all = futures::future::join_all((0..1000).map(|_| {
        let (judge, qs) = (judge.clone(), qs.clone());
        async move {
            judge
                .evaluate_request(EvalContext::new(), EvalRequest::new(json!("same"), qs))
                .await
        }
    }))
    .await;
    let hits = all.iter().filter(|r| r.as_ref().unwrap().cache_hit).count();
    assert_eq!(server.count(), 1);
    assert_eq!(hits, 999, "every waiter but the one that asked is a hit");
    // Different states are different requests.
    let other = judge.evaluate(json!("other"), &qs).await.unwrap();
    assert_eq!(other.model, "jev-1.13");
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_shared_failure_reaches_every_waiter() {
    let server = Server::start([
        Reply::json(400, r#"{"detail": "bad"}"#).delayed(Duration::from_millis(100))
    ])
    .await;
    let judge = caching(system_one(&server), Arc::new(MemoryCache::new()));
    let qs = spam();
    let all = futures::future::join_all((0..10).map(|_| judge.evaluate(json!("same"), &qs))).await;
    assert_eq!(server.count(), 1);
    for r in all {
        let e = r.unwrap_err();
        assert_eq!((e.kind(), e.status()), (ErrorKind::Http, Some(400)), "{e}");
    }
}

#[test]
fn ttl_and_max_entries_hold_in_the_file() {
    let dir = Dir::new("cache-limits");
    let path = dir.join("c.db");
    let limited = SqliteCache::open(
        &path,
        SqliteOptions {
            ttl: Some(Duration::from_secs(60)),
            max_entries: Some(10),
            ..Default::default()
        },
    )
    .unwrap();
    for i in 0..25 {
        let mut e = entry(i);
        e.stored_at += i; // a strict order of age
        limited.put(&key(i), &e).unwrap();
    }
    let stats = limited.stats().unwrap();
    assert_eq!(stats.entries, 10, "{stats:?}");
    assert_eq!(limited.get(&key(0)).unwrap(), None, "the oldest went first");
    assert!(limited.get(&key(24)).unwrap().is_some());
    let mut old = entry(99);
    old.stored_at -= 3600;
    limited.put(&key(99), &old).unwrap();
    assert_eq!(
        limited.get(&key(99)).unwrap(),
        None,
        "stored an hour ago: past the 60 s TTL"
    );
    assert_eq!(stats.models, [("m".to_string(), 10)]);
}

#[test]
fn a_text_file_a_foreign_database_and_a_damaged_cache_are_named_errors() {
    let dir = Dir::new("cache-foreign");
    let text = dir.join("notes.txt");
    std::fs::write(
        &text,
        "shopping list: eggs, milk, and a header-sized line of text to be sure",
    )
    .unwrap();
    let e = SqliteCache::open(&text, SqliteOptions::default()).unwrap_err();
    assert_eq!(e.kind(), CacheErrorKind::Corrupt, "{e}");
    assert!(e.to_string().contains("notes.txt"), "{e}");
    assert_eq!(
        std::fs::read_to_string(&text).unwrap().len(),
        69,
        "left untouched"
    );

    let other = dir.join("app.db");
    let c = rusqlite::Connection::open(&other).unwrap();
    c.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ann');").unwrap();
    drop(c);
    let e = SqliteCache::open(&other, SqliteOptions::default()).unwrap_err();
    assert_eq!(e.kind(), CacheErrorKind::Foreign, "{e}");
    assert!(e.to_string().contains("not a toolnexus cache"), "{e}");
    let c = rusqlite::Connection::open(&other).unwrap();
    let n: i64 = c
        .query_row("SELECT count(*) FROM users", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1, "the foreign database is not reset");

    // A cache whose pages are overwritten with garbage: an error, never a panic.
    let damaged = dir.join("damaged.db");
    {
        let cache = SqliteCache::open(&damaged, SqliteOptions::default()).unwrap();
        for i in 0..500 {
            cache.put(&key(i), &entry(i)).unwrap();
        }
    }
    // Fold the WAL in, then scribble over everything after the header page.
    let c = rusqlite::Connection::open(&damaged).unwrap();
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;")
        .unwrap();
    drop(c);
    let mut bytes = std::fs::read(&damaged).unwrap();
    for b in bytes.iter_mut().skip(4096) {
        *b = 0xA5;
    }
    std::fs::write(&damaged, &bytes).unwrap();
    let outcome = SqliteCache::open(&damaged, SqliteOptions::default()).and_then(|c| {
        (0..500).try_for_each(|i| c.get(&key(i)).map(drop))?;
        c.stats().map(drop)
    });
    let e = outcome.expect_err("a damaged file is reported");
    assert!(
        matches!(e.kind(), CacheErrorKind::Corrupt | CacheErrorKind::Foreign),
        "{e}"
    );
    assert!(e.to_string().contains("damaged.db"), "{e}");
}

/// The child half of [`two_processes_share_one_file`]: writes its entries
/// when `TOOLNEXUS_CACHE_CHILD` names a file, otherwise does nothing.
#[test]
fn cache_child_writer() {
    let Some(path) = std::env::var_os("TOOLNEXUS_CACHE_CHILD") else {
        return;
    };
    let base: u64 = std::env::var("TOOLNEXUS_CACHE_BASE")
        .unwrap()
        .parse()
        .unwrap();
    write_entries(Path::new(&path), base);
}

fn write_entries(path: &Path, base: u64) {
    let cache = SqliteCache::open(path, SqliteOptions::default()).unwrap();
    for i in base..base + 300 {
        cache.put(&key(i), &entry(i)).unwrap();
        // Read what the other process wrote while both are writing.
        let _ = cache.get(&key(i ^ 1)).unwrap();
    }
}

#[test]
fn two_processes_share_one_file() {
    let dir = Dir::new("cache-procs");
    let path = dir.join("shared.db");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = [0u64, 1000]
        .iter()
        .map(|base| {
            Command::new(&exe)
                .args([
                    "--exact",
                    "cache::cache_child_writer",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("TOOLNEXUS_CACHE_CHILD", &path)
                .env("TOOLNEXUS_CACHE_BASE", base.to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    // This process writes a third range at the same time.
    write_entries(&path, 5000);
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer process failed");
    }
    let cache = SqliteCache::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(cache.stats().unwrap().entries, 900);
    for base in [0u64, 1000, 5000] {
        for i in base..base + 300 {
            assert_eq!(
                cache.get(&key(i)).unwrap().unwrap().decision["i"],
                i,
                "entry {i}"
            );
        }
    }
}

/// Regression: several openers racing on a file that does not exist yet. Each
/// read the application id and the table count apart, so one could see the
/// tables another had just created but not yet their id, and call a cache
/// being born "not a toolnexus cache". Now both come from one snapshot.
#[test]
fn openers_racing_on_a_new_file_all_see_a_cache() {
    let dir = Dir::new("cache-race");
    for round in 0..40 {
        let path = dir.join(&format!("born-{round}.db"));
        let start = Arc::new(std::sync::Barrier::new(6));
        let openers: Vec<_> = (0..6)
            .map(|_| {
                let (path, start) = (path.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    SqliteCache::open(&path, SqliteOptions::default()).map(|_| ())
                })
            })
            .collect();
        for o in openers {
            if let Err(e) = o.join().unwrap() {
                panic!("round {round}: {e}");
            }
        }
    }
}

/// A style that answers with per-answer extras, as Laya does, counting its calls.
struct WithExtras(Arc<AtomicUsize>);

impl FullEvaluator for WithExtras {
    fn call_full(
        &self,
        _ctx: EvalContext,
        _request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Box::pin(async {
            let d = Decision::from_value(&json!({"model": "laya",
                "answers": {"spam": {"type": "noul", "noul": 0.8}}}))?;
            let mut e = Evaluated::new(d);
            e.extensions.insert(
                "spam".into(),
                json!({"answer_confidence": 0.8, "action": {"act_probability": 0.25}})
                    .as_object()
                    .unwrap()
                    .clone(),
            );
            Ok(e)
        })
    }
}

#[tokio::test]
async fn a_hit_gives_back_the_extras_the_answer_came_with() {
    let dir = Dir::new("cache-extensions");
    let stores: [Arc<dyn Cache>; 2] = [
        Arc::new(MemoryCache::new()),
        Arc::new(SqliteCache::open(dir.join("c.db"), SqliteOptions::default()).unwrap()),
    ];
    let qs = Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    for store in stores {
        let calls = Arc::new(AtomicUsize::new(0));
        let judge = caching(
            Classifier::from_evaluator("laya", WithExtras(calls.clone())),
            store,
        );
        let ask = || {
            judge.evaluate_request(
                EvalContext::default(),
                EvalRequest::new(json!("hi"), qs.clone()),
            )
        };
        let first = ask().await.unwrap();
        let hit = ask().await.unwrap();
        assert!(hit.cache_hit && !first.cache_hit);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        assert_eq!(hit.extensions, first.extensions);
        assert_eq!(hit.extensions["spam"]["action"]["act_probability"], 0.25);
        assert_eq!(hit.decision, first.decision);
    }
}
