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
//!   same thing. [`cache_key_for`] adds the stack's
//!   [`Fingerprint`]: **a cache key covers the
//!   stack's fingerprint** — calibration, cascade and student, fallback,
//!   tape, model directory, engine parameters — so an answer made under one
//!   stack is never served to another; a plain stack keeps the key it always
//!   had.
//! - [`single_flight`] sends concurrent identical requests once and keeps
//!   nothing; [`caching`] wraps a classifier: a hit returns the stored decision with
//!   [`Evaluated::cache_hit`] set (metrics count it as no spend); a miss asks
//!   the classifier once however many identical requests wait on it (single
//!   flight), and stores the decision. Errors are never stored. A store that
//!   fails at run time (disk full, locked too long) is logged and bypassed: the
//!   evaluation still happens.
//! - Pinning (SPEC §20): every entry is tagged with the model that answered
//!   ([`Cached::model`]) and the model the request asked for
//!   ([`Cached::requested`]). Under a floating alias
//!   ([`is_floating`], e.g. `jev-latest`) an
//!   entry is served only while the alias still answers as the model that
//!   recorded it: every live answer updates the alias's
//!   [`Resolution`], and a resolution older than
//!   [`CachingOptions::alias_ttl`] is re-checked with a live call instead of a
//!   hit. **A cache never serves an answer recorded under a floating alias
//!   after the alias was seen to resolve to another model.**
//!
//! ```
//! use std::sync::Arc;
//! use serde_json::json;
//! use toolnexus::cache::{MemoryCache, caching};
//! use toolnexus::classifier::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), ClassifierError> {
//! let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
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

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::FutureExt as _;
use futures::future::{BoxFuture as SharedBox, Shared};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::canonical::canonical_json;
use crate::classifier::{
    Classifier, ClassifierError, Decision, EvalContext, EvalRequest, Evaluated, Fingerprint,
    FullEvaluator, canonical_request,
};
use crate::context::BoxFuture;
use crate::pinning::{DEFAULT_ALIAS_TTL, Resolution, is_floating, now_ms};

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
/// This is the key of a plain stack, one whose [`Fingerprint`] has no parts;
/// [`caching`] keys with [`cache_key_for`], which is this key for such a
/// stack and covers the fingerprint's parts for any other.
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
    key_of(endpoint, &[], model, request)
}

/// The key of `request` to a classifier whose [`Fingerprint`] is
/// `fingerprint` and whose model is `model` (when the request names none):
/// what [`caching`] stores and looks decisions up under.
///
/// **A cache key covers the stack's fingerprint**: everything beneath the
/// cache that can change an answer (a calibration's maps, a cascade's student
/// and threshold, a fallback chain, a tape's contents, a local model's
/// weights, an engine's parameters) is in the key, so an answer made under one
/// stack is never served to another. A plain fingerprint (no parts) gives
/// exactly [`cache_key`] of its origin, the key every version of toolnexus
/// computed, so entries written before still answer a plain stack. Any part
/// changes the format tag (`toolnexus.cache/2`) and adds the parts, each
/// length-prefixed, before the request: an entry written before
/// fingerprints, by whatever stack, is never served to a stack with layers.
///
/// ```
/// use serde_json::json;
/// use toolnexus::cache::{cache_key, cache_key_for};
/// use toolnexus::classifier::{EvalRequest, Fingerprint, Questions};
/// let r = EvalRequest::new(json!("hi"), Questions::new());
/// let plain = Fingerprint::new("http://x/v1/systemone");
/// assert_eq!(cache_key_for(&plain, "m", &r), cache_key("http://x/v1/systemone", "m", &r));
/// let calibrated = plain.clone().with_part("calibration", Fingerprint::digest(b"maps"));
/// assert_ne!(cache_key_for(&calibrated, "m", &r), cache_key_for(&plain, "m", &r));
/// ```
///
/// [`Fingerprint`]: crate::classifier::Fingerprint
pub fn cache_key_for(fingerprint: &Fingerprint, model: &str, request: &EvalRequest) -> CacheKey {
    key_of(fingerprint.origin(), fingerprint.parts(), model, request)
}

