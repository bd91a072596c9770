//! The SQLite store: one file, WAL, shared by any number of processes.
//!
//! The file marks itself with SQLite's `application_id` (`0x746E7863`, "tnxc")
//! and `user_version` 2. Opening a file that is not SQLite is a
//! [`CacheErrorKind::Corrupt`] error; a SQLite database of something else (or a
//! newer cache version) is [`CacheErrorKind::Foreign`]. Nothing is ever reset
//! or overwritten to get past either.
//!
//! Schema: `entries(key BLOB PRIMARY KEY, decision TEXT, model TEXT,
//! stored_at INTEGER, requested TEXT)` (`model` answered, `requested` was asked
//! for) and `aliases(endpoint, alias, model, since, checked_ms)`, each floating
//! alias's [`Resolution`]. Expired entries read as misses and are deleted;
//! past `max_entries` the oldest stored go first.
//!
//! A version 1 file (before pinning) is migrated in place when opened, in one
//! transaction: `requested` is added (NULL for its entries: asked for before
//! requests were recorded) and `aliases` created empty, so an entry under a
//! floating alias is served again only once a live answer shows the alias
//! still answers as the model that recorded it. Builds that read only
//! version 1 refuse the migrated file, naming its version, rather than serve
//! from it without those checks.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, OptionalExtension as _, params};
use serde_json::Value;

use super::{Cache, CacheError, CacheErrorKind, CacheKey, Cached, Observed, expired, now_secs};
use crate::pinning::Resolution;

/// `application_id` of a toolnexus cache file: "tnxc".
const APPLICATION_ID: i64 = 0x746E_7863;
/// The schema version this build writes and reads.
const SCHEMA_VERSION: i64 = 2;
/// The version before pinning, migrated on open.
const SCHEMA_V1: i64 = 1;
/// Puts between two checks of `max_entries`.
const EVICT_EVERY: u64 = 64;

/// Limits of a [`SqliteCache`].
///
/// ```
/// let o = toolnexus::cache::SqliteOptions::default();
/// assert_eq!((o.ttl, o.max_entries), (None, None));
/// assert_eq!(o.busy_timeout, std::time::Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqliteOptions {
    /// Entries older than this read as misses (and are deleted).
    pub ttl: Option<Duration>,
    /// At most this many entries; the oldest stored are evicted first.
    pub max_entries: Option<u64>,
    /// How long a call waits for another process's write lock.
    pub busy_timeout: Duration,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        SqliteOptions {
            ttl: None,
            max_entries: None,
            busy_timeout: Duration::from_secs(10),
        }
    }
}

/// What a cache file holds (`toolnexus cache stats`).
///
/// ```no_run
/// let cache = toolnexus::cache::SqliteCache::open("decisions.db", Default::default())?;
/// let s = cache.stats()?;
/// println!("{} entries, {} bytes", s.entries, s.bytes);
/// # Ok::<(), toolnexus::cache::CacheError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheStats {
    /// Entries stored (expired ones included until read or evicted).
    pub entries: u64,
    /// Entries past the time to live.
    pub expired: u64,
    /// Bytes of stored decisions.
    pub bytes: u64,
    /// Oldest and newest `stored_at`, seconds since the Unix epoch.
    pub oldest: Option<u64>,
    /// Newest `stored_at`.
    pub newest: Option<u64>,
    /// Entries by answering model, most first.
    pub models: Vec<(String, u64)>,
    /// What each floating alias was last seen to answer as, by alias (an
    /// alias asked of several endpoints appears once for each).
    pub aliases: Vec<(String, Resolution)>,
}

