//! Paths as the guard reads them, without touching the file system: a tool's
//! path argument made absolute against the call's cwd, and a policy's own
//! paths resolved against the home directory or the policy file's directory.

use std::path::{Path, PathBuf};

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
pub(crate) fn resolve(p: &str, base: Option<&Path>) -> PathBuf {
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
    fn a_policy_path_is_its_files_neighbour() {
        assert_eq!(
            resolve("log.jsonl", Some(Path::new("/etc/tn"))),
            PathBuf::from("/etc/tn/log.jsonl")
        );
        assert_eq!(
            resolve("/var/x", Some(Path::new("/etc"))),
            PathBuf::from("/var/x")
        );
    }
}