/// [`cache_key`] with the fingerprint's `layers` (none: format 1, the key of
/// every earlier version).
fn key_of(
    endpoint: &str,
    layers: &[(String, String)],
    model: &str,
    request: &EvalRequest,
) -> CacheKey {
    let model = request.model.as_deref().unwrap_or(model);
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    if layers.is_empty() {
        part(b"toolnexus.cache/1");
    } else {
        part(b"toolnexus.cache/2");
        part(&(layers.len() as u64).to_le_bytes());
        for (layer, value) in layers {
            part(layer.as_bytes());
            part(value.as_bytes());
        }
    }
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
    /// The model that answered (the decision's `model`: what a floating
    /// alias resolved to).
    pub model: String,
    /// When it was stored, in seconds since the Unix epoch.
    pub stored_at: u64,
    /// The model the request asked for (e.g. the alias `jev-latest`); `None`
    /// for entries stored before requests were recorded.
    pub requested: Option<String>,
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
    /// assert_eq!(c.requested, None);
    /// ```
    pub fn of(decision: &Decision) -> Cached {
        Cached {
            decision: decision.to_value(),
            model: decision.model.clone(),
            stored_at: now_secs(),
            requested: None,
        }
    }

    /// The entry with a style's per-answer extras ([`Evaluated::extensions`],
    /// such as Laya's), kept in the stored JSON under `"extensions"` (which
    /// [`Decision::from_value`] ignores, so any reader of the entry still
    /// reads the decision) and given back with every hit. None: unchanged.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use toolnexus::classifier::{ClassifierUsage, Decision};
    /// # let d = Decision { model: "laya".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// let mut extras = BTreeMap::new();
    /// extras.insert("q".to_string(), serde_json::json!({"answer_confidence": 0.9}).as_object().unwrap().clone());
    /// let c = toolnexus::cache::Cached::of(&d).with_extensions(&extras);
    /// assert_eq!(c.decision["extensions"]["q"]["answer_confidence"], 0.9);
    /// assert_eq!(c.extensions(), extras);
    /// ```
    ///
    /// [`Evaluated::extensions`]: crate::classifier::Evaluated::extensions
    pub fn with_extensions(mut self, extensions: &BTreeMap<String, Map<String, Value>>) -> Cached {
        if !extensions.is_empty()
            && let Value::Object(o) = &mut self.decision
        {
            o.insert(
                "extensions".into(),
                Value::Object(
                    extensions
                        .iter()
                        .map(|(k, m)| (k.clone(), Value::Object(m.clone())))
                        .collect(),
                ),
            );
        }
        self
    }

    /// The per-answer extras the entry keeps (see [`Cached::with_extensions`]);
    /// empty for an entry without any, or with some that are not objects.
    pub fn extensions(&self) -> BTreeMap<String, Map<String, Value>> {
        match self.decision.get("extensions") {
            Some(Value::Object(o)) => o
                .iter()
                .filter_map(|(k, v)| v.as_object().map(|m| (k.clone(), m.clone())))
                .collect(),
            _ => BTreeMap::new(),
        }
    }

    /// The entry tagged with the model its request asked for.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use toolnexus::classifier::{ClassifierUsage, Decision};
    /// # let d = Decision { model: "jev-1.13".into(), answers: BTreeMap::new(), usage: ClassifierUsage::default(), calibrated: true };
    /// let c = toolnexus::cache::Cached::of(&d).with_requested("jev-latest");
    /// assert_eq!((c.model.as_str(), c.requested.as_deref()), ("jev-1.13", Some("jev-latest")));
    /// ```
    pub fn with_requested(mut self, model: impl Into<String>) -> Cached {
        self.requested = Some(model.into());
        self
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
/// let entry = Cached { decision: serde_json::json!({}), model: "m".into(), stored_at: 1, requested: None };
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
    /// What the floating alias `alias` at `endpoint` was last seen to answer
    /// as, when the store keeps resolutions. The default keeps none (`None`):
    /// [`caching`] then keeps them in the process.
    fn resolution(&self, endpoint: &str, alias: &str) -> Result<Option<Resolution>, CacheError> {
        let _ = (endpoint, alias);
        Ok(None)
    }
    /// Records a live answer from `model` to `alias` at `endpoint` at
    /// `now_ms`, as [`Resolution::observe`] says, and returns the resolution
    /// before and after; `None` when the store keeps no resolutions (the
    /// default). Stores shared by processes update it atomically.
    fn observe(
        &self,
        endpoint: &str,
        alias: &str,
        model: &str,
        now_ms: u64,
    ) -> Result<Option<Observed>, CacheError> {
        let _ = (endpoint, alias, model, now_ms);
        Ok(None)
    }
}

/// A floating alias's resolution before and after a live answer
/// ([`Cache::observe`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observed {
    /// What the alias was seen as before, if anything.
    pub before: Option<Resolution>,
    /// What it is seen as now.
    pub after: Resolution,
}

