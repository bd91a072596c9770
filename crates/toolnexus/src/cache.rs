//! A persistent decision cache (SPEC §12): a rerun pays nothing for what it
//! has already asked.
//!
//! - [`Cache`] is the store's trait: `get` and `put` of a [`Cached`] wire
//!   decision under a [`CacheKey`]. [`MemoryCache`] keeps entries in the
//!   process; `SqliteCache` (feature `sqlite`) keeps them in one SQLite file
//!   (bundled SQLite, WAL) that many processes may share.
//! - [`cache_key`] is SHA-256 over the endpoint, the model, the canonical
//!   request (questions), the canonical state, the extra wire fields and the
//!   assets' bytes: two requests share a key only when a backend would see the
//!   same thing.
//! - [`single_flight`] sends concurrent identical requests once and keeps
//!   nothing; [`caching`] wraps a classifier: a hit returns the stored decision with
//!   [`Evaluated::cache_hit`] set (metrics count it as no spend); a miss asks
//!   the classifier once however many identical requests wait on it (single
//!   flight), and stores the decision. Errors are never stored. A store that
//!   fails at run time (disk full, locked too long) is logged and bypassed: the
//!   evaluation still happens.
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolnexus::cache::{MemoryCache, caching};
//! use toolnexus::classifier::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ClassifierError> {
//! let qs = Questions::from([("spam".to_string(), NoulQuestion::default().into())]);
//! let recorded = create_classifier(ClassifierOptions {
//!     style: ClassifierStyle::Static,
//!     decisions: vec![RecordedDecision {
//!         state: json!("hi"),
//!         questions: qs.clone(),
//!         response: br#"{"model":"jev-1.13","answers":{"spam":{"type":"noul","noul":0.02}}}"#.to_vec(),
//!     }],
//!     ..Default::default()
//! })?;
//! let cache = Arc::new(MemoryCache::new());
//! let judge = caching(recorded, cache.clone());
//! let request = EvalRequest::new(json!("hi"), qs.clone());
//! let first = judge.evaluate_request(EvalContext::new(), request.clone()).await?;
//! let again = judge.evaluate_request(EvalContext::new(), request).await?;
//! assert!(!first.cache_hit && again.cache_hit);
//! assert_eq!(first.decision, again.decision);
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::FutureExt as _;
use futures::future::{BoxFuture as SharedBox, Shared};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical::canonical_json;
use crate::classifier::{
    Classifier, ClassifierError, Decision, EvalContext, EvalRequest, Evaluated, Evaluator,
    canonical_request,
};
use crate::context::BoxFuture;

#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
pub use sqlite::{CacheStats, SqliteCache, SqliteOptions};

/// A cache key: SHA-256 of everything a backend would see (see [`cache_key`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CacheKey(pub [u8; 32]);

impl CacheKey {
    /// The key as 64 lower-case hex digits.
    ///
    /// ```
    /// let k = toolnexus::cache::CacheKey([0xab; 32]);
    /// assert_eq!(&k.to_hex()[..4], "abab");
    /// assert_eq!(k.to_hex().len(), 64);
    /// ```
    pub fn to_hex(&self) -> String {
        use fmt::Write as _;
        let mut s = String::with_capacity(64);
        for b in self.0 {
            let _ = write!(s, "{b:02x}");
        }
        s
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({})", self.to_hex())
    }
}

/// The key of `request` sent to `endpoint` (`model` when the request names
/// none): SHA-256 over a format tag, the endpoint, the model, the canonical
/// request, the canonical state, the canonical extra fields and each asset's
/// name, format and bytes, every part length-prefixed so no two requests
/// collide by concatenation.
///
/// ```
/// use serde_json::json;
/// use toolnexus::cache::cache_key;
/// use toolnexus::classifier::{EvalRequest, Questions};
/// let a = EvalRequest::new(json!({"b": 1, "a": 2}), Questions::new());
/// let b = EvalRequest::new(json!({"a": 2, "b": 1}), Questions::new());
/// // Key order does not matter; the endpoint and the model do.
/// assert_eq!(cache_key("http://x/v1/systemone", "m", &a), cache_key("http://x/v1/systemone", "m", &b));
/// assert_ne!(cache_key("http://x/v1/systemone", "m", &a), cache_key("http://y/v1/systemone", "m", &a));
/// assert_ne!(cache_key("e", "m", &a), cache_key("e", "n", &a));
/// ```
pub fn cache_key(endpoint: &str, model: &str, request: &EvalRequest) -> CacheKey {
    let model = request.model.as_deref().unwrap_or(model);
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(b"toolnexus.cache/1");
    part(endpoint.as_bytes());
    part(model.as_bytes());
    part(canonical_request(model, &request.questions).as_bytes());
    part(canonical_json(&request.state).as_bytes());
    part(canonical_json(&Value::Object(request.extra.clone())).as_bytes());
    for (name, asset) in &request.assets {
        part(name.as_bytes());
        part(asset.format.as_str().as_bytes());
        part(&asset.data);
    }
    CacheKey(h.finalize().into())
}

