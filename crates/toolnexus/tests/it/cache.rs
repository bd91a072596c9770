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

// One store, many stacks: a cache key covers the stack's fingerprint, so the
// same store used with and without an answer-changing layer never serves one's
// answer to the other.

/// A Custom classifier answering as `model` with noul `p` on `spam`, counting
/// its calls in `calls`.
fn answering(model: &'static str, p: f64, calls: &Arc<AtomicUsize>) -> Classifier {
    let calls = calls.clone();
    create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: model.into(),
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                Decision::from_value(
                    &json!({"model": model, "answers": {"spam": {"type": "noul", "noul": p}}}),
                )
                .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap()
}

/// Asks `judge` about `"hi"` under call name `c`: the spam answer and
/// whether it was a hit.
async fn ask(judge: &Classifier) -> (f64, bool) {
    let e = judge
        .evaluate_request(
            EvalContext::new().with_call_name("c"),
            EvalRequest::new(json!("hi"), spam()),
        )
        .await
        .unwrap();
    (e.decision.noul("spam").unwrap().noul, e.cache_hit)
}

/// `first` then `second` through one store, each asked twice: neither is
/// served the other's answer, and each is served its own the second time.
async fn kept_apart(first: Classifier, second: Classifier) -> ((f64, bool), (f64, bool)) {
    let store: Arc<dyn Cache> = Arc::new(MemoryCache::new());
    let (a, b) = (
        caching(first, store.clone()),
        caching(second, store.clone()),
    );
    let (a1, b1) = (ask(&a).await, ask(&b).await);
    assert!(!a1.1 && !b1.1, "one stack served the other's answer");
    let (a2, b2) = (ask(&a).await, ask(&b).await);
    assert_eq!(
        (a2, b2),
        ((a1.0, true), (b1.0, true)),
        "each its own, from the store"
    );
    (a1, b1)
}

fn platt(qs: &Questions, model: &str) -> toolnexus::assess::Calibration {
    use toolnexus::assess::calibrate::{NoulMap, Platt};
    use toolnexus::assess::{CalibratedQuestion, Calibration, QuestionMap};
    let mut file = Calibration::default();
    file.questions.insert(
        "spam".into(),
        CalibratedQuestion {
            hash: question_hash(&qs["spam"]),
            models: vec![model.into()],
            rows: 500,
            map: QuestionMap::Noul {
                map: NoulMap::Platt(Platt { a: -0.5, b: 0.0 }),
            },
        },
    );
    file
}

#[tokio::test]
async fn a_calibrated_stack_and_the_plain_one_never_answer_for_each_other() {
    let calls = Arc::new(AtomicUsize::new(0));
    let base = answering("jev-1.13", 0.99, &calls);
    let calibrated =
        toolnexus::assess::calibrating(base.clone(), platt(&spam(), "jev-1.13")).unwrap();
    // Calibrated first (the issue's order), then the other way round.
    let (c, p) = kept_apart(calibrated.clone(), base.clone()).await;
    assert!(c.0 < 0.99 && p.0 == 0.99, "{c:?} {p:?}");
    let (p, c) = kept_apart(base, calibrated).await;
    assert!(c.0 < 0.99 && p.0 == 0.99, "{c:?} {p:?}");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn two_calibrations_never_answer_for_each_other() {
    let calls = Arc::new(AtomicUsize::new(0));
    let base = answering("jev-1.13", 0.99, &calls);
    let mut other = platt(&spam(), "jev-1.13");
    if let Some(q) = other.questions.get_mut("spam") {
        q.map = toolnexus::assess::QuestionMap::Noul {
            map: toolnexus::assess::calibrate::NoulMap::Platt(
                toolnexus::assess::calibrate::Platt { a: -0.2, b: 0.1 },
            ),
        };
    }
    let one = toolnexus::assess::calibrating(base.clone(), platt(&spam(), "jev-1.13")).unwrap();
    let two = toolnexus::assess::calibrating(base, other).unwrap();
    let (a, b) = kept_apart(one, two).await;
    assert_ne!(a.0, b.0);
}

#[tokio::test]
async fn a_fallback_chain_and_its_primary_alone_never_answer_for_each_other() {
    let calls = Arc::new(AtomicUsize::new(0));
    // Down, answering as "jev-1.13": the chain answers with the backup.
    let down = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "jev-1.13".into(),
        evaluate: Some(Arc::new(|_ctx, _state, _qs| {
            Box::pin(async { Err("unreachable".to_string()) })
        })),
        ..Default::default()
    })
    .unwrap();
    let chain = toolnexus::compose::Fallback::new(down)
        .also_on(ErrorKind::Custom)
        .then(answering("backup-7", 0.9, &calls))
        .build();
    let primary = answering("jev-1.13", 0.1, &calls);
    let (c, p) = kept_apart(chain.clone(), primary.clone()).await;
    assert_eq!((c.0, p.0), (0.9, 0.1));
    // Two chains with other backups are two stacks too.
    let other = toolnexus::compose::Fallback::new(primary.clone())
        .then(answering("backup-8", 0.5, &calls))
        .build();
    let same_primary = toolnexus::compose::Fallback::new(primary)
        .then(answering("backup-7", 0.9, &calls))
        .build();
    assert_ne!(other.fingerprint(), same_primary.fingerprint());
}