/// Resolutions kept in a map, by endpoint and alias.
#[derive(Debug, Default)]
struct Resolutions(Mutex<HashMap<(String, String), Resolution>>);

impl Resolutions {
    fn get(&self, endpoint: &str, alias: &str) -> Result<Option<Resolution>, CacheError> {
        let map = self
            .0
            .lock()
            .map_err(|_| CacheError::new(CacheErrorKind::Io, "alias table poisoned"))?;
        Ok(map.get(&(endpoint.to_string(), alias.to_string())).cloned())
    }

    fn observe(
        &self,
        endpoint: &str,
        alias: &str,
        model: &str,
        now_ms: u64,
    ) -> Result<Observed, CacheError> {
        let mut map = self
            .0
            .lock()
            .map_err(|_| CacheError::new(CacheErrorKind::Io, "alias table poisoned"))?;
        let slot = (endpoint.to_string(), alias.to_string());
        let before = map.get(&slot).cloned();
        let after = Resolution::observe(before.as_ref(), model, now_ms);
        map.insert(slot, after.clone());
        Ok(Observed { before, after })
    }
}

/// An in-process cache: entries live as long as the value, with an optional
/// time to live and entry limit (the oldest stored go first).
///
/// ```
/// use std::time::Duration;
/// use toolnexus::cache::{Cache, CacheKey, Cached, MemoryCache};
/// let cache = MemoryCache::with_limits(Some(Duration::from_secs(60)), Some(1));
/// let entry = |t| Cached { decision: serde_json::json!({}), model: "m".into(), stored_at: t, requested: None };
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
    aliases: Resolutions,
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

    fn resolution(&self, endpoint: &str, alias: &str) -> Result<Option<Resolution>, CacheError> {
        self.aliases.get(endpoint, alias)
    }

    fn observe(
        &self,
        endpoint: &str,
        alias: &str,
        model: &str,
        now_ms: u64,
    ) -> Result<Option<Observed>, CacheError> {
        self.aliases
            .observe(endpoint, alias, model, now_ms)
            .map(Some)
    }
}

/// How [`caching_with`] uses its store.
///
/// ```
/// let o = toolnexus::cache::CachingOptions::default();
/// assert_eq!(o.alias_ttl, toolnexus::pinning::DEFAULT_ALIAS_TTL);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachingOptions {
    /// How long a floating alias's resolution is trusted: once the last live
    /// answer under it is this old, the next request is sent instead of
    /// served, and its answer re-checks the resolution (default one hour;
    /// zero sends every request under a floating alias).
    pub alias_ttl: Duration,
}

impl Default for CachingOptions {
    fn default() -> Self {
        CachingOptions {
            alias_ttl: DEFAULT_ALIAS_TTL,
        }
    }
}

