//! Pinning (SPEC §20) through the cache: a loopback System One upstream whose
//! `jev-latest` moves from jev-1.13 to jev-1.14 mid-run. The cache stops
//! serving the old answer once the move is seen, the alias TTL forces a
//! re-check, a pinned model is cached as before, entries keep the model that
//! answered and the one asked for, and a cache file written before pinning
//! (schema version 1) still opens.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;
use toolnexus::cache::{
    Cache, CacheKey, CachingOptions, MemoryCache, SqliteCache, SqliteOptions, cache_key, caching,
    caching_with,
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

/// An upstream answering as jev-1.13 until `moved` is set, then as jev-1.14
/// (with another probability, so a stale answer is told apart).
async fn moving_upstream(moved: Arc<AtomicBool>) -> Server {
    Server::builder()
        .handler(move |_, _| {
            let (model, p) = if moved.load(Ordering::SeqCst) {
                ("jev-1.14", 0.2)
            } else {
                ("jev-1.13", 0.9)
            };
            Reply::json(
                200,
                format!(
                    r#"{{"model":"{model}","answers":{{"spam":{{"type":"noul","noul":{p}}}}}}}"#
                ),
            )
        })
        .start()
        .await
}

fn system_one(server: &Server, model: &str) -> Classifier {
    create_classifier(ClassifierOptions {
        base_url: server.base_url(),
        model: model.into(),
        retries: -1,
        ..Default::default()
    })
    .unwrap()
}

async fn ask(judge: &Classifier, state: &str) -> Evaluated {
    judge
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!(state), spam()))
        .await
        .unwrap()
}

#[tokio::test]
async fn the_cache_stops_serving_an_alias_s_old_answer_once_it_answers_as_another_model() {
    let moved = Arc::new(AtomicBool::new(false));
    let server = moving_upstream(moved.clone()).await;
    let judge = caching(
        system_one(&server, "jev-latest"),
        Arc::new(MemoryCache::new()),
    );

    let first = ask(&judge, "a").await;
    assert_eq!(first.decision.model, "jev-1.13");
    assert!(ask(&judge, "a").await.cache_hit, "the alias has not moved");
    assert_eq!(server.count(), 1);

    moved.store(true, Ordering::SeqCst);
    // Before any live answer shows the move, the hour-long TTL trusts the
    // last resolution; a new state is sent and sees it.
    let b = ask(&judge, "b").await;
    assert_eq!(
        (b.cache_hit, b.decision.model.as_str()),
        (false, "jev-1.14")
    );

    let again = ask(&judge, "a").await;
    assert!(
        !again.cache_hit,
        "jev-1.13's answer is not served after the move"
    );
    assert_eq!(again.decision.model, "jev-1.14");
    assert_eq!(again.decision.noul("spam").unwrap().noul, 0.2);
    assert_eq!(server.count(), 3);
    // The new answer is cached under the new resolution.
    assert!(ask(&judge, "a").await.cache_hit);
    assert_eq!(server.count(), 3);
}

#[tokio::test]
async fn the_alias_ttl_sends_a_request_instead_of_a_hit_and_its_answer_re_checks_the_alias() {
    let moved = Arc::new(AtomicBool::new(false));
    let server = moving_upstream(moved.clone()).await;
    let cache = Arc::new(MemoryCache::new());
    let judge = caching_with(
        system_one(&server, "jev-latest"),
        cache.clone(),
        CachingOptions {
            alias_ttl: Duration::from_millis(200),
        },
    );
    ask(&judge, "a").await;
    assert!(ask(&judge, "a").await.cache_hit, "within the TTL: a hit");
    moved.store(true, Ordering::SeqCst);
    // The resolution ages past the TTL: the next request under the alias is
    // sent, not served, and its answer shows the move.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let rechecked = ask(&judge, "a").await;
    assert!(!rechecked.cache_hit, "past the TTL: re-checked live");
    assert_eq!(rechecked.decision.model, "jev-1.14");
    assert_eq!(server.count(), 2);
    let r = cache
        .resolution(&format!("{}/systemone", server.base_url()), "jev-latest")
        .unwrap();
    assert_eq!(r.map(|r| r.model), Some("jev-1.14".to_string()));

    // A zero TTL sends every request under the alias.
    let every = caching_with(
        system_one(&server, "jev-latest"),
        Arc::new(MemoryCache::new()),
        CachingOptions {
            alias_ttl: Duration::ZERO,
        },
    );
    for _ in 0..3 {
        assert!(!ask(&every, "z").await.cache_hit);
    }
    assert_eq!(server.count(), 5);
}

