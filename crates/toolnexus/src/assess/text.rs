//! Terminal tables: columns padded to their widest cell.

/// `header` and `rows` as aligned columns two spaces apart; columns for which
/// `right` holds are right-aligned (figures), the others left-aligned, and the
/// last column is never padded.
pub(crate) fn columns(
    header: &[&str],
    rows: &[Vec<String>],
    right: impl Fn(usize) -> bool,
) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut l = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(c.chars().count());
            if i + 1 == cells.len() {
                l.push_str(c);
            } else if right(i) {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                l.push_str(&" ".repeat(pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for r in rows {
        line(r);
    }
    out
}

/// A share as a percentage with one decimal.
pub(crate) fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// A figure with three decimals.
pub(crate) fn f3(x: f64) -> String {
    format!("{x:.3}")
}

/// `f` of a figure, or a dash when it is undefined.
pub(crate) fn opt(x: Option<f64>, f: impl Fn(f64) -> String) -> String {
    x.map_or_else(|| "—".to_string(), f)
}

/// Milliseconds with the digits that matter: `12 ms`, `3.4 ms`, `0.021 ms`.
pub(crate) fn ms(x: f64) -> String {
    if x >= 10.0 {
        format!("{x:.0} ms")
    } else if x >= 1.0 {
        format!("{x:.1} ms")
    } else {
        format!("{x:.3} ms")
    }
}
