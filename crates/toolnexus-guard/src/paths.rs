//! Paths as the guard reads them: a tool's path argument made absolute
//! against the call's cwd (lexically, and [`resolve`]d through `~`, `$HOME`
//! and the symlinks that exist), a policy's own paths resolved against the
//! home directory or the policy file's directory, and the [`Glob`]s a
//! policy's `paths` matcher writes.

use std::path::{Path, PathBuf};

mod glob;

pub use glob::Glob;

/// A path as a call reaches it: as written, made absolute lexically, and
/// through the symlinks that exist (the longest existing prefix resolved by
/// the file system). A rule on paths matches either form, so neither a
/// symlink nor a `..` walks past it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached {
    /// The word as the call wrote it.
    pub written: String,
    /// Absolute, `~`/`$HOME` expanded, `.` and `..` resolved lexically.
    pub lexical: String,
    /// `lexical` through the symlinks that exist (equal to it when none).
    pub real: String,
}

/// The home directory (`$HOME`), when set and not empty.
///
/// ```
/// if let Some(h) = toolnexus_guard::paths::home() {
///     assert!(!h.is_empty());
/// }
/// ```
pub fn home() -> Option<String> {
    std::env::var("HOME").ok().filter(|h| !h.is_empty())
}

/// `p` as the call at `cwd` reaches it, with `home` for `~` and `$HOME`. A
/// Windows path (`C:\Users\…`) is read with `/` for each backslash.
///
/// ```
/// use toolnexus_guard::paths::resolve;
/// let r = resolve("/home/dev/p", Some("/home/dev"), "~/.ssh/../.aws/credentials");
/// assert_eq!(r.lexical, "/home/dev/.aws/credentials");
/// assert_eq!(resolve("/w", Some("/h"), "${HOME}/x").lexical, "/h/x");
/// assert_eq!(resolve("/w/p", None, "../q").lexical, "/w/q");
/// assert_eq!(resolve("/w", None, "https://x/y").lexical, "https://x/y");
/// assert_eq!(resolve("/w", None, r"C:\Users\me\.ssh\id_rsa").lexical, "C:/Users/me/.ssh/id_rsa");
/// ```
pub fn resolve(cwd: &str, home: Option<&str>, p: &str) -> Reached {
    let written = p.to_string();
    // A URL, or `-` for standard input, names no file here.
    if p == "-" || p.contains("://") {
        return Reached {
            lexical: written.clone(),
            real: written.clone(),
            written,
        };
    }
    let windows = p.len() > 2 && p.as_bytes()[1] == b':' && p.as_bytes()[0].is_ascii_alphabetic();
    let mut text = if windows || p.starts_with("\\\\") {
        p.replace('\\', "/")
    } else {
        p.to_string()
    };
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = text.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
            && let Some(h) = home
        {
            text = format!("{}{rest}", h.trim_end_matches('/'));
            break;
        }
    }
    if windows {
        let (drive, rest) = text.split_at(2);
        let lexical = format!("{drive}{}", absolute("/", rest));
        return Reached {
            written,
            real: lexical.clone(),
            lexical,
        };
    }
    // `~user/…`: another user's home, read as Linux lays it out.
    if let Some(rest) = text.strip_prefix('~') {
        text = format!("/home/{rest}");
    }
    let lexical = absolute(cwd, &text);
    let real = real_path(&lexical);
    Reached {
        written,
        lexical,
        real,
    }
}

/// `abs` through the symlinks that exist: the longest existing prefix
/// canonicalised by the file system, the rest appended as written.
fn real_path(abs: &str) -> String {
    let path = Path::new(abs);
    let mut tail: Vec<&std::ffi::OsStr> = Vec::new();
    let mut at = Some(path);
    while let Some(p) = at {
        if let Ok(real) = std::fs::canonicalize(p) {
            let mut out = real;
            for part in tail.iter().rev() {
                out.push(part);
            }
            return out.to_string_lossy().into_owned();
        }
        match p.file_name() {
            Some(name) => tail.push(name),
            None => break,
        }
        at = p.parent();
    }
    abs.to_string()
}

