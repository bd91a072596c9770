//! A project's own guard policy: `.toolnexus/guard.json`, found from the
//! call's cwd upward (to the file system's root, or to the directory that
//! holds `.git`). It may add rules (never replace or remove one) and an
//! `allow` list of the commands the project expects, which waives the
//! judge's ask for a call that runs only those, never a rule's ask or deny.
//!
//! ```
//! use toolnexus_guard::policy::project::Project;
//! let p = Project::parse(
//!     r#"{"toolnexus":"guard-policy","version":2,"allow":["make","cargo test"],
//!         "rules":[{"id":"no-prod","commands":["kubectl"],"args":"prod","verdict":"deny","why":"production"}]}"#,
//!     std::path::Path::new("/w/p/.toolnexus/guard.json"),
//! )?;
//! assert_eq!((p.allow.len(), p.rules.len()), (2, 1));
//! let e = Project::parse(r#"{"toolnexus":"guard-policy","version":2,"on_error":"ask"}"#, std::path::Path::new("g.json")).unwrap_err();
//! assert!(e.to_string().starts_with("on_error: a project policy may only add rules and allow"));
//! # Ok::<(), toolnexus_guard::PolicyError>(())
//! ```

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::fields::{PolicyError, err, string_list};
use crate::json;
use crate::rules::{Rule, parse_rules};

/// The file, relative to a project's directory.
pub const FILE: &str = ".toolnexus/guard.json";

/// A project's policy, read.
#[derive(Debug, Clone)]
pub struct Project {
    /// Where it was found.
    pub path: PathBuf,
    /// The rules it adds.
    pub rules: Vec<Rule>,
    /// The commands it expects (`make`, `cargo test`): a call that runs only
    /// these has the judge's ask waived.
    pub allow: Vec<String>,
}

/// The project policy that applies at `cwd`, if any: the nearest
/// `.toolnexus/guard.json` upward, not above the directory holding `.git`.
///
/// ```
/// let dir = std::env::temp_dir().join(format!("toolnexus-guard-doc-find-{}", std::process::id()));
/// std::fs::create_dir_all(dir.join("repo/.git"))?;
/// std::fs::create_dir_all(dir.join("repo/.toolnexus"))?;
/// std::fs::create_dir_all(dir.join("repo/src"))?;
/// std::fs::write(dir.join("repo/.toolnexus/guard.json"), "{}")?;
/// let found = toolnexus_guard::policy::project::find(&dir.join("repo/src"));
/// assert_eq!(found, Some(dir.join("repo/.toolnexus/guard.json")));
/// # std::fs::remove_dir_all(&dir).ok();
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn find(cwd: &Path) -> Option<PathBuf> {
    let mut at = Some(cwd);
    while let Some(dir) = at {
        let candidate = dir.join(FILE);
        if candidate.is_file() {
            return Some(candidate);
        }
        if dir.join(".git").exists() {
            return None;
        }
        at = dir.parent();
    }
    None
}

impl Project {
    /// Reads the project policy at `path`.
    pub fn load(path: &Path) -> Result<Project, PolicyError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| err("", format!("cannot read {}: {e}", path.display())))?;
        Project::parse(&text, path)
    }

    /// Parses a project policy's text (`path` is where it lives).
    pub fn parse(text: &str, path: &Path) -> Result<Project, PolicyError> {
        let v = json::parse_strict(text).map_err(|e| err("", format!("not JSON: {e}")))?;
        let o = v
            .as_object()
            .ok_or_else(|| err("", "a project policy is a JSON object"))?;
        for k in o.keys() {
            if !["toolnexus", "version", "rules", "allow"].contains(&k.as_str())
                && !k.starts_with('_')
                && !k.starts_with("x_")
            {
                return Err(err(
                    k.clone(),
                    "a project policy may only add rules and allow commands (known: toolnexus, version, rules, allow); the rest is the user's policy",
                ));
            }
        }
        if o.get("toolnexus").and_then(Value::as_str) != Some("guard-policy") {
            return Err(err("toolnexus", "must be \"guard-policy\""));
        }
        let version = match o.get("version").and_then(Value::as_u64) {
            Some(n @ (1 | 2)) => n,
            _ => return Err(err("version", "must be 1 or 2")),
        };
        let rules = match o.get("rules") {
            None => Vec::new(),
            Some(r) => parse_rules("rules", r, true, version)?,
        };
        for (i, r) in rules.iter().enumerate() {
            for p in [&r.tools, &r.pattern, &r.unless, &r.unless_path, &r.args]
                .into_iter()
                .flatten()
            {
                p.check()
                    .map_err(|e| err(format!("rules[{i}] ({})", r.id), e.to_string()))?;
            }
        }
        let allow = match o.get("allow") {
            None => Vec::new(),
            Some(a) => string_list("allow", a)?
                .into_iter()
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect(),
        };
        Ok(Project {
            path: path.to_path_buf(),
            rules,
            allow,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_file_upward_applies_and_the_search_stops_at_the_repository() {
        let d =
            std::env::temp_dir().join(format!("toolnexus-guard-project-{}", std::process::id()));
        let repo = d.join("outer/repo");
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::create_dir_all(d.join("outer/.toolnexus")).unwrap();
        std::fs::write(d.join("outer").join(FILE), "{}").unwrap();
        // Without a repository the search goes up to outer's file.
        assert_eq!(
            find(&repo.join("src/deep")),
            Some(d.join("outer").join(FILE))
        );
        // A repository's root is as far as it goes.
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        assert_eq!(find(&repo.join("src/deep")), None);
        std::fs::create_dir_all(repo.join(".toolnexus")).unwrap();
        std::fs::write(repo.join(FILE), "{}").unwrap();
        assert_eq!(find(&repo.join("src/deep")), Some(repo.join(FILE)));
        std::fs::remove_dir_all(&d).ok();
    }
}
