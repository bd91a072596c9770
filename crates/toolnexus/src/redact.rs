//! URLs as they may be shown: no credentials, no query. A leaf.

/// A URL as it may appear in a message: no `user:pass@`, no query, no fragment.
pub(crate) fn redact_url(url: &str) -> String {
    let cut = url.find(['?', '#']).map_or(url, |i| &url[..i]);
    match cut.find("://") {
        Some(i) => {
            let (scheme, rest) = cut.split_at(i + 3);
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}{host}{path}")
        }
        None => cut.to_string(),
    }
}
