//! Reading and replacing an agent's configuration file safely: a lock that
//! makes concurrent changes wait for each other, one backup per file (the text
//! before the latest change), a refusal to replace a read-only file, and an
//! atomic replacement (a temporary file in the same directory, fsync'd,
//! renamed over the file) that keeps the file's permissions. A crash at any
//! point leaves the old file or the new one, never a torn one.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use anyhow::Result;
use toolnexus::fs::{WriteOptions, write_atomic_with};

use crate::exit;

/// A configuration file as it was read.
pub struct Config {
    /// Where it is written: the file itself, or what a symbolic link at the
    /// agent's path points to (the link is kept).
    pub path: PathBuf,
    /// Its text, or `None` when there is no such file yet.
    pub text: Option<String>,
    /// Its permission bits, kept on the new file and the backup.
    pub mode: Option<u32>,
}

/// Reads `path` (following a symbolic link). A missing file is `text: None`;
/// a directory, a file that is not UTF-8 or one that cannot be read is bad
/// input (exit 2), naming the file.
pub fn read(path: &Path) -> Result<Config> {
    let path = match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => match fs::canonicalize(path) {
            Ok(target) => target,
            // A dangling link: written through as a new file at its target.
            Err(_) => link_target(path),
        },
        _ => path.to_path_buf(),
    };
    let shown = path.display();
    match fs::metadata(&path) {
        Ok(m) if m.is_dir() => {
            return Err(exit::usage(format!("{shown}: is a directory, not a file")));
        }
        Ok(_) => {}
        // A missing file, or a missing directory on its way (a file in its
        // place fails when the directory is created, as a write failure).
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(Config {
                path,
                text: None,
                mode: None,
            });
        }
        Err(e) => return Err(exit::usage(format!("cannot read {shown}: {e}"))),
    }
    let bytes = fs::read(&path).map_err(|e| exit::usage(format!("cannot read {shown}: {e}")))?;
    let mode = fs::metadata(&path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777);
    let text = String::from_utf8(bytes).map_err(|e| {
        exit::usage(format!(
            "{shown}: not UTF-8 text (at byte {})",
            e.utf8_error().valid_up_to()
        ))
    })?;
    Ok(Config {
        path,
        text: Some(text),
        mode,
    })
}

/// Where a (dangling) symbolic link points, relative to its directory.
fn link_target(link: &Path) -> PathBuf {
    match fs::read_link(link) {
        Ok(t) if t.is_absolute() => t,
        Ok(t) => link.parent().map_or(t.clone(), |d| d.join(t)),
        Err(_) => link.to_path_buf(),
    }
}

/// Where the file's one backup is: `<file>.toolnexus.bak` beside it. A name of
/// toolnexus's own, so a user's `<file>.bak` is never touched.
pub fn backup_path(config: &Config) -> PathBuf {
    let mut name = config.path.as_os_str().to_owned();
    name.push(".toolnexus.bak");
    PathBuf::from(name)
}

/// Writes the file's old text to its one backup ([`backup_path`]), replacing
/// the backup of an earlier change atomically: the backup always holds the
/// file as it was before the latest change, and a file has one backup however
/// many runs change it. The copy has the file's permissions and is fsync'd.
pub fn backup(config: &Config, old: &str) -> io::Result<PathBuf> {
    let path = backup_path(config);
    let copy = Config {
        path: path.clone(),
        text: None,
        mode: Some(config.mode.unwrap_or(0o600)),
    };
    replace(&copy, old)?;
    Ok(path)
}

/// Why the file cannot be changed in place, if it cannot: read-only
/// permission bits (refused even where the directory would let a rename
/// replace it), or a file this process may not open for writing.
pub fn refuse_read_only(config: &Config) -> Option<String> {
    config.text.as_ref()?;
    let mode = config.mode?;
    if mode & 0o222 == 0 {
        return Some(format!("it is read-only (mode {:04o})", mode & 0o7777));
    }
    match OpenOptions::new().write(true).open(&config.path) {
        Ok(_) => None,
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            Some("this user may not write it".to_string())
        }
        Err(_) => None,
    }
}

/// Takes an exclusive advisory lock for changing the file at `path`, held
/// until the returned handle is dropped: a sidecar lock file
/// (`.<name>.toolnexus-lock`) beside it, because the file itself is replaced
/// by a rename and a lock on it would be left on the old copy. Another
/// toolnexus changing the same file waits. The directory is created when
/// `create`; without it, a missing directory is no lock (`None`: there is no
/// file to change).
pub fn lock(path: &Path, create: bool) -> io::Result<Option<File>> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        if !create {
            return Ok(None);
        }
        fs::create_dir_all(dir)?;
    }
    let name = path
        .file_name()
        .map_or("config".into(), |n| n.to_string_lossy());
    let lock = dir.join(format!(".{}.toolnexus-lock", name.trim_start_matches('.')));
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(lock)?;
    f.lock()?;
    Ok(Some(f))
}

/// Replaces the file with `text` atomically, keeping its permissions (a new
/// file gets the usual ones under the umask). Missing directories are created.
pub fn replace(config: &Config, text: &str) -> io::Result<()> {
    let path = &config.path;
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let options = match config.mode {
        Some(mode) => WriteOptions::new().mode(mode),
        None => WriteOptions::new(),
    };
    write_atomic_with(path, text.as_bytes(), &options)?;
    Ok(())
}