/// A tape whose one recording (call `c`, state `"hi"`, model `m`) answers `p`.
fn tape_answering(p: f64) -> toolnexus::judge::Tape {
    use toolnexus::judge::{Tape, TapeEntry, TapeOutcome};
    let tape = Tape::new();
    tape.record(TapeEntry {
        call_name: "c".into(),
        model: "m".into(),
        state: json!("hi"),
        questions: spam(),
        outcome: TapeOutcome::Decision(
            Decision::from_value(
                &json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": p}}}),
            )
            .unwrap(),
        ),
        request_id: None,
    });
    tape
}

#[tokio::test]
async fn two_tapes_never_answer_for_each_other() {
    let (a, b) = kept_apart(
        tape_answering(0.2).replayer(),
        tape_answering(0.8).replayer(),
    )
    .await;
    assert_eq!((a.0, b.0), (0.2, 0.8));
    // The same contents are the same stack; another match mode is not.
    let tape = tape_answering(0.2);
    assert_eq!(
        tape.replayer().fingerprint(),
        tape_answering(0.2).replayer().fingerprint()
    );
    assert_ne!(
        tape.replayer().fingerprint(),
        tape.replayer_with(toolnexus::judge::TapeMatch::Questions)
            .fingerprint()
    );
}

#[tokio::test]
async fn two_static_classifiers_with_other_recordings_never_answer_for_each_other() {
    let recorded = |p: f64| {
        create_classifier(ClassifierOptions {
            style: ClassifierStyle::Static,
            model: "m".into(),
            decisions: vec![RecordedDecision {
                state: json!("hi"),
                questions: spam(),
                response: format!(
                    r#"{{"model":"m","answers":{{"spam":{{"type":"noul","noul":{p}}}}}}}"#
                )
                .into_bytes(),
            }],
            ..Default::default()
        })
        .unwrap()
    };
    let (a, b) = kept_apart(recorded(0.3), recorded(0.7)).await;
    assert_eq!((a.0, b.0), (0.3, 0.7));
}

#[tokio::test]
async fn system_one_request_params_are_part_of_the_key() {
    let server = Server::start([
        Reply::json(200, SPAM_ANSWER),
        Reply::json(
            200,
            r#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.12}}}"#,
        ),
    ])
    .await;
    let tuned = create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: "jev-1.13".into(),
        retries: -1,
        request_params: serde_json::Map::from_iter([("temperature".to_string(), json!(0))]),
        ..Default::default()
    })
    .unwrap();
    let (a, b) = kept_apart(system_one(&server), tuned).await;
    assert_eq!((a.0, b.0), (0.91, 0.12));
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn llm_engine_parameters_are_part_of_the_key() {
    let answer = |p: f64| {
        Reply::openai_chat(&format!(
            r#"{{"answers":{{"spam":{{"type":"noul","noul":{p}}}}}}}"#
        ))
    };
    let server = Server::start([answer(0.4), answer(0.6)]).await;
    let llm = |temperature: f64| {
        let client = toolnexus::client::create_client(toolnexus::client::ClientOptions {
            base_url: server.base_url(),
            model: "chat-1".into(),
            temperature: Some(temperature),
            retries: -1,
            ..Default::default()
        })
        .unwrap();
        create_classifier(ClassifierOptions {
            style: ClassifierStyle::Llm,
            client: Some(client),
            ..Default::default()
        })
        .unwrap()
    };
    let (a, b) = kept_apart(llm(0.0), llm(0.7)).await;
    assert_eq!((a.0, b.0), (0.4, 0.6));
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn a_part_a_library_user_adds_keeps_two_stacks_apart() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (a, b) = kept_apart(
        answering("rules", 0.1, &calls).with_fingerprint_part("rules", "v1"),
        answering("rules", 0.9, &calls).with_fingerprint_part("rules", "v2"),
    )
    .await;
    assert_eq!((a.0, b.0), (0.1, 0.9));
}