/// A stored decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    /// The decision's wire JSON (`Decision::to_value`).
    pub decision: Value,
    /// The model that answered.
    pub model: String,
    /// When it was stored, in seconds since the Unix epoch.
    pub stored_at: u64,
}

impl Cached {
    /// An entry for `decision`, stored now.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use toolnexus::classifier::{ClassifierUsage, Decision};
    /// # let d = Decision { model: "m".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// let c = toolnexus::cache::Cached::of(&d);
    /// assert_eq!(c.model, "m");
    /// assert!(c.stored_at > 1_700_000_000);
    /// ```
    pub fn of(decision: &Decision) -> Cached {
        Cached {
            decision: decision.to_value(),
            model: decision.model.clone(),
            stored_at: now_secs(),
        }
    }
}

/// Seconds since the Unix epoch, now.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// What went wrong with a cache store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheErrorKind {
    /// The file could not be opened or created.
    Open,
    /// The file is not a SQLite database, or is damaged.
    Corrupt,
    /// A SQLite database, but not a toolnexus cache (or a newer version of one).
    Foreign,
    /// A read or write failed (busy past the timeout, disk full, …).
    Io,
}

/// A cache store error: its kind and a message naming the file.
///
/// ```
/// use toolnexus::cache::{CacheError, CacheErrorKind};
/// let e = CacheError::new(CacheErrorKind::Io, "c.db: disk full");
/// assert_eq!(e.to_string(), "cache: c.db: disk full");
/// assert_eq!(e.kind(), CacheErrorKind::Io);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheError {
    kind: CacheErrorKind,
    message: String,
}

impl CacheError {
    /// An error of `kind` with `message` (shown after `cache: `).
    pub fn new(kind: CacheErrorKind, message: impl Into<String>) -> CacheError {
        CacheError {
            kind,
            message: message.into(),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> CacheErrorKind {
        self.kind
    }

    /// The message without the `cache: ` prefix.
    ///
    /// ```
    /// let e = toolnexus::cache::CacheError::new(toolnexus::cache::CacheErrorKind::Open, "x");
    /// assert_eq!(e.message(), "x");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for CacheError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cache: {}", self.message)
    }
}

impl std::error::Error for CacheError {}

/// A decision store. Implementations must be safe to call from many tasks.
/// [`caching`] calls `get` on the calling task, so it must be quick (a read
/// that never waits on a writer), and `put` on the blocking pool, where it may
/// wait for a lock.
///
/// ```
/// use toolnexus::cache::{Cache, CacheKey, Cached, MemoryCache};
/// let cache = MemoryCache::new();
/// let entry = Cached { decision: serde_json::json!({}), model: "m".into(), stored_at: 1 };
/// cache.put(&CacheKey([1; 32]), &entry)?;
/// assert_eq!(cache.get(&CacheKey([1; 32]))?, Some(entry));
/// assert_eq!(cache.get(&CacheKey([2; 32]))?, None);
/// # Ok::<(), toolnexus::cache::CacheError>(())
/// ```
pub trait Cache: Send + Sync + 'static {
    /// The entry under `key`, if there is a live one.
    fn get(&self, key: &CacheKey) -> Result<Option<Cached>, CacheError>;
    /// Stores `entry` under `key`, replacing what was there.
    fn put(&self, key: &CacheKey, entry: &Cached) -> Result<(), CacheError>;
}

/// An in-process cache: entries live as long as the value, with an optional
/// time to live and entry limit (the oldest stored go first).
///
/// ```
/// use std::time::Duration;
/// use toolnexus::cache::{Cache, CacheKey, Cached, MemoryCache};
/// let cache = MemoryCache::with_limits(Some(Duration::from_secs(60)), Some(1));
/// let entry = |t| Cached { decision: serde_json::json!({}), model: "m".into(), stored_at: t };
/// let now = toolnexus::cache::MemoryCache::now();
/// cache.put(&CacheKey([1; 32]), &entry(now))?;
/// cache.put(&CacheKey([2; 32]), &entry(now))?;
/// assert_eq!(cache.len(), 1, "one entry at most");
/// cache.put(&CacheKey([3; 32]), &entry(now - 120))?;
/// assert_eq!(cache.get(&CacheKey([3; 32]))?, None, "stored two minutes ago: expired");
/// # Ok::<(), toolnexus::cache::CacheError>(())
/// ```
#[derive(Debug, Default)]
pub struct MemoryCache {
    entries: Mutex<HashMap<CacheKey, Cached>>,
    ttl: Option<Duration>,
    max_entries: Option<usize>,
}