#[tokio::test]
async fn a_pinned_model_is_served_whatever_the_ttl_and_entries_name_both_models() {
    let server = moving_upstream(Arc::new(AtomicBool::new(false))).await;
    let cache = Arc::new(MemoryCache::new());
    let judge = caching_with(
        system_one(&server, "jev-1.13"),
        cache.clone(),
        CachingOptions {
            alias_ttl: Duration::ZERO,
        },
    );
    ask(&judge, "a").await;
    assert!(ask(&judge, "a").await.cache_hit);
    assert_eq!(server.count(), 1);

    let alias = caching(system_one(&server, "jev-latest"), cache.clone());
    ask(&alias, "a").await;
    let endpoint = format!("{}/systemone", server.base_url());
    let request = EvalRequest::new(json!("a"), spam());
    let pinned = cache
        .get(&cache_key(&endpoint, "jev-1.13", &request))
        .unwrap()
        .unwrap();
    assert_eq!(
        (pinned.model.as_str(), pinned.requested.as_deref()),
        ("jev-1.13", Some("jev-1.13"))
    );
    let floating = cache
        .get(&cache_key(&endpoint, "jev-latest", &request))
        .unwrap()
        .unwrap();
    assert_eq!(
        (floating.model.as_str(), floating.requested.as_deref()),
        ("jev-1.13", Some("jev-latest")),
        "the entry keeps the alias asked for and the model that answered"
    );
}

#[tokio::test]
async fn a_move_seen_by_one_process_stops_the_other_serving_from_the_shared_file() {
    let moved = Arc::new(AtomicBool::new(false));
    let server = moving_upstream(moved.clone()).await;
    let dir = Dir::new("pinning-shared");
    let open = || Arc::new(SqliteCache::open(dir.join("c.db"), SqliteOptions::default()).unwrap());
    let one = caching(system_one(&server, "jev-latest"), open());
    let two = caching(system_one(&server, "jev-latest"), open());
    ask(&one, "a").await;
    assert!(
        ask(&two, "a").await.cache_hit,
        "the resolution is in the file"
    );
    moved.store(true, Ordering::SeqCst);
    assert_eq!(ask(&one, "b").await.decision.model, "jev-1.14");
    let a = ask(&two, "a").await;
    assert!(!a.cache_hit, "the other handle read the move from the file");
    assert_eq!(a.decision.model, "jev-1.14");
    // And a handle opened afresh (a new process) too.
    let three = caching(system_one(&server, "jev-latest"), open());
    assert_eq!(ask(&three, "a").await.decision.model, "jev-1.14");
    assert!(ask(&three, "a").await.cache_hit);
}

/// A cache file as the build before pinning wrote it: schema version 1, no
/// `requested` column, no `aliases` table.
fn version_1_file(path: &std::path::Path, entries: &[(CacheKey, &str, &str)]) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.execute_batch(
        "PRAGMA journal_mode = WAL;
         CREATE TABLE entries (
             key BLOB PRIMARY KEY NOT NULL,
             decision TEXT NOT NULL,
             model TEXT NOT NULL,
             stored_at INTEGER NOT NULL
         ) WITHOUT ROWID;
         CREATE INDEX entries_stored_at ON entries (stored_at);
         PRAGMA application_id = 1953396835;
         PRAGMA user_version = 1;",
    )
    .unwrap();
    for (key, model, decision) in entries {
        c.execute(
            "INSERT INTO entries (key, decision, model, stored_at) VALUES (?1, ?2, ?3, ?4)",
            rusqlite::params![
                &key.0[..],
                decision,
                model,
                toolnexus::cache::MemoryCache::now() as i64 - 60
            ],
        )
        .unwrap();
    }
}