/// `p` made absolute against `cwd` and normalised lexically (`.` and `..`
/// resolved; the file system is not consulted). `~` stays as written, which
/// is outside any cwd.
///
/// ```
/// use toolnexus_guard::paths::{absolute, inside};
/// assert_eq!(absolute("/home/a/p", "../q/x"), "/home/a/q/x");
/// assert!(inside("/home/a/p", &absolute("/home/a/p", "src/x.rs")));
/// assert!(!inside("/home/a/p", &absolute("/home/a/p", "~/.ssh/id_rsa")));
/// ```
pub fn absolute(cwd: &str, p: &str) -> String {
    let joined = if p.starts_with('/') || p.starts_with('~') {
        p.to_string()
    } else {
        format!("{}/{p}", cwd.trim_end_matches('/'))
    };
    if joined.starts_with('~') {
        return joined;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    format!("/{}", parts.join("/"))
}

/// Whether the absolute path `abs` is `cwd` or lies under it (see [`absolute`]).
pub fn inside(cwd: &str, abs: &str) -> bool {
    let root = absolute("/", cwd);
    let root = root.trim_end_matches('/');
    abs == root || root.is_empty() || abs.starts_with(&format!("{root}/"))
}

/// A path from a policy: `~/` is the home directory (and `~/.local/state/…`
/// is under `$XDG_STATE_HOME` when that is set); relative paths are the
/// policy file's neighbours (`base`).
pub(crate) fn policy_path(p: &str, base: Option<&Path>) -> PathBuf {
    if let Some(rest) = p.strip_prefix("~/") {
        if let Some(rest) = rest.strip_prefix(".local/state/")
            && let Some(state) = std::env::var_os("XDG_STATE_HOME").filter(|s| !s.is_empty())
        {
            return PathBuf::from(state).join(rest);
        }
        if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            return PathBuf::from(home).join(rest);
        }
    }
    let path = PathBuf::from(p);
    match base {
        Some(b) if path.is_relative() => b.join(path),
        _ => path,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_resolved_lexically_against_the_cwd() {
        assert_eq!(absolute("/home/a/p", "src/x.rs"), "/home/a/p/src/x.rs");
        assert_eq!(absolute("/home/a/p", "../q/x"), "/home/a/q/x");
        assert!(inside("/home/a/p", "/home/a/p/src"));
        assert!(!inside("/home/a/p", "/home/a/pq/src"));
        assert!(!inside(
            "/home/a/p",
            &absolute("/home/a/p", "~/.ssh/id_rsa")
        ));
    }

    #[test]
    fn a_symlink_is_read_as_what_it_points_to() {
        let dir =
            std::env::temp_dir().join(format!("toolnexus-guard-paths-{}", std::process::id()));
        let secret = dir.join("home/.ssh");
        std::fs::create_dir_all(&secret).unwrap();
        std::fs::write(secret.join("id_rsa"), "k").unwrap();
        let project = dir.join("p");
        std::fs::create_dir_all(&project).unwrap();
        let link = project.join("notes.txt");
        std::os::unix::fs::symlink(secret.join("id_rsa"), &link).unwrap();
        let cwd = project.to_string_lossy().into_owned();
        let r = resolve(&cwd, None, "notes.txt");
        assert!(r.lexical.ends_with("/p/notes.txt"), "{r:?}");
        assert!(r.real.ends_with("/home/.ssh/id_rsa"), "{r:?}");
        // A path that does not exist yet keeps its tail under the real prefix.
        let r = resolve(&cwd, None, "new/file.txt");
        assert!(r.real.ends_with("/p/new/file.txt"), "{r:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn a_policy_path_is_its_files_neighbour() {
        assert_eq!(
            policy_path("log.jsonl", Some(Path::new("/etc/tn"))),
            PathBuf::from("/etc/tn/log.jsonl")
        );
        assert_eq!(
            policy_path("/var/x", Some(Path::new("/etc"))),
            PathBuf::from("/var/x")
        );
    }
}