impl MemoryCache {
    /// An unbounded cache whose entries never expire.
    pub fn new() -> MemoryCache {
        MemoryCache::default()
    }

    /// A cache with a time to live and an entry limit.
    pub fn with_limits(ttl: Option<Duration>, max_entries: Option<usize>) -> MemoryCache {
        MemoryCache {
            ttl,
            max_entries,
            ..MemoryCache::default()
        }
    }

    /// Seconds since the Unix epoch, the clock entries are stamped with.
    ///
    /// ```
    /// assert!(toolnexus::cache::MemoryCache::now() > 1_700_000_000);
    /// ```
    pub fn now() -> u64 {
        now_secs()
    }

    /// Entries held (expired ones included until they are read).
    ///
    /// ```
    /// assert_eq!(toolnexus::cache::MemoryCache::new().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.lock().map_or(0, |e| e.len())
    }

    /// Whether it holds nothing.
    ///
    /// ```
    /// assert!(toolnexus::cache::MemoryCache::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Whether an entry stored at `stored_at` has outlived `ttl`.
pub(crate) fn expired(stored_at: u64, ttl: Option<Duration>, now: u64) -> bool {
    ttl.is_some_and(|ttl| stored_at.saturating_add(ttl.as_secs()) < now)
}

impl Cache for MemoryCache {
    fn get(&self, key: &CacheKey) -> Result<Option<Cached>, CacheError> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| CacheError::new(CacheErrorKind::Io, "memory cache poisoned"))?;
        match entries.get(key) {
            Some(e) if expired(e.stored_at, self.ttl, now_secs()) => {
                entries.remove(key);
                Ok(None)
            }
            other => Ok(other.cloned()),
        }
    }

    fn put(&self, key: &CacheKey, entry: &Cached) -> Result<(), CacheError> {
        let mut entries = self
            .entries
            .lock()
            .map_err(|_| CacheError::new(CacheErrorKind::Io, "memory cache poisoned"))?;
        entries.insert(*key, entry.clone());
        if let Some(max) = self.max_entries {
            while entries.len() > max {
                let oldest = entries
                    .iter()
                    .filter(|(k, _)| *k != key)
                    .min_by_key(|(k, e)| (e.stored_at, **k))
                    .map(|(k, _)| *k);
                match oldest {
                    Some(k) => entries.remove(&k),
                    None => break,
                };
            }
        }
        Ok(())
    }
}

/// One call shared by every identical request waiting on it.
type Flight = Shared<SharedBox<'static, Result<Evaluated, Arc<ClassifierError>>>>;

/// What [`caching`] runs.
struct Caching {
    inner: Classifier,
    cache: Arc<dyn Cache>,
    endpoint: String,
    flights: Arc<Mutex<HashMap<CacheKey, Flight>>>,
}

impl Caching {
    /// Reads on the calling task: a store's `get` is quick (SQLite readers in
    /// WAL mode never wait for a writer), and a hop to the blocking pool would
    /// cost more than the read.
    fn lookup(cache: &dyn Cache, key: CacheKey) -> Option<Decision> {
        match cache.get(&key) {
            Ok(Some(c)) => match Decision::from_value(&c.decision) {
                Ok(d) => Some(d),
                Err(e) => {
                    tracing::warn!(target: "toolnexus::cache", key = %key.to_hex(), "cache entry does not decode ({e}); asking the backend");
                    None
                }
            },
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(target: "toolnexus::cache", "{e}; asking the backend");
                None
            }
        }
    }

    async fn store(cache: Arc<dyn Cache>, key: CacheKey, decision: &Decision) {
        let entry = Cached::of(decision);
        let stored = tokio::task::spawn_blocking(move || cache.put(&key, &entry))
            .await
            .unwrap_or_else(|e| Err(CacheError::new(CacheErrorKind::Io, e.to_string())));
        if let Err(e) = stored {
            tracing::warn!(target: "toolnexus::cache", "{e}; the decision is not stored");
        }
    }
}