/// A plain System One stack at a fixed endpoint; nothing listens there.
fn plain() -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: "http://127.0.0.1:9/v1".into(),
        model: "jev-1.13".into(),
        retries: -1,
        timeout_ms: 2_000,
        ..Default::default()
    })
    .unwrap()
}

/// The key every version of toolnexus gave `{"n": 1}` asking `spam` of
/// `jev-1.13` at `http://127.0.0.1:9/v1/systemone`.
const PLAIN_KEY: &str = "422dc4c1ad42384b4a42782e0079e39b44bcefe79542f81b6ee323d8878e351f";

#[tokio::test]
async fn a_plain_stack_keeps_its_key_and_old_entries_still_answer_it() {
    use toolnexus::cache::{cache_key, cache_key_for};
    let request = EvalRequest::new(json!({"n": 1}), spam());
    let judge = plain();
    let key = cache_key_for(judge.fingerprint(), judge.model(), &request);
    assert_eq!(key.to_hex(), PLAIN_KEY);
    assert_eq!(
        key,
        cache_key("http://127.0.0.1:9/v1/systemone", "jev-1.13", &request)
    );
    // Layers that change no answer keep it: pricing, a budget, single flight.
    use toolnexus::cost::budget::{Budget, BudgetOptions, Spend, budgeted};
    let budget = Budget::new(BudgetOptions::default());
    let layered = toolnexus::cost::pricing(
        toolnexus::cache::single_flight(budgeted(judge.clone(), budget, |_: &EvalRequest| {
            Spend::tokens(1)
        })),
        toolnexus::cost::Pricing::Local,
    );
    assert_eq!(layered.fingerprint(), judge.fingerprint());
    // An entry stored before is served: nothing is sent (nothing listens).
    let store = Arc::new(MemoryCache::new());
    let stored = json!({"model": "jev-1.13", "answers": {"spam": {"type": "noul", "noul": 0.42}}});
    store
        .put(
            &key,
            &Cached {
                decision: stored,
                model: "jev-1.13".into(),
                stored_at: MemoryCache::now(),
                requested: Some("jev-1.13".into()),
            },
        )
        .unwrap();
    let e = caching(layered, store)
        .evaluate_request(EvalContext::new(), request)
        .await
        .unwrap();
    assert!(e.cache_hit);
    assert_eq!(e.decision.noul("spam").unwrap().noul, 0.42);
}

#[tokio::test]
async fn an_entry_any_wrapper_stored_before_is_not_served_to_a_stack_with_layers() {
    use toolnexus::cache::cache_key;
    // Before fingerprints every wrapper keyed as "custom": such an entry may
    // have been written by any stack, so a calibrated one is not served it.
    let request = EvalRequest::new(json!("hi"), spam());
    let store = Arc::new(MemoryCache::new());
    store
        .put(
            &cache_key("custom", "jev-1.13", &request),
            &Cached {
                decision: json!({"model": "jev-1.13", "answers": {"spam": {"type": "noul", "noul": 0.5}}, "calibrated": true}),
                model: "jev-1.13".into(),
                stored_at: MemoryCache::now(),
                requested: Some("jev-1.13".into()),
            },
        )
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let calibrated = toolnexus::assess::calibrating(
        answering("jev-1.13", 0.99, &calls),
        platt(&spam(), "jev-1.13"),
    )
    .unwrap();
    let (p, hit) = ask(&caching(calibrated, store)).await;
    assert!(!hit && p < 0.99 && p != 0.5, "{p}");
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
