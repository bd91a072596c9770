//! Files replaced whole, or grown a line at a time: the one place the crate
//! (and the CLI) writes files that must survive a crash. A leaf: it names
//! nothing else in the crate.
//!
//! A replacement is two steps, [`stage`] then [`commit`] ([`write_atomic`]
//! does both): the new bytes go to a fresh temporary file in the same
//! directory and are flushed to disk, then that file is renamed over the old
//! one and the directory entry is flushed where the platform allows it. A
//! crash at any point leaves the old file or the new one, never a mix; at
//! worst a hidden temporary file (`.<name>.<pid>.<n>.tmp`) is left beside it.
//!
//! ```
//! use toolnexus::fs::{append_line, write_atomic};
//!
//! let dir = std::env::temp_dir().join(format!("toolnexus-doc-fs-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! write_atomic(dir.join("run.json"), b"{\"n\":1}\n")?;
//! append_line(dir.join("log.jsonl"), b"{\"seen\":1}")?;
//! append_line(dir.join("log.jsonl"), b"{\"seen\":2}")?;
//! assert_eq!(std::fs::read_to_string(dir.join("log.jsonl")).unwrap(), "{\"seen\":1}\n{\"seen\":2}\n");
//! # std::fs::remove_dir_all(&dir).unwrap();
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::fs;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Temporary names within one process: with the process id, no two saves
/// (from any thread) stage into the same file.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// How many fresh temporary names [`stage`] tries before it gives up: a name
/// is taken only by a leftover of a crashed process that had the same id.
const TEMP_ATTEMPTS: u32 = 8;

/// How [`stage_with`] and [`write_atomic_with`] create the new file.
///
/// ```
/// use toolnexus::fs::WriteOptions;
/// let private = WriteOptions::new().mode(0o600);
/// assert_eq!(private.permissions(), Some(0o600));
/// assert_eq!(WriteOptions::default().permissions(), None);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteOptions {
    mode: Option<u32>,
}

impl WriteOptions {
    /// The defaults: a new file gets the usual permissions under the umask.
    ///
    /// ```
    /// assert_eq!(toolnexus::fs::WriteOptions::new(), Default::default());
    /// ```
    pub fn new() -> WriteOptions {
        WriteOptions::default()
    }

    /// Gives the new file exactly these Unix permission bits (the umask does
    /// not narrow them), such as the ones of the file it replaces. Ignored
    /// where the platform has no such bits.
    ///
    /// ```
    /// use toolnexus::fs::WriteOptions;
    /// assert_eq!(WriteOptions::new().mode(0o640).permissions(), Some(0o640));
    /// ```
    pub fn mode(mut self, mode: u32) -> WriteOptions {
        self.mode = Some(mode);
        self
    }

    /// The permission bits [`WriteOptions::mode`] set, if any.
    ///
    /// ```
    /// assert_eq!(toolnexus::fs::WriteOptions::new().permissions(), None);
    /// ```
    pub fn permissions(&self) -> Option<u32> {
        self.mode
    }
}

/// Which step of a write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The path names no file (it ends in `..` or is a root).
    NotAFile,
    /// Creating, writing or flushing the temporary file.
    Write,
    /// Renaming the temporary file over the old one.
    Replace,
}

/// Why a file could not be written or replaced: the step that failed and the
/// operating system's error beneath it. Its text names the step
/// (`cannot write: …`, `cannot replace: …`, `not a file path`) but not the
/// path, which the caller's own error adds.
///
/// ```
/// use toolnexus::fs::write_atomic;
/// let e = write_atomic("/nonexistent/dir/out.json", b"x").unwrap_err();
/// assert!(e.to_string().starts_with("cannot write: "), "{e}");
/// assert_eq!(e.io().kind(), std::io::ErrorKind::NotFound);
/// ```
#[derive(Debug)]
pub struct WriteError {
    step: Step,
    source: io::Error,
}

impl WriteError {
    fn new(step: Step, source: io::Error) -> WriteError {
        WriteError { step, source }
    }

    /// The operating system's error beneath (for a path that names no file,
    /// one of kind [`InvalidInput`](io::ErrorKind::InvalidInput)).
    ///
    /// ```
    /// let e = toolnexus::fs::write_atomic("/", b"x").unwrap_err();
    /// assert_eq!(e.io().kind(), std::io::ErrorKind::InvalidInput);
    /// assert_eq!(e.to_string(), "not a file path");
    /// ```
    pub fn io(&self) -> &io::Error {
        &self.source
    }
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.step {
            Step::NotAFile => f.write_str("not a file path"),
            Step::Write => write!(f, "cannot write: {}", self.source),
            Step::Replace => write!(f, "cannot replace: {}", self.source),
        }
    }
}

impl std::error::Error for WriteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// The operating system's error beneath, for callers that speak `io::Result`.
///
/// ```
/// let e = toolnexus::fs::write_atomic("/nonexistent/dir/out.json", b"x").unwrap_err();
/// let io: std::io::Error = e.into();
/// assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
/// ```
impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> io::Error {
        e.source
    }
}

/// The first half of a replacement: writes `bytes` to a fresh temporary file
/// beside `path` and flushes it to disk. `path` itself is untouched. Returns
/// the temporary file's path for [`commit`]; until then it is an ordinary
/// hidden file, as a crash would leave it.
///
/// ```
/// use toolnexus::fs::{commit, stage};
///
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-stage-{}", std::process::id()));
/// let temp = stage(&path, b"new")?;
/// assert_eq!(temp.parent(), path.parent(), "staged in the same directory");
/// assert!(!path.exists(), "nothing replaced yet");
/// commit(&temp, &path)?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"new");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::fs::WriteError>(())
/// ```
pub fn stage(path: impl AsRef<Path>, bytes: &[u8]) -> Result<PathBuf, WriteError> {
    stage_with(path, bytes, &WriteOptions::default())
}