/// A decision cache in one SQLite file.
///
/// ```
/// use toolnexus::cache::{Cache, CacheKey, Cached, SqliteCache};
/// let dir = std::env::temp_dir().join(format!("toolnexus-doc-cache-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let path = dir.join("decisions.db");
/// let cache = SqliteCache::open(&path, Default::default())?;
/// let entry = Cached { decision: serde_json::json!({"model": "m", "answers": {}}), model: "m".into(), stored_at: 1, requested: Some("m".into()) };
/// cache.put(&CacheKey([7; 32]), &entry)?;
/// drop(cache);
/// // Another handle (or process) sees it.
/// let again = SqliteCache::open(&path, Default::default())?;
/// assert_eq!(again.get(&CacheKey([7; 32]))?, Some(entry));
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok::<(), toolnexus::cache::CacheError>(())
/// ```
pub struct SqliteCache {
    conn: Mutex<Connection>,
    path: PathBuf,
    options: SqliteOptions,
    puts: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for SqliteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCache")
            .field("path", &self.path)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl SqliteCache {
    /// Opens the cache at `path`, creating it (and its schema) if absent.
    ///
    /// ```
    /// use toolnexus::cache::{CacheErrorKind, SqliteCache};
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-notdb-{}", std::process::id()));
    /// std::fs::write(&path, b"this is not a database, just text that is long enough to have a header").unwrap();
    /// let e = SqliteCache::open(&path, Default::default()).unwrap_err();
    /// assert_eq!(e.kind(), CacheErrorKind::Corrupt);
    /// assert!(e.to_string().contains("is not a SQLite database"), "{e}");
    /// # std::fs::remove_file(&path).unwrap();
    /// ```
    pub fn open(path: impl AsRef<Path>, options: SqliteOptions) -> Result<SqliteCache, CacheError> {
        let path = path.as_ref().to_path_buf();
        let shown = path.display().to_string();
        let conn = Connection::open_with_flags(
            &path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| CacheError::new(CacheErrorKind::Open, format!("{shown}: cannot open: {e}")))?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(|e| classify(&shown, "cannot set the busy timeout", e))?;
        // Openers racing on a new file: one creates it, the others may find it
        // locked mid-creation (a journal-mode switch does not wait on the busy
        // handler). They try again within the busy timeout.
        let deadline = std::time::Instant::now() + options.busy_timeout;
        loop {
            match init(&conn, &shown) {
                Ok(()) => break,
                Err(Init::Busy(_)) if std::time::Instant::now() < deadline => {
                    let _ = conn.execute_batch("ROLLBACK");
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(Init::Busy(e) | Init::Failed(e)) => return Err(e),
            }
        }
        Ok(SqliteCache {
            conn: Mutex::new(conn),
            path,
            options,
            puts: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The file this cache lives in.
    ///
    /// ```no_run
    /// let cache = toolnexus::cache::SqliteCache::open("decisions.db", Default::default())?;
    /// assert_eq!(cache.path(), std::path::Path::new("decisions.db"));
    /// # Ok::<(), toolnexus::cache::CacheError>(())
    /// ```
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn with<T>(
        &self,
        what: &str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, CacheError> {
        let conn = self
            .conn
            .lock()
            .map_err(|_| CacheError::new(CacheErrorKind::Io, "connection poisoned"))?;
        f(&conn).map_err(|e| classify(&self.path.display().to_string(), what, e))
    }

    /// Counts, sizes, ages and models of what is stored.
    ///
    /// ```
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-stats-{}.db", std::process::id()));
    /// let cache = toolnexus::cache::SqliteCache::open(&path, Default::default())?;
    /// assert_eq!(cache.stats()?.entries, 0);
    /// # drop(cache); let _ = std::fs::remove_file(&path);
    /// # Ok::<(), toolnexus::cache::CacheError>(())
    /// ```
    pub fn stats(&self) -> Result<CacheStats, CacheError> {
        let cutoff = self
            .options
            .ttl
            .map(|t| now_secs().saturating_sub(t.as_secs()));
        self.with("cannot read stats", |c| {
            let (entries, bytes, oldest, newest): (i64, i64, Option<i64>, Option<i64>) = c
                .query_row(
                    "SELECT count(*), coalesce(sum(length(decision)), 0), min(stored_at), max(stored_at) FROM entries",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
                )?;
            let expired: i64 = match cutoff {
                Some(cut) => c.query_row(
                    "SELECT count(*) FROM entries WHERE stored_at < ?1",
                    params![cut as i64],
                    |r| r.get(0),
                )?,
                None => 0,
            };
            let mut stmt = c.prepare(
                "SELECT model, count(*) FROM entries GROUP BY model ORDER BY count(*) DESC, model",
            )?;
            let models = stmt
                .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let aliases = c
                .prepare(
                    "SELECT alias, model, since, checked_ms FROM aliases ORDER BY alias, endpoint",
                )?
                .query_map([], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        Resolution {
                            model: r.get(1)?,
                            since: r.get::<_, i64>(2)?.max(0) as u64,
                            checked_ms: r.get::<_, i64>(3)?.max(0) as u64,
                        },
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(CacheStats {
                entries: entries as u64,
                expired: expired as u64,
                bytes: bytes as u64,
                oldest: oldest.map(|v| v as u64),
                newest: newest.map(|v| v as u64),
                models,
                aliases,
            })
        })
    }

    /// Deletes every entry; returns how many there were.
    ///
    /// ```
    /// use toolnexus::cache::{Cache, CacheKey, Cached, SqliteCache};
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-clear-{}.db", std::process::id()));
    /// let cache = SqliteCache::open(&path, Default::default())?;
    /// cache.put(&CacheKey([1; 32]), &Cached { decision: serde_json::json!({}), model: "m".into(), stored_at: 1, requested: None })?;
    /// assert_eq!(cache.clear()?, 1);
    /// assert_eq!(cache.stats()?.entries, 0);
    /// # drop(cache); let _ = std::fs::remove_file(&path);
    /// # Ok::<(), toolnexus::cache::CacheError>(())
    /// ```
    pub fn clear(&self) -> Result<u64, CacheError> {
        self.with("cannot clear", |c| {
            c.execute("DELETE FROM entries", []).map(|n| n as u64)
        })
    }

    /// Every entry as one JSON line
    /// `{"key","model","requested","stored_at","decision"}` (`requested` null
    /// for entries stored before requests were recorded), oldest first,
    /// written to `out`; returns how many.
    ///
    /// ```
    /// use toolnexus::cache::{Cache, CacheKey, Cached, SqliteCache};
    /// let path = std::env::temp_dir().join(format!("toolnexus-doc-export-{}.db", std::process::id()));
    /// let cache = SqliteCache::open(&path, Default::default())?;
    /// cache.put(&CacheKey([1; 32]), &Cached { decision: serde_json::json!({"model": "m"}), model: "m".into(), stored_at: 5, requested: None })?;
    /// let mut out = Vec::new();
    /// assert_eq!(cache.export(&mut out)?, 1);
    /// let line: serde_json::Value = serde_json::from_slice(&out).unwrap();
    /// assert_eq!(line["stored_at"], 5);
    /// assert_eq!(line["key"].as_str().unwrap().len(), 64);
    /// # drop(cache); let _ = std::fs::remove_file(&path);
    /// # Ok::<(), toolnexus::cache::CacheError>(())
    /// ```
    pub fn export(&self, out: &mut dyn std::io::Write) -> Result<u64, CacheError> {
        let shown = self.path.display().to_string();
        let conn = self
            .conn
            .lock()
            .map_err(|_| CacheError::new(CacheErrorKind::Io, "connection poisoned"))?;
        let mut stmt = conn
            .prepare(
                "SELECT key, model, stored_at, decision, requested FROM entries ORDER BY stored_at, key",
            )
            .map_err(|e| classify(&shown, "cannot export", e))?;
        let mut rows = stmt
            .query([])
            .map_err(|e| classify(&shown, "cannot export", e))?;
        let mut n = 0;
        while let Some(r) = rows
            .next()
            .map_err(|e| classify(&shown, "cannot export", e))?
        {
            let key: Vec<u8> = r.get(0).map_err(|e| classify(&shown, "cannot export", e))?;
            let model: String = r.get(1).map_err(|e| classify(&shown, "cannot export", e))?;
            let stored_at: i64 = r.get(2).map_err(|e| classify(&shown, "cannot export", e))?;
            let decision: String = r.get(3).map_err(|e| classify(&shown, "cannot export", e))?;
            let requested: Option<String> =
                r.get(4).map_err(|e| classify(&shown, "cannot export", e))?;
            let decision: Value = serde_json::from_str(&decision).map_err(|e| {
                CacheError::new(
                    CacheErrorKind::Corrupt,
                    format!("{shown}: an entry is not JSON: {e}"),
                )
            })?;
            let key = CacheKey(key.try_into().map_err(|_| {
                CacheError::new(
                    CacheErrorKind::Corrupt,
                    format!("{shown}: a key is not 32 bytes"),
                )
            })?);
            let line = serde_json::json!({
                "key": key.to_hex(),
                "model": model,
                "requested": requested,
                "stored_at": stored_at,
                "decision": decision,
            });
            writeln!(out, "{line}").map_err(|e| {
                CacheError::new(CacheErrorKind::Io, format!("cannot write the export: {e}"))
            })?;
            n += 1;
        }
        Ok(n)
    }

    fn evict(&self, c: &Connection, max: u64) -> rusqlite::Result<()> {
        let count: i64 = c.query_row("SELECT count(*) FROM entries", [], |r| r.get(0))?;
        let over = count - max as i64;
        if over > 0 {
            c.execute(
                "DELETE FROM entries WHERE key IN (SELECT key FROM entries ORDER BY stored_at, key LIMIT ?1)",
                params![over],
            )?;
        }
        Ok(())
    }
}

impl Cache for SqliteCache {
    fn get(&self, key: &CacheKey) -> Result<Option<Cached>, CacheError> {
        let found = self.with("cannot read", |c| {
            c.prepare("SELECT decision, model, stored_at, requested FROM entries WHERE key = ?1")?
                .query_row(params![&key.0[..]], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, Option<String>>(3)?,
                    ))
                })
                .optional()
        })?;
        let Some((decision, model, stored_at, requested)) = found else {
            return Ok(None);
        };
        let stored_at = stored_at.max(0) as u64;
        if expired(stored_at, self.options.ttl, now_secs()) {
            self.with("cannot delete an expired entry", |c| {
                c.execute(
                    "DELETE FROM entries WHERE key = ?1 AND stored_at = ?2",
                    params![&key.0[..], stored_at as i64],
                )
            })?;
            return Ok(None);
        }
        let decision = serde_json::from_str(&decision).map_err(|e| {
            CacheError::new(
                CacheErrorKind::Corrupt,
                format!(
                    "{}: entry {} is not JSON: {e}",
                    self.path.display(),
                    key.to_hex()
                ),
            )
        })?;
        Ok(Some(Cached {
            decision,
            model,
            stored_at,
            requested,
        }))
    }

    fn put(&self, key: &CacheKey, entry: &Cached) -> Result<(), CacheError> {
        let text = entry.decision.to_string();
        let n = self.puts.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.with("cannot write", |c| {
            c.prepare(
                "INSERT OR REPLACE INTO entries (key, decision, model, stored_at, requested) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                &key.0[..],
                text,
                entry.model,
                entry.stored_at as i64,
                entry.requested
            ])?;
            match self.options.max_entries {
                Some(max) if n.is_multiple_of(EVICT_EVERY) || max < EVICT_EVERY => self.evict(c, max),
                _ => Ok(()),
            }
        })
    }

    fn resolution(&self, endpoint: &str, alias: &str) -> Result<Option<Resolution>, CacheError> {
        self.with("cannot read an alias", |c| read_alias(c, endpoint, alias))
    }

    fn observe(
        &self,
        endpoint: &str,
        alias: &str,
        model: &str,
        now_ms: u64,
    ) -> Result<Option<Observed>, CacheError> {
        // Read and write in one immediate transaction: two processes seeing
        // the alias at once never lose a move.
        self.with("cannot record an alias", |c| {
            c.execute_batch("BEGIN IMMEDIATE")?;
            let done = (|| {
                let before = read_alias(c, endpoint, alias)?;
                let after = Resolution::observe(before.as_ref(), model, now_ms);
                c.prepare(
                    "INSERT OR REPLACE INTO aliases (endpoint, alias, model, since, checked_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![
                    endpoint,
                    alias,
                    after.model,
                    i64::try_from(after.since).unwrap_or(i64::MAX),
                    i64::try_from(after.checked_ms).unwrap_or(i64::MAX)
                ])?;
                Ok(Observed { before, after })
            })();
            match done {
                Ok(o) => c.execute_batch("COMMIT").map(|()| Some(o)),
                Err(e) => {
                    let _ = c.execute_batch("ROLLBACK");
                    Err(e)
                }
            }
        })
    }
}

/// The alias's row, if any.
fn read_alias(c: &Connection, endpoint: &str, alias: &str) -> rusqlite::Result<Option<Resolution>> {
    c.prepare("SELECT model, since, checked_ms FROM aliases WHERE endpoint = ?1 AND alias = ?2")?
        .query_row(params![endpoint, alias], |r| {
            Ok(Resolution {
                model: r.get(0)?,
                since: r.get::<_, i64>(1)?.max(0) as u64,
                checked_ms: r.get::<_, i64>(2)?.max(0) as u64,
            })
        })
        .optional()
}

/// The pinning table, as both a new file and a migrated one create it.
const ALIASES_TABLE: &str = "CREATE TABLE IF NOT EXISTS aliases (
                 endpoint TEXT NOT NULL,
                 alias TEXT NOT NULL,
                 model TEXT NOT NULL,
                 since INTEGER NOT NULL,
                 checked_ms INTEGER NOT NULL,
                 PRIMARY KEY (endpoint, alias)
             ) WITHOUT ROWID;";

/// Creates the schema in a new file, or checks an existing file is ours.
/// The application id and the number of tables, read from one snapshot.
fn identity(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.execute_batch("BEGIN DEFERRED")?;
    let app: i64 = conn.query_row("PRAGMA application_id", [], |r| r.get(0))?;
    let tables: i64 = conn.query_row(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table'",
        [],
        |r| r.get(0),
    )?;
    conn.execute_batch("COMMIT")?;
    Ok((app, tables))
}

/// Why opening a cache file did not finish: busy (another opener holds it:
/// try again) or a failure to report.
enum Init {
    Busy(CacheError),
    Failed(CacheError),
}

impl From<CacheError> for Init {
    fn from(e: CacheError) -> Init {
        Init::Failed(e)
    }
}

/// [`classify`], told apart: busy or locked is worth another try.
fn classify_init(shown: &str, what: &str, e: rusqlite::Error) -> Init {
    use rusqlite::ErrorCode;
    let busy = matches!(
        &e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    );
    let e = classify(shown, what, e);
    if busy { Init::Busy(e) } else { Init::Failed(e) }
}

fn init(conn: &Connection, shown: &str) -> Result<(), Init> {
    // Reading the header is the first touch of the file: a text file fails here.
    // Both reads in one read transaction, one snapshot: read apart, another
    // process creating the cache between them would show tables without the
    // application id, and a cache being born would look foreign.
    let (app, tables) = identity(conn).map_err(|e| {
        let _ = conn.execute_batch("ROLLBACK");
        classify_init(shown, "cannot read", e)
    })?;
    if app == 0 && tables == 0 {
        // A new file. Two processes may get here at once: the immediate
        // transaction makes one create and the other find it done.
        conn.execute_batch(&format!(
            "PRAGMA journal_mode = WAL;
             BEGIN IMMEDIATE;
             CREATE TABLE IF NOT EXISTS entries (
                 key BLOB PRIMARY KEY NOT NULL,
                 decision TEXT NOT NULL,
                 model TEXT NOT NULL,
                 stored_at INTEGER NOT NULL,
                 requested TEXT
             ) WITHOUT ROWID;
             CREATE INDEX IF NOT EXISTS entries_stored_at ON entries (stored_at);
             {ALIASES_TABLE}
             PRAGMA application_id = {APPLICATION_ID};
             PRAGMA user_version = {SCHEMA_VERSION};
             COMMIT;"
        ))
        .map_err(|e| classify_init(shown, "cannot create the cache", e))?;
        return Ok(());
    }
    if app != APPLICATION_ID {
        return Err(CacheError::new(
            CacheErrorKind::Foreign,
            format!(
                "{shown}: a SQLite database, but not a toolnexus cache (application_id {app:#x}, {tables} tables); use another path"
            ),
        )
        .into());
    }
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(|e| classify_init(shown, "cannot read", e))?;
    if version == SCHEMA_V1 {
        migrate_v1(conn, shown)?;
    } else if version != SCHEMA_VERSION {
        return Err(CacheError::new(
            CacheErrorKind::Foreign,
            format!(
                "{shown}: cache schema version {version} is not supported (this build reads version {SCHEMA_VERSION})"
            ),
        )
        .into());
    }
    conn.execute_batch("PRAGMA journal_mode = WAL;")
        .map_err(|e| classify_init(shown, "cannot enable WAL", e))?;
    Ok(())
}

/// Version 1 → 2: the `requested` column and the `aliases` table, in one
/// immediate transaction that checks the version again (another process may
/// have migrated the file meanwhile).
fn migrate_v1(conn: &Connection, shown: &str) -> Result<(), Init> {
    let fail = |e| {
        let _ = conn.execute_batch("ROLLBACK");
        classify_init(shown, "cannot migrate the cache to version 2", e)
    };
    conn.execute_batch("BEGIN IMMEDIATE").map_err(fail)?;
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(fail)?;
    if version == SCHEMA_V1 {
        conn.execute_batch(&format!(
            "ALTER TABLE entries ADD COLUMN requested TEXT;
             {ALIASES_TABLE}
             PRAGMA user_version = {SCHEMA_VERSION};"
        ))
        .map_err(fail)?;
    }
    conn.execute_batch("COMMIT").map_err(fail)?;
    Ok(())
}

/// A SQLite error as a cache error naming the file: damage is `Corrupt`,
/// everything else `Io`.
fn classify(shown: &str, what: &str, e: rusqlite::Error) -> CacheError {
    use rusqlite::ErrorCode;
    let code = match &e {
        rusqlite::Error::SqliteFailure(f, _) => Some(f.code),
        _ => None,
    };
    match code {
        Some(ErrorCode::NotADatabase) => CacheError::new(
            CacheErrorKind::Corrupt,
            format!("{shown}: is not a SQLite database (not a toolnexus cache; use another path)"),
        ),
        Some(ErrorCode::DatabaseCorrupt) => CacheError::new(
            CacheErrorKind::Corrupt,
            format!("{shown}: the cache file is damaged ({e}); move it away to start afresh"),
        ),
        _ => CacheError::new(CacheErrorKind::Io, format!("{shown}: {what}: {e}")),
    }
}