/// One call shared by every identical request waiting on it.
type Flight = Shared<SharedBox<'static, Result<Evaluated, Arc<ClassifierError>>>>;

/// What [`caching`] runs.
struct Caching {
    inner: Classifier,
    cache: Arc<dyn Cache>,
    /// What the keys cover beneath the cache ([`cache_key_for`]).
    fingerprint: Fingerprint,
    flights: Arc<Mutex<HashMap<CacheKey, Flight>>>,
    pins: Arc<Pins>,
}

/// The floating aliases' resolutions a [`Caching`] consults: the store's (when
/// it keeps them) and its own, updated together on every live answer.
struct Pins {
    endpoint: String,
    alias_ttl: Duration,
    own: Resolutions,
    /// Off for [`single_flight`]: nothing is served later, nothing to guard.
    on: bool,
}

impl Pins {
    /// Whether an entry may be served for `alias` now. Every resolution known
    /// (the store's, shared with other processes, and this process's own,
    /// which a failed store write leaves ahead of the store) must name the
    /// entry's model since before it was stored, and the freshest must be
    /// younger than the alias TTL. None known: not served (a live call learns it).
    fn serves(&self, cache: &dyn Cache, alias: &str, entry: &Cached) -> bool {
        let stored = match cache.resolution(&self.endpoint, alias) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(target: "toolnexus::cache", "{e}; asking the backend");
                return false;
            }
        };
        let own = self.own.get(&self.endpoint, alias).ok().flatten();
        let known: Vec<Resolution> = stored.into_iter().chain(own).collect();
        let now = now_ms();
        !known.is_empty()
            && known.iter().any(|r| !r.is_stale(self.alias_ttl, now))
            && known
                .iter()
                .all(|r| r.serves(&entry.model, entry.stored_at))
    }

    /// Records a live answer from `model` to `alias`, in our own table and
    /// (on the blocking pool: it may wait for another process's write lock)
    /// in the store; says so once when the alias moved.
    async fn observe(&self, cache: Arc<dyn Cache>, alias: &str, model: &str) {
        let now = now_ms();
        let ours = self.own.observe(&self.endpoint, alias, model, now).ok();
        let (endpoint, a, m) = (self.endpoint.clone(), alias.to_string(), model.to_string());
        let stored = tokio::task::spawn_blocking(move || cache.observe(&endpoint, &a, &m, now))
            .await
            .unwrap_or_else(|e| Err(CacheError::new(CacheErrorKind::Io, e.to_string())));
        let seen = match stored {
            Ok(Some(o)) => Some(o),
            Ok(None) => ours,
            Err(e) => {
                tracing::warn!(target: "toolnexus::cache", "{e}; the alias's resolution is kept in this process only");
                ours
            }
        };
        if let Some(Observed {
            before: Some(before),
            after,
        }) = seen
            && after.has_moved_from(&before)
        {
            tracing::warn!(
                target: "toolnexus::pinning",
                "model {alias:?} now answers as {:?} (it answered as {:?}); decisions cached under it before are no longer served",
                after.model,
                before.model
            );
        }
    }
}

