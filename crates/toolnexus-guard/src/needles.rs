//! The literals every match of a rule's expression starts with. Shared by the
//! policy reader and the build script, which works them out for the built-in
//! policy once, at build time, so a hook does not parse 60 expressions per call.

/// The literals every match of `source` starts with, when there are at most 400
/// of them and none is empty (case-insensitive parts are expanded to their
/// spellings); `None` when no such small set exists (or `source` does not parse).
pub fn needles(source: &str) -> Option<Vec<Vec<u8>>> {
    use regex_syntax::hir::literal::{ExtractKind, Extractor};
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(source)
        .ok()?;
    let mut seq = Extractor::new()
        .kind(ExtractKind::Prefix)
        .limit_total(400)
        .extract(&hir);
    seq.minimize_by_preference();
    let lits = seq.literals()?;
    if lits.is_empty() || lits.iter().any(|l| l.as_bytes().is_empty()) {
        return None;
    }
    Some(lits.iter().map(|l| l.as_bytes().to_vec()).collect())
}