/// [`stage`] with the new file created as `options` say.
///
/// ```
/// use toolnexus::fs::{WriteOptions, commit, stage_with};
///
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-stage-with-{}", std::process::id()));
/// let temp = stage_with(&path, b"secret", &WriteOptions::new().mode(0o600))?;
/// commit(&temp, &path)?;
/// #[cfg(unix)]
/// {
///     use std::os::unix::fs::PermissionsExt as _;
///     assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
/// }
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::fs::WriteError>(())
/// ```
pub fn stage_with(
    path: impl AsRef<Path>,
    bytes: &[u8],
    options: &WriteOptions,
) -> Result<PathBuf, WriteError> {
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| {
        WriteError::new(
            Step::NotAFile,
            io::Error::new(io::ErrorKind::InvalidInput, "not a file path"),
        )
    })?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut attempt = 0;
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(format!(
            ".{}.{}.{n}.tmp",
            name.to_string_lossy(),
            std::process::id()
        ));
        match create_new(&temp, options) {
            Ok(f) => {
                return match fill(f, bytes, options) {
                    Ok(()) => Ok(temp),
                    Err(e) => {
                        let _ = fs::remove_file(&temp);
                        Err(WriteError::new(Step::Write, e))
                    }
                };
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt + 1 < TEMP_ATTEMPTS => {
                attempt += 1;
            }
            Err(e) => return Err(WriteError::new(Step::Write, e)),
        }
    }
}

/// Creates `temp`, which must not exist yet, with the permissions asked for.
fn create_new(temp: &Path, options: &WriteOptions) -> io::Result<fs::File> {
    let mut open = fs::OpenOptions::new();
    open.write(true).create_new(true);
    #[cfg(unix)]
    if let Some(mode) = options.mode {
        use std::os::unix::fs::OpenOptionsExt as _;
        open.mode(mode & 0o777);
    }
    #[cfg(not(unix))]
    let _ = options;
    open.open(temp)
}

/// Writes `bytes`, sets the exact permissions (the umask narrowed those the
/// file was created with) and flushes the file to disk.
fn fill(mut f: fs::File, bytes: &[u8], options: &WriteOptions) -> io::Result<()> {
    f.write_all(bytes)?;
    #[cfg(unix)]
    if let Some(mode) = options.mode {
        use std::os::unix::fs::PermissionsExt as _;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    #[cfg(not(unix))]
    let _ = options;
    f.sync_all()
}

/// The second half of a replacement: renames the staged file over `path`,
/// then flushes the directory entry where the platform allows it. A failed
/// rename removes the staged file and leaves `path` as it was.
///
/// ```
/// use toolnexus::fs::{commit, stage};
///
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-commit-{}", std::process::id()));
/// std::fs::write(&path, "old").unwrap();
/// let temp = stage(&path, b"new")?;
/// commit(&temp, &path)?;
/// assert!(!temp.exists());
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::fs::WriteError>(())
/// ```
pub fn commit(temp: impl AsRef<Path>, path: impl AsRef<Path>) -> Result<(), WriteError> {
    let (temp, path) = (temp.as_ref(), path.as_ref());
    if let Err(e) = fs::rename(temp, path) {
        let _ = fs::remove_file(temp);
        return Err(WriteError::new(Step::Replace, e));
    }
    #[cfg(unix)]
    if let Some(dir) = temp.parent() {
        // Best effort: the rename is already visible; this makes it durable.
        let dir = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        if let Ok(d) = fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` so that a crash leaves either the old file or the
/// new one, never a mix: [`stage`], then [`commit`]. The way tapes, run files,
/// calibration and thresholds files, students and agent configurations are
/// saved.
///
/// ```
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-atomic-{}", std::process::id()));
/// toolnexus::fs::write_atomic(&path, b"one")?;
/// toolnexus::fs::write_atomic(&path, b"two")?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"two");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::fs::WriteError>(())
/// ```
pub fn write_atomic(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomic_with(path, bytes, &WriteOptions::default())
}

/// [`write_atomic`] with the new file created as `options` say (for example
/// with the permissions of the file it replaces).
///
/// ```
/// use toolnexus::fs::{WriteOptions, write_atomic_with};
///
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-atomic-with-{}", std::process::id()));
/// write_atomic_with(&path, b"{}", &WriteOptions::new().mode(0o640))?;
/// assert_eq!(std::fs::read(&path).unwrap(), b"{}");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), toolnexus::fs::WriteError>(())
/// ```
pub fn write_atomic_with(
    path: impl AsRef<Path>,
    bytes: &[u8],
    options: &WriteOptions,
) -> Result<(), WriteError> {
    let path = path.as_ref();
    let temp = stage_with(path, bytes, options)?;
    commit(&temp, path)
}

/// Appends `line` and a newline to the file at `path` (created if missing)
/// with one write, so lines appended at once by several writers do not
/// interleave. Not flushed to disk: for logs where a lost last line is
/// acceptable (a torn final line is what their readers skip).
///
/// ```
/// use toolnexus::fs::append_line;
///
/// let path = std::env::temp_dir().join(format!("toolnexus-doc-append-{}", std::process::id()));
/// append_line(&path, b"one")?;
/// append_line(&path, b"two")?;
/// assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn append_line(path: impl AsRef<Path>, line: &[u8]) -> io::Result<()> {
    let mut whole = Vec::with_capacity(line.len() + 1);
    whole.extend_from_slice(line);
    whole.push(b'\n');
    fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?
        .write_all(&whole)
}

#[cfg(test)]
mod tests;