impl Caching {
    /// Reads on the calling task: a store's `get` is quick (SQLite readers in
    /// WAL mode never wait for a writer), and a hop to the blocking pool would
    /// cost more than the read.
    fn lookup(
        cache: &dyn Cache,
        key: CacheKey,
        floating: Option<(&Pins, &str)>,
    ) -> Option<Evaluated> {
        match cache.get(&key) {
            Ok(Some(c)) if floating.is_some_and(|(pins, alias)| !pins.serves(cache, alias, &c)) => {
                None
            }
            Ok(Some(c)) => match Decision::from_value(&c.decision) {
                Ok(d) => {
                    let mut e = Evaluated::new(d).with_cache_hit(true);
                    e.extensions = c.extensions();
                    Some(e)
                }
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

    async fn store(cache: Arc<dyn Cache>, key: CacheKey, requested: &str, done: &Evaluated) {
        let entry = Cached::of(&done.decision)
            .with_requested(requested)
            .with_extensions(&done.extensions);
        let stored = tokio::task::spawn_blocking(move || cache.put(&key, &entry))
            .await
            .unwrap_or_else(|e| Err(CacheError::new(CacheErrorKind::Io, e.to_string())));
        if let Err(e) = stored {
            tracing::warn!(target: "toolnexus::cache", "{e}; the decision is not stored");
        }
    }
}

impl FullEvaluator for Caching {
    fn call_full(
        &self,
        ctx: EvalContext,
        request: EvalRequest,
    ) -> BoxFuture<Result<Evaluated, ClassifierError>> {
        let key = cache_key_for(&self.fingerprint, self.inner.model(), &request);
        let requested = request
            .model
            .clone()
            .unwrap_or_else(|| self.inner.model().to_string());
        let (inner, cache, flights, pins) = (
            self.inner.clone(),
            Arc::clone(&self.cache),
            Arc::clone(&self.flights),
            Arc::clone(&self.pins),
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
                            let floating = (pins.on && is_floating(&requested))
                                .then_some((pins.as_ref(), requested.as_str()));
                            let result = match Caching::lookup(cache.as_ref(), key, floating) {
                                Some(hit) => Ok(hit),
                                None => {
                                    let result = inner.evaluate_request(ctx, request).await;
                                    if let Ok(e) = &result {
                                        // The resolution first: the entry
                                        // stored next is then never older than it.
                                        if floating.is_some() {
                                            pins.observe(
                                                Arc::clone(&cache),
                                                &requested,
                                                &e.decision.model,
                                            )
                                            .await;
                                        }
                                        Caching::store(cache, key, &requested, e).await;
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
/// Keys come from [`cache_key_for`] with `inner`'s [`Fingerprint`] (its
/// origin — the endpoint, or the style's name when it has none, e.g.
/// `custom` — and every layer beneath that can change an answer) and model:
/// the same store shared by two stacks never serves one's answer to the
/// other. The cache itself passes the fingerprint on unchanged. A waiter that
/// shared another call's answer is reported as a cache hit too: it sent
/// nothing.
///
/// [`Fingerprint`]: crate::classifier::Fingerprint
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use serde_json::json;
/// use toolnexus::cache::{MemoryCache, caching};
/// use toolnexus::classifier::*;
///
/// // Paused time: the backend's second passes only once every caller waits.
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), ClassifierError> {
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counted = calls.clone();
/// let slow = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
///         counted.fetch_add(1, Ordering::SeqCst);
///         Box::pin(async {
///             tokio::time::sleep(std::time::Duration::from_secs(1)).await;
///             Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///                 .map_err(|e| e.to_string())
///         })
///     })),
///     ..Default::default()
/// })?;
/// let judge = caching(slow, Arc::new(MemoryCache::new()));
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
/// let all = futures::future::join_all((0..50).map(|_| judge.evaluate(json!("same"), &qs))).await;
/// assert!(all.iter().all(|d| d.is_ok()));
/// assert_eq!(calls.load(Ordering::SeqCst), 1, "50 identical requests, one call");
/// # Ok(())
/// # }
/// ```
pub fn caching(inner: Classifier, cache: Arc<dyn Cache>) -> Classifier {
    caching_with(inner, cache, CachingOptions::default())
}

/// [`caching`] with its [`CachingOptions`]: how long a floating alias's
/// resolution is trusted before a live call re-checks it.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::time::Duration;
/// use serde_json::json;
/// use toolnexus::cache::{CachingOptions, MemoryCache, caching_with};
/// use toolnexus::classifier::*;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ClassifierError> {
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counted = calls.clone();
/// // `jev-latest` answers as jev-1.13 for two calls, then as jev-1.14.
/// let moving = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     model: "jev-latest".into(),
///     evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
///         let model = if counted.fetch_add(1, Ordering::SeqCst) < 2 { "jev-1.13" } else { "jev-1.14" };
///         Box::pin(async move {
///             Decision::from_value(&json!({"model": model, "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///                 .map_err(|e| e.to_string())
///         })
///     })),
///     ..Default::default()
/// })?;
/// let judge = caching_with(moving, Arc::new(MemoryCache::new()), CachingOptions::default());
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
/// let first = judge.evaluate_request(EvalContext::new(), EvalRequest::new(json!("a"), qs.clone())).await?;
/// let again = judge.evaluate_request(EvalContext::new(), EvalRequest::new(json!("a"), qs.clone())).await?;
/// assert!(!first.cache_hit && again.cache_hit, "the alias has not moved: a hit");
/// judge.evaluate(json!("b"), &qs).await?; // a live call: the alias still answers as jev-1.13
/// judge.evaluate(json!("c"), &qs).await?; // a live call: now it answers as jev-1.14
/// let after = judge.evaluate_request(EvalContext::new(), EvalRequest::new(json!("a"), qs)).await?;
/// assert!(!after.cache_hit, "jev-1.13's answer is not served once the alias moved");
/// assert_eq!(after.decision.model, "jev-1.14");
/// # Ok(())
/// # }
/// ```
pub fn caching_with(
    inner: Classifier,
    cache: Arc<dyn Cache>,
    options: CachingOptions,
) -> Classifier {
    wrap(inner, cache, options.alias_ttl, true)
}

/// The [`Caching`] classifier over `inner`; `pinning` off keeps no
/// resolutions (for a store that serves nothing).
fn wrap(
    inner: Classifier,
    cache: Arc<dyn Cache>,
    alias_ttl: Duration,
    pinning: bool,
) -> Classifier {
    // The cache changes no answer: the stack's fingerprint passes through it.
    let fingerprint = inner.fingerprint().clone();
    let endpoint = fingerprint.origin().to_string();
    let layer = Classifier::from_evaluator(
        inner.model().to_string(),
        Caching {
            inner: inner.clone(),
            cache,
            pins: Arc::new(Pins {
                endpoint,
                alias_ttl,
                own: Resolutions::default(),
                on: pinning,
            }),
            fingerprint,
            flights: Arc::new(Mutex::new(HashMap::new())),
        },
    );
    layer.layered_over(&inner)
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
/// // Paused time: the backend's second passes only once every caller waits.
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), ClassifierError> {
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counted = calls.clone();
/// let slow = create_classifier(ClassifierOptions {
///     style: ClassifierStyle::Custom,
///     evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
///         counted.fetch_add(1, Ordering::SeqCst);
///         Box::pin(async {
///             tokio::time::sleep(std::time::Duration::from_secs(1)).await;
///             Decision::from_value(&json!({"model": "m", "answers": {"spam": {"type": "noul", "noul": 0.9}}}))
///                 .map_err(|e| e.to_string())
///         })
///     })),
///     ..Default::default()
/// })?;
/// let judge = single_flight(slow);
/// let qs = Questions::from([("spam".to_string(), NoulQuestion { instructions: "Is it spam?".into(), criteria: None }.into())]);
/// let together = futures::future::join_all((0..10).map(|_| judge.evaluate(json!("same"), &qs))).await;
/// assert!(together.iter().all(|d| d.is_ok()));
/// assert_eq!(calls.load(Ordering::SeqCst), 1, "ten at once, one call");
/// judge.evaluate(json!("same"), &qs).await?;
/// assert_eq!(calls.load(Ordering::SeqCst), 2, "nothing is kept afterwards");
/// # Ok(())
/// # }
/// ```
pub fn single_flight(inner: Classifier) -> Classifier {
    wrap(inner, Arc::new(NoStore), DEFAULT_ALIAS_TTL, false)
}