impl Evaluator for Caching {
    fn call(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Decision, ClassifierError>> {
        let fut = self.call_full(ctx, request);
        Box::pin(async move { fut.await.map(|e| e.decision) })
    }

    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let key = cache_key(&self.endpoint, self.inner.model(), &request);
        let (inner, cache, flights) = (
            self.inner.clone(),
            Arc::clone(&self.cache),
            Arc::clone(&self.flights),
        );
        Box::pin(async move {
            // One flight per key covers the lookup, the call and the store, and
            // leaves the table only once the store is done: a request arriving
            // later finds either the flight or the stored decision.
            let (flight, leader) = {
                let mut f = flights
                    .lock()
                    .map_err(|_| ClassifierError::custom("cache: single-flight table poisoned"))?;
                match f.get(&key) {
                    Some(flight) => (flight.clone(), false),
                    None => {
                        let flights = Arc::clone(&flights);
                        let call: SharedBox<'static, _> = Box::pin(async move {
                            let result = match Caching::lookup(cache.as_ref(), key) {
                                Some(d) => Ok(Evaluated::new(d).with_cache_hit(true)),
                                None => {
                                    let result = inner.evaluate_request(ctx, request).await;
                                    if let Ok(e) = &result {
                                        Caching::store(cache, key, &e.decision).await;
                                    }
                                    result
                                }
                            };
                            if let Ok(mut f) = flights.lock() {
                                f.remove(&key);
                            }
                            result.map_err(Arc::new)
                        });
                        let flight = call.shared();
                        f.insert(key, flight.clone());
                        (flight, true)
                    }
                }
            };
            match flight.await {
                Ok(e) if leader => Ok(e),
                // A waiter got the leader's answer without sending anything.
                Ok(e) => Ok(e.with_cache_hit(true)),
                Err(e) => Err(match Arc::try_unwrap(e) {
                    Ok(e) => e,
                    Err(shared) => shared.duplicate(),
                }),
            }
        })
    }
}

/// `inner` behind `cache`: hits answer from the store, concurrent identical
/// misses send one request, successes are stored and errors never are.
///
/// Keys come from [`cache_key`] with `inner`'s endpoint (its style's name when
/// it has none, e.g. `static`) and model. A waiter that shared another call's
/// answer is reported as a cache hit too: it sent nothing.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use serde_json::json;
/// use toolnexus::cache::{MemoryCache, caching};
/// use toolnexus::classifier::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counted = calls.clone();
/// let slow = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
///         counted.fetch_add(1, Ordering::SeqCst);
///         Box::pin(async {
///             tokio::task::yield_now().await;
///             Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///                 .map_err(|e| e.to_string())
///         })
///     })),
///     ..Default::default()
/// })?;
/// let judge = caching(slow, Arc::new(MemoryCache::new()));
/// let qs = Questions::from([("spam".to_string(), NoulQuestion::default().into())]);
/// let all = futures::future::join_all((0..50).map(|_| judge.evaluate(json!("same"), &qs))).await;
/// assert!(all.iter().all(|d| d.is_ok()));
/// assert_eq!(calls.load(Ordering::SeqCst), 1, "50 identical requests, one call");
/// # Ok(())
/// # }
/// ```
pub fn caching(inner: Classifier, cache: Arc<dyn Cache>) -> Classifier {
    let endpoint = inner
        .endpoint()
        .map_or_else(|| inner.style().as_str().to_string(), str::to_string);
    Classifier::from_evaluator(
        inner.model().to_string(),
        Caching {
            inner,
            cache,
            endpoint,
            flights: Arc::new(Mutex::new(HashMap::new())),
        },
    )
}

/// A store that keeps nothing: [`single_flight`] without a cache.
struct NoStore;

impl Cache for NoStore {
    fn get(&self, _key: &CacheKey) -> Result<Option<Cached>, CacheError> {
        Ok(None)
    }

    fn put(&self, _key: &CacheKey, _entry: &Cached) -> Result<(), CacheError> {
        Ok(())
    }
}

/// `inner` with concurrent identical requests (same endpoint, model,
/// canonical request and state) sent once, every waiter getting the result;
/// nothing is kept afterwards. The waiters' results are marked
/// [`Evaluated::cache_hit`]: they sent nothing.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use serde_json::json;
/// use toolnexus::cache::single_flight;
/// use toolnexus::classifier::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counted = calls.clone();
/// let slow = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
///         counted.fetch_add(1, Ordering::SeqCst);
///         Box::pin(async {
///             tokio::task::yield_now().await;
///             Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///                 .map_err(|e| e.to_string())
///         })
///     })),
///     ..Default::default()
/// })?;
/// let judge = single_flight(slow);
/// let qs = Questions::from([("spam".to_string(), NoulQuestion::default().into())]);
/// let together = futures::future::join_all((0..10).map(|_| judge.evaluate(json!("same"), &qs))).await;
/// assert!(together.iter().all(|d| d.is_ok()));
/// assert_eq!(calls.load(Ordering::SeqCst), 1, "ten at once, one call");
/// judge.evaluate(json!("same"), &qs).await?;
/// assert_eq!(calls.load(Ordering::SeqCst), 2, "nothing is kept afterwards");
/// # Ok(())
/// # }
/// ```
pub fn single_flight(inner: Classifier) -> Classifier {
    caching(inner, Arc::new(NoStore))
}
