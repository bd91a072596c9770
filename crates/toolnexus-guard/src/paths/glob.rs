//! Globs over absolute paths, as a policy's `paths` matcher writes them:
//! `*` and `?` within one path segment, `**` across any number of segments,
//! `{a,b}` alternatives, and a leading `~/`, `$HOME/` or `${HOME}/` for the
//! home directory. A glob that is not absolute, not under the home and does
//! not start with `**` is relative to the call's working directory.

/// A policy's path glob: its text and its alternatives (`{a,b}` expanded).
///
/// ```
/// use toolnexus_guard::paths::Glob;
/// let g = Glob::new("~/.ssh/{id_*,*.pem}");
/// assert!(g.matches("/home/dev/.ssh/id_ed25519", "/home/dev/p", Some("/home/dev")));
/// assert!(g.matches("/home/dev/.ssh/deploy.pem", "/home/dev/p", Some("/home/dev")));
/// assert!(!g.matches("/home/dev/.ssh/known_hosts", "/home/dev/p", Some("/home/dev")));
/// // A directory that holds what the glob names is reached by a recursive reader.
/// assert!(g.reaches("/home/dev", "/home/dev/p", Some("/home/dev")));
/// assert!(!g.reaches("/home/dev/p", "/home/dev/p", Some("/home/dev")));
/// assert!(Glob::new("**/.env").matches("/srv/app/.env", "/", None));
/// assert!(Glob::new("src/**").matches("/w/p/src/a/b.rs", "/w/p", None));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Glob {
    source: String,
    alternatives: Vec<String>,
}

impl Glob {
    /// A glob from its text (every text is a glob: unknown characters match themselves).
    pub fn new(source: &str) -> Glob {
        Glob {
            source: source.to_string(),
            alternatives: expand_braces(source),
        }
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        &self.source
    }

    /// Whether the absolute path `path` matches, the glob resolved against
    /// `cwd` and `home`.
    pub fn matches(&self, path: &str, cwd: &str, home: Option<&str>) -> bool {
        let target = segments(path);
        self.alternatives.iter().any(|alt| {
            anchor(alt, cwd, home).is_some_and(|a| match_segments(&segments(&a), &target, false))
        })
    }

    /// Whether something under the directory `dir` (or `dir` itself) could
    /// match: what a recursive reader (Grep, Glob, LS) of `dir` reaches.
    /// An alternative that starts with `**` could lie under any directory:
    /// it is reached by a directory that ends inside its literal part
    /// (`/home/u/.ssh` reaches `**/.ssh/id_*`), or by a path it matches.
    pub fn reaches(&self, dir: &str, cwd: &str, home: Option<&str>) -> bool {
        let target = segments(dir);
        self.alternatives.iter().any(|alt| {
            let Some(a) = anchor(alt, cwd, home) else {
                return false;
            };
            let glob = segments(&a);
            match glob.split_first() {
                Some((&"**", rest)) if !rest.is_empty() && rest[0] != "**" => {
                    match_segments(&glob, &target, false)
                        || (0..target.len()).any(|i| match_segments(rest, &target[i..], true))
                }
                _ => match_segments(&glob, &target, true),
            }
        })
    }
}

/// The glob made absolute: `~`, `$HOME`, `${HOME}` are the home (no home:
/// no match), `**…` stays, anything else not absolute is under `cwd`.
fn anchor(glob: &str, cwd: &str, home: Option<&str>) -> Option<String> {
    for prefix in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = glob.strip_prefix(prefix)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Some(format!("{}{rest}", home?.trim_end_matches('/')));
        }
    }
    if glob.starts_with('/') || glob.starts_with("**") {
        return Some(glob.to_string());
    }
    Some(format!("{}/{glob}", cwd.trim_end_matches('/')))
}

fn segments(p: &str) -> Vec<&str> {
    p.split('/').filter(|s| !s.is_empty()).collect()
}

/// Segment-wise matching; `**` takes any number of segments. With `prefix`,
/// a target that runs out while the glob still has segments matches (a
/// directory above what the glob names).
fn match_segments(glob: &[&str], target: &[&str], prefix: bool) -> bool {
    match glob.split_first() {
        None => target.is_empty(),
        Some((&"**", rest)) => {
            (0..=target.len()).any(|i| match_segments(rest, &target[i..], prefix))
        }
        Some((g, rest)) => match target.split_first() {
            None => prefix,
            Some((t, trest)) => {
                wildcard(g.as_bytes(), t.as_bytes()) && match_segments(rest, trest, prefix)
            }
        },
    }
}

/// `*` (any run) and `?` (one byte) within one segment.
fn wildcard(p: &[u8], t: &[u8]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == b'*' {
        pi += 1;
    }
    pi == p.len()
}

/// `{a,b}` alternatives expanded (nested and repeated groups too); an
/// unclosed brace is literal.
fn expand_braces(s: &str) -> Vec<String> {
    let Some(open) = s.find('{') else {
        return vec![s.to_string()];
    };
    let bytes = s.as_bytes();
    let mut depth = 0;
    let mut parts = Vec::new();
    let mut start = open + 1;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    parts.push(&s[start..i]);
                    let (head, tail) = (&s[..open], &s[i + 1..]);
                    let mut out = Vec::new();
                    for part in parts {
                        for inner in expand_braces(part) {
                            for rest in expand_braces(tail) {
                                out.push(format!("{head}{inner}{rest}"));
                            }
                        }
                    }
                    return out;
                }
            }
            b',' if depth == 1 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    vec![s.to_string()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_segments_and_expand_braces() {
        let home = Some("/home/u");
        let m = |g: &str, p: &str| Glob::new(g).matches(p, "/home/u/p", home);
        assert!(m("/", "/"));
        assert!(!m("/", "/etc"));
        assert!(m("/*", "/etc"));
        assert!(!m("/*", "/etc/x"));
        assert!(m("/etc/**", "/etc"));
        assert!(m("/etc/**", "/etc/a/b"));
        assert!(m("~", "/home/u"));
        assert!(m("$HOME/.aws/credentials", "/home/u/.aws/credentials"));
        assert!(m("${HOME}/.aws/*", "/home/u/.aws/config"));
        assert!(m("**/.env.*", "/x/y/.env.local"));
        assert!(m("**/id_?sa", "/a/.ssh/id_rsa"));
        assert!(m("**/*.{pem,p12}", "/a/b.p12"));
        assert!(m(".env", "/home/u/p/.env"));
        assert!(!m(".env", "/home/u/q/.env"));
        assert!(!Glob::new("~/.ssh/**").matches("/home/u/.ssh/id_rsa", "/", None));
        assert_eq!(expand_braces("a{b,c{d,e}}f"), ["abf", "acdf", "acef"]);
        assert_eq!(expand_braces("a{b"), ["a{b"]);
    }

    #[test]
    fn a_directory_reaches_what_lies_under_it() {
        let g = Glob::new("~/.ssh/id_*");
        let r = |d: &str| g.reaches(d, "/", Some("/home/u"));
        assert!(r("/"));
        assert!(r("/home"));
        assert!(r("/home/u/.ssh"));
        assert!(r("/home/u/.ssh/id_rsa"));
        assert!(!r("/home/u/src"));
        assert!(!Glob::new("**/.env").reaches("/anything", "/", None));
        assert!(Glob::new("**/.env").reaches("/p/.env", "/", None));
        assert!(Glob::new("**/.ssh/id_*").reaches("/home/x/.ssh", "/", None));
        assert!(!Glob::new("**/.ssh/id_*").reaches("/home/x", "/", None));
    }
}