#[tokio::test]
async fn a_cache_file_from_before_pinning_opens_and_its_alias_entries_wait_for_a_live_check() {
    let server = moving_upstream(Arc::new(AtomicBool::new(false))).await;
    let endpoint = format!("{}/systemone", server.base_url());
    let dir = Dir::new("pinning-v1");
    let path = dir.join("old.db");
    let key_of = |model: &str, state: &str| {
        cache_key(&endpoint, model, &EvalRequest::new(json!(state), spam()))
    };
    let old = |model: &str, p: f64| {
        format!(r#"{{"model":"{model}","answers":{{"spam":{{"type":"noul","noul":{p}}}}}}}"#)
    };
    let (pinned_a, alias_a, alias_b) = (
        old("jev-1.13", 0.51),
        old("jev-1.13", 0.52),
        old("jev-1.12", 0.53),
    );
    version_1_file(
        &path,
        &[
            (key_of("jev-1.13", "a"), "jev-1.13", &pinned_a),
            (key_of("jev-latest", "a"), "jev-1.13", &alias_a),
            (key_of("jev-latest", "b"), "jev-1.12", &alias_b),
        ],
    );

    let cache = Arc::new(SqliteCache::open(&path, SqliteOptions::default()).unwrap());
    let untagged = cache.get(&key_of("jev-1.13", "a")).unwrap().unwrap();
    assert_eq!(
        (untagged.model.as_str(), untagged.requested),
        ("jev-1.13", None),
        "an entry from before pinning reads with no request recorded"
    );
    let c = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 2, "migrated in place");
    drop(c);

    // A pinned model's old entries are served as before.
    let pinned = caching(system_one(&server, "jev-1.13"), cache.clone());
    let hit = ask(&pinned, "a").await;
    assert!(hit.cache_hit);
    assert_eq!(hit.decision.noul("spam").unwrap().noul, 0.51);
    assert_eq!(server.count(), 0);

    // Under the alias nothing is known of its resolution: the first request
    // is sent; once the alias is seen as jev-1.13, jev-1.13's old entry is
    // served and jev-1.12's is not.
    let alias = caching(system_one(&server, "jev-latest"), cache.clone());
    let first = ask(&alias, "c").await;
    assert!(!first.cache_hit);
    assert_eq!(server.count(), 1);
    let a = ask(&alias, "a").await;
    assert!(
        a.cache_hit,
        "jev-1.13 recorded it, and the alias answers as jev-1.13"
    );
    assert_eq!(a.decision.noul("spam").unwrap().noul, 0.52);
    let b = ask(&alias, "b").await;
    assert!(!b.cache_hit, "jev-1.12 recorded it: not served");
    assert_eq!(b.decision.model, "jev-1.13");
    assert_eq!(server.count(), 2);

    // The migrated file opens again, and exports the new column.
    drop((pinned, alias, cache));
    let again = SqliteCache::open(&path, SqliteOptions::default()).unwrap();
    let mut out = Vec::new();
    assert_eq!(again.export(&mut out).unwrap(), 4);
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains(r#""requested":null"#), "{text}");
    assert!(text.contains(r#""requested":"jev-latest""#), "{text}");
}

#[test]
fn a_newer_schema_is_still_refused() {
    let dir = Dir::new("pinning-v3");
    let path = dir.join("new.db");
    let c = rusqlite::Connection::open(&path).unwrap();
    c.execute_batch(
        "CREATE TABLE entries (key BLOB PRIMARY KEY); PRAGMA application_id = 1953396835; PRAGMA user_version = 3;",
    )
    .unwrap();
    drop(c);
    let e = SqliteCache::open(&path, SqliteOptions::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("cache schema version 3 is not supported (this build reads version 2)"),
        "{e}"
    );
}

/// A store of entries only: the trait's defaults keep no resolutions, or
/// (`failing`) resolutions it cannot update, stuck at what was first seen.
struct EntriesOnly {
    entries: MemoryCache,
    stuck: Option<toolnexus::pinning::Resolution>,
}

impl Cache for EntriesOnly {
    fn get(
        &self,
        key: &CacheKey,
    ) -> Result<Option<toolnexus::cache::Cached>, toolnexus::cache::CacheError> {
        self.entries.get(key)
    }

    fn put(
        &self,
        key: &CacheKey,
        entry: &toolnexus::cache::Cached,
    ) -> Result<(), toolnexus::cache::CacheError> {
        self.entries.put(key, entry)
    }

    fn resolution(
        &self,
        _endpoint: &str,
        _alias: &str,
    ) -> Result<Option<toolnexus::pinning::Resolution>, toolnexus::cache::CacheError> {
        Ok(self.stuck.clone())
    }

    fn observe(
        &self,
        _endpoint: &str,
        _alias: &str,
        _model: &str,
        _now_ms: u64,
    ) -> Result<Option<toolnexus::cache::Observed>, toolnexus::cache::CacheError> {
        match self.stuck {
            Some(_) => Err(toolnexus::cache::CacheError::new(
                toolnexus::cache::CacheErrorKind::Io,
                "disk full",
            )),
            None => Ok(None),
        }
    }
}

#[tokio::test]
async fn a_store_that_keeps_no_resolutions_or_cannot_write_them_still_never_serves_a_moved_alias() {
    for stuck in [false, true] {
        let moved = Arc::new(AtomicBool::new(false));
        let server = moving_upstream(moved.clone()).await;
        // With `stuck`, the store's record of the alias stays at jev-1.13,
        // fresh for an hour: every write of it fails.
        let in_an_hour = toolnexus::cache::MemoryCache::now() * 1000 + 3_600_000;
        let store = Arc::new(EntriesOnly {
            entries: MemoryCache::new(),
            stuck: stuck
                .then(|| toolnexus::pinning::Resolution::observe(None, "jev-1.13", in_an_hour)),
        });
        let judge = caching(system_one(&server, "jev-latest"), store);
        ask(&judge, "a").await;
        assert!(ask(&judge, "a").await.cache_hit, "stuck {stuck}");
        moved.store(true, Ordering::SeqCst);
        assert_eq!(ask(&judge, "b").await.decision.model, "jev-1.14");
        let a = ask(&judge, "a").await;
        assert!(
            !a.cache_hit,
            "stuck {stuck}: jev-1.13's answer is not served"
        );
        assert_eq!(a.decision.model, "jev-1.14");
    }
}
