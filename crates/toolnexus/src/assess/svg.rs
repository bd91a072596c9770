//! SVG charts and the HTML page.
//!
//! Pure string builders for the assess report. Every chart is one standalone
//! `<svg>` element with a fixed `width`, `height` and `viewBox`, no external
//! assets and no scripts. Its root and its marks carry `class` and `data-*`
//! attributes holding the figures drawn, so a test (or a reader of the page
//! source) can read the numbers back without measuring pixels. Numbers are
//! printed with at most four decimals, so the output is a deterministic function
//! of the input. All text is escaped with [`escape`].

use std::fmt::Write as _;

use super::metrics::Bin;

/// `write!` into a `String`, which cannot fail.
macro_rules! w {
    ($out:expr, $($arg:tt)*) => {{
        let _ = write!($out, $($arg)*);
    }};
}

const SVG_NS: &str = "http://www.w3.org/2000/svg";
const INK: &str = "#1a202c";
const MUTED: &str = "#4a5568";
const GRID: &str = "#e2e8f0";
const FRAME: &str = "#a0aec0";
const BAR: &str = "#4c78a8";
const ACCENT: &str = "#e45756";
const DIAGONAL: &str = "#718096";
/// The darkest shade of a confusion cell (a row's whole mass).
const HEAT: (f64, f64, f64) = (33.0, 102.0, 172.0);
/// Longest axis label of the confusion grid, in characters (with the ellipsis).
const LABEL_CHARS: usize = 16;
/// Above this many labels the confusion grid shrinks and drops in-cell numbers.
const CONFUSION_DENSE: usize = 30;

/// One section of [`page`]: a heading (plain text, escaped) and a block of HTML
/// (trusted: charts and tables built by this module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    /// Plain-text heading.
    pub heading: String,
    /// HTML body, inserted as is.
    pub html: String,
}

/// Escapes `& < > " '` for HTML and XML text and attribute values. Control
/// characters that XML 1.0 cannot carry at all (C0 other than tab, newline and
/// carriage return, and U+FFFE/U+FFFF) become U+FFFD, so the output always parses.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// A number with at most four decimals and no trailing zeros; `-0` and
/// non-finite values print as `0`.
fn num(x: f64) -> String {
    if !x.is_finite() {
        return "0".to_owned();
    }
    let mut s = format!("{x:.4}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    if s == "-0" {
        s = "0".to_owned();
    }
    s
}

/// `x` clamped into `[0, 1]`; NaN counts as 0.
fn unit(x: f64) -> f64 {
    if x.is_nan() { 0.0 } else { x.clamp(0.0, 1.0) }
}

/// At most `max` characters of `s`, the last one an ellipsis when cut.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Opens the root element: namespace, size, class, `data-*` attributes, the
/// `<title>`, a white background and the visible heading.
fn open(
    out: &mut String,
    class: &str,
    width: f64,
    height: f64,
    data: &[(&str, String)],
    title: &str,
) {
    let (w, h) = (num(width), num(height));
    w!(
        out,
        r#"<svg xmlns="{SVG_NS}" width="{w}" height="{h}" viewBox="0 0 {w} {h}" class="{class}""#
    );
    for (name, value) in data {
        w!(out, r#" data-{name}="{}""#, escape(value));
    }
    w!(
        out,
        r#" role="img" font-family="sans-serif" font-size="12">"#
    );
    w!(out, "<title>{}</title>", escape(title));
    w!(
        out,
        r##"<rect class="background" x="0" y="0" width="{w}" height="{h}" fill="#ffffff"/>"##
    );
    // About 7.5 px per character of 14 px bold text.
    let fits = ((width - 24.0) / 7.5).max(8.0) as usize;
    w!(
        out,
        r#"<text class="heading" x="12" y="22" font-size="14" font-weight="bold" fill="{INK}">{}</text>"#,
        escape(&truncate(title, fits))
    );
}

/// A line of muted explanatory text under the heading.
fn note(out: &mut String, text: &str) {
    w!(
        out,
        r#"<text class="note" x="12" y="40" font-size="11" fill="{MUTED}">{}</text>"#,
        escape(text)
    );
}

/// Centred "no data" in the plot area.
fn no_data(out: &mut String, x: f64, y: f64) {
    w!(
        out,
        r#"<text class="no-data" x="{}" y="{}" text-anchor="middle" font-size="13" fill="{MUTED}">no data</text>"#,
        num(x),
        num(y)
    );
}

/// A plot area in pixels.
#[derive(Debug, Clone, Copy)]
struct Frame {
    x0: f64,
    y0: f64,
    w: f64,
    h: f64,
}

impl Frame {
    fn bottom(&self) -> f64 {
        self.y0 + self.h
    }

    fn right(&self) -> f64 {
        self.x0 + self.w
    }

    /// Pixel x of `v` on a `[0, 1]` axis.
    fn px(&self, v: f64) -> f64 {
        self.x0 + unit(v) * self.w
    }

    /// Pixel y of `v` on a `[lo, 1]` axis.
    fn py(&self, v: f64, lo: f64) -> f64 {
        let t = if lo < 1.0 {
            ((v - lo) / (1.0 - lo)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        self.bottom() - t * self.h
    }

    /// Grid lines, tick labels, the frame and the axis titles. Ticks are
    /// `(pixel position, label)`.
    fn axes(
        &self,
        out: &mut String,
        xticks: &[(f64, String)],
        yticks: &[(f64, String)],
        xlabel: &str,
        ylabel: &str,
    ) {
        out.push_str(r#"<g class="axes">"#);
        for (x, label) in xticks {
            let x = num(*x);
            w!(
                out,
                r#"<line class="grid" x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="{GRID}" stroke-width="1"/>"#,
                num(self.y0),
                num(self.bottom())
            );
            w!(
                out,
                r#"<text class="tick" x="{x}" y="{}" text-anchor="middle" font-size="11" fill="{MUTED}">{}</text>"#,
                num(self.bottom() + 16.0),
                escape(label)
            );
        }
        for (y, label) in yticks {
            let y = num(*y);
            w!(
                out,
                r#"<line class="grid" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{GRID}" stroke-width="1"/>"#,
                num(self.x0),
                num(self.right())
            );
            w!(
                out,
                r#"<text class="tick" x="{}" y="{y}" dy="0.35em" text-anchor="end" font-size="11" fill="{MUTED}">{}</text>"#,
                num(self.x0 - 6.0),
                escape(label)
            );
        }
        w!(
            out,
            r#"<rect class="frame" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="{FRAME}" stroke-width="1"/>"#,
            num(self.x0),
            num(self.y0),
            num(self.w),
            num(self.h)
        );
        w!(
            out,
            r#"<text class="axis-label" x="{}" y="{}" text-anchor="middle" fill="{INK}">{}</text>"#,
            num(self.x0 + self.w / 2.0),
            num(self.bottom() + 38.0),
            escape(xlabel)
        );
        let (lx, ly) = (num(16.0), num(self.y0 + self.h / 2.0));
        w!(
            out,
            r#"<text class="axis-label" x="{lx}" y="{ly}" text-anchor="middle" transform="rotate(-90 {lx} {ly})" fill="{INK}">{}</text>"#,
            escape(ylabel)
        );
        out.push_str("</g>");
    }
}

/// Ticks at 0, 0.5 and 1 of a unit x axis.
fn unit_xticks(f: &Frame) -> Vec<(f64, String)> {
    [0.0, 0.5, 1.0].iter().map(|&v| (f.px(v), num(v))).collect()
}

/// Reliability diagram: confidence against observed frequency, one bar per
/// non-empty bin (from `lo` to `hi`, as high as `observed`) with a dot at
/// `(mean_confidence, observed)` and the bin's count above it, over the diagonal
/// of perfect calibration.
///
/// Root: `class="reliability" data-n="<total count>" data-bins="<bins drawn>"`;
/// bars: `<rect class="bin" data-count data-lo data-hi data-observed
/// data-mean-confidence>`.
pub(crate) fn reliability(title: &str, bins: &[Bin]) -> String {
    let (width, height) = (480.0, 440.0);
    let f = Frame {
        x0: 64.0,
        y0: 56.0,
        w: 380.0,
        h: 320.0,
    };
    let n: usize = bins.iter().map(|b| b.count).sum();
    let drawn: Vec<&Bin> = bins.iter().filter(|b| b.count > 0).collect();
    let mut out = String::new();
    open(
        &mut out,
        "reliability",
        width,
        height,
        &[("n", n.to_string()), ("bins", drawn.len().to_string())],
        title,
    );
    note(
        &mut out,
        "bars: observed frequency per bin · dots: mean confidence · dashed: perfect calibration",
    );
    let yticks: Vec<(f64, String)> = [0.0, 0.5, 1.0]
        .iter()
        .map(|&v| (f.py(v, 0.0), num(v)))
        .collect();
    f.axes(
        &mut out,
        &unit_xticks(&f),
        &yticks,
        "confidence",
        "observed frequency",
    );

    let font = if drawn.len() > 20 { 8 } else { 10 };
    out.push_str(r#"<g class="bins">"#);
    for b in &drawn {
        let (lo, hi) = (unit(b.lo.min(b.hi)), unit(b.lo.max(b.hi)));
        let x = f.px(lo);
        let bar_w = (f.px(hi) - x).max(1.0);
        let observed = unit(b.observed);
        // A bin that was never right still shows as a 1 px stub.
        let bar_h = (observed * f.h).max(1.0);
        let top = f.bottom() - bar_h;
        w!(
            out,
            r#"<rect class="bin" data-count="{}" data-lo="{}" data-hi="{}" data-observed="{}" data-mean-confidence="{}" x="{}" y="{}" width="{}" height="{}" fill="{BAR}" fill-opacity="0.45" stroke="{BAR}" stroke-width="1"/>"#,
            b.count,
            num(b.lo),
            num(b.hi),
            num(b.observed),
            num(b.mean_confidence),
            num(x),
            num(top),
            num(bar_w),
            num(bar_h)
        );
        w!(
            out,
            r#"<text class="count" x="{}" y="{}" text-anchor="middle" font-size="{font}" fill="{MUTED}">{}</text>"#,
            num(x + bar_w / 2.0),
            num(top - 4.0),
            b.count
        );
    }
    out.push_str("</g>");
    w!(
        out,
        r#"<line class="diagonal" x1="{}" y1="{}" x2="{}" y2="{}" stroke="{DIAGONAL}" stroke-width="1.5" stroke-dasharray="5 4"/>"#,
        num(f.px(0.0)),
        num(f.py(0.0, 0.0)),
        num(f.px(1.0)),
        num(f.py(1.0, 0.0))
    );
    out.push_str(r#"<g class="means">"#);
    for b in &drawn {
        w!(
            out,
            r##"<circle class="mean" cx="{}" cy="{}" r="3.5" fill="{ACCENT}" stroke="#ffffff" stroke-width="1"/>"##,
            num(f.px(b.mean_confidence)),
            num(f.py(unit(b.observed), 0.0))
        );
    }
    out.push_str("</g>");
    if drawn.is_empty() {
        no_data(&mut out, f.x0 + f.w / 2.0, f.y0 + f.h / 2.0);
    }
    out.push_str("</svg>");
    out
}

/// Selective accuracy against coverage: the `(coverage, accuracy)` points as a
/// polyline sorted by coverage, the chosen operating point as a circle and the
/// target accuracy as a dashed horizontal line. Values are clamped into
/// `[0, 1]` (NaN as 0). The accuracy axis starts at the tenth below the lowest
/// accuracy or target shown (at most 0.9), so a curve near 1 stays readable.
///
/// Root: `class="risk-coverage" data-points="<len>" data-y-min`; marks:
/// `<polyline class="curve">`, `<circle class="chosen" data-coverage
/// data-accuracy>`, `<line class="target" data-target>`.
pub(crate) fn risk_coverage(
    title: &str,
    points: &[(f64, f64)],
    chosen: Option<(f64, f64)>,
    target: Option<f64>,
) -> String {
    let (width, height) = (480.0, 440.0);
    let f = Frame {
        x0: 64.0,
        y0: 56.0,
        w: 380.0,
        h: 320.0,
    };
    let mut pts: Vec<(f64, f64)> = points.iter().map(|&(c, a)| (unit(c), unit(a))).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    let lowest = pts
        .iter()
        .map(|p| p.1)
        .chain(chosen.map(|c| unit(c.1)))
        .chain(target.map(unit))
        .fold(f64::INFINITY, f64::min);
    let ylo = if lowest.is_finite() {
        ((lowest * 10.0).floor() / 10.0).clamp(0.0, 0.9)
    } else {
        0.0
    };

    let mut data = vec![("points", points.len().to_string()), ("y-min", num(ylo))];
    if let Some(t) = target {
        data.push(("target", num(t)));
    }
    let mut out = String::new();
    open(&mut out, "risk-coverage", width, height, &data, title);
    note(
        &mut out,
        "curve: accuracy on the rows kept · dot: chosen operating point · dashed: target",
    );
    let mid = (ylo + 1.0) / 2.0;
    let yticks: Vec<(f64, String)> = [ylo, mid, 1.0]
        .iter()
        .map(|&v| (f.py(v, ylo), num(v)))
        .collect();
    f.axes(
        &mut out,
        &unit_xticks(&f),
        &yticks,
        "coverage (share of rows kept)",
        "selective accuracy",
    );

    if let Some(t) = target {
        let y = num(f.py(unit(t), ylo));
        w!(
            out,
            r#"<line class="target" data-target="{}" x1="{}" y1="{y}" x2="{}" y2="{y}" stroke="{ACCENT}" stroke-width="1.5" stroke-dasharray="6 4"/>"#,
            num(t),
            num(f.x0),
            num(f.right())
        );
        w!(
            out,
            r#"<text class="target-label" x="{}" y="{}" text-anchor="end" font-size="11" fill="{ACCENT}">target {}</text>"#,
            num(f.right() - 4.0),
            num(f.py(unit(t), ylo) - 5.0),
            num(t)
        );
    }
    if pts.is_empty() {
        no_data(&mut out, f.x0 + f.w / 2.0, f.y0 + f.h / 2.0);
    } else {
        let coords: Vec<String> = pts
            .iter()
            .map(|&(c, a)| format!("{},{}", num(f.px(c)), num(f.py(a, ylo))))
            .collect();
        w!(
            out,
            r#"<polyline class="curve" points="{}" fill="none" stroke="{BAR}" stroke-width="2" stroke-linejoin="round" stroke-linecap="round"/>"#,
            coords.join(" ")
        );
        if let [(c, a)] = pts[..] {
            w!(
                out,
                r#"<circle class="point" cx="{}" cy="{}" r="3" fill="{BAR}"/>"#,
                num(f.px(c)),
                num(f.py(a, ylo))
            );
        }
    }
    if let Some((c, a)) = chosen {
        let (cx, cy) = (f.px(c), f.py(unit(a), ylo));
        w!(
            out,
            r##"<circle class="chosen" data-coverage="{}" data-accuracy="{}" cx="{}" cy="{}" r="5" fill="{ACCENT}" stroke="#ffffff" stroke-width="1.5"/>"##,
            num(c),
            num(a),
            num(cx),
            num(cy)
        );
        let (lx, anchor) = if unit(c) > 0.5 {
            (cx - 9.0, "end")
        } else {
            (cx + 9.0, "start")
        };
        let ly = if cy - 9.0 < f.y0 + 12.0 {
            cy + 18.0
        } else {
            cy - 9.0
        };
        w!(
            out,
            r#"<text class="chosen-label" x="{}" y="{}" text-anchor="{anchor}" font-size="11" fill="{INK}">coverage {}, accuracy {}</text>"#,
            num(lx),
            num(ly),
            num(unit(c)),
            num(unit(a))
        );
    }
    out.push_str("</svg>");
    out
}

/// `#rrggbb` between white (`share` 0) and [`HEAT`] (`share` 1).
fn heat(share: f64) -> String {
    let t = unit(share);
    let mix = |to: f64| (255.0 + (to - 255.0) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(HEAT.0), mix(HEAT.1), mix(HEAT.2))
}

/// Confusion heat map: rows are gold labels, columns predicted ones, each cell
/// shaded by its share of the gold row and, up to 30 labels, labelled with its
/// count. The grid is as large as the longest of `labels`, `counts` and any row
/// of `counts` (missing labels show as `#i`, missing counts as 0), so no count is
/// dropped. Axis labels are cut to 16 characters.
///
/// Root: `class="confusion" data-n="<total>" data-labels="<k>"`; cells:
/// `<rect class="cell" data-gold data-pred data-count>`.
pub(crate) fn confusion(title: &str, labels: &[String], counts: &[Vec<usize>]) -> String {
    let k = counts
        .iter()
        .map(Vec::len)
        .chain([labels.len(), counts.len()])
        .max()
        .unwrap_or(0);
    let count = |i: usize, j: usize| counts.get(i).and_then(|r| r.get(j)).copied().unwrap_or(0);
    let name = |i: usize| match labels.get(i) {
        Some(l) => truncate(l, LABEL_CHARS),
        None => format!("#{i}"),
    };
    let full_name = |i: usize| labels.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
    let n: usize = (0..k)
        .map(|i| (0..k).map(|j| count(i, j)).sum::<usize>())
        .sum();
    let dense = k > CONFUSION_DENSE;
    let cell = if dense {
        (720.0 / k as f64).clamp(3.0, 12.0)
    } else if k <= 12 {
        36.0
    } else {
        26.0
    };
    let label_font = if dense {
        (cell * 0.9).clamp(2.5, 10.0)
    } else {
        11.0
    };
    let longest = (0..k).map(|i| name(i).chars().count()).max().unwrap_or(0) as f64;
    let label_w = longest * label_font * 0.62 + 8.0;
    let (left, top) = (30.0 + label_w, 56.0);
    let grid = k as f64 * cell;
    let width = (left + grid + 20.0).max(360.0).ceil();
    let height = (top + grid + label_w + 44.0).max(200.0).ceil();

    let mut out = String::new();
    open(
        &mut out,
        "confusion",
        width,
        height,
        &[("n", n.to_string()), ("labels", k.to_string())],
        title,
    );
    note(
        &mut out,
        "rows: gold · columns: predicted · shade: share of the gold row",
    );
    if k == 0 {
        w!(
            out,
            r#"<rect class="frame" x="{}" y="{}" width="{}" height="{}" fill="none" stroke="{FRAME}" stroke-width="1" stroke-dasharray="4 3"/>"#,
            num(left),
            num(top),
            num(width - left - 20.0),
            num(height - top - 40.0)
        );
        no_data(&mut out, width / 2.0, height / 2.0);
        out.push_str("</svg>");
        return out;
    }
    out.push_str(r#"<g class="cells">"#);
    for i in 0..k {
        let row_total: usize = (0..k).map(|j| count(i, j)).sum();
        for j in 0..k {
            let c = count(i, j);
            let share = if row_total == 0 {
                0.0
            } else {
                c as f64 / row_total as f64
            };
            let (x, y) = (left + j as f64 * cell, top + i as f64 * cell);
            w!(
                out,
                r#"<rect class="cell" data-gold="{i}" data-pred="{j}" data-count="{c}" x="{}" y="{}" width="{}" height="{}" fill="{}""#,
                num(x),
                num(y),
                num(cell),
                num(cell),
                heat(share)
            );
            if dense {
                out.push_str("/>");
                continue;
            }
            let stroke = if i == j { (MUTED, "1.5") } else { (GRID, "1") };
            w!(
                out,
                r#" stroke="{}" stroke-width="{}"><title>gold {}, predicted {}: {c} ({}% of the row)</title></rect>"#,
                stroke.0,
                stroke.1,
                escape(&full_name(i)),
                escape(&full_name(j)),
                num(share * 100.0)
            );
            let digits = c.to_string().len().max(2) as f64;
            let font = (cell * 1.5 / digits).min(12.0);
            let ink = if share > 0.5 { "#ffffff" } else { INK };
            w!(
                out,
                r#"<text class="cell-count" x="{}" y="{}" dy="0.35em" text-anchor="middle" font-size="{}" fill="{ink}">{c}</text>"#,
                num(x + cell / 2.0),
                num(y + cell / 2.0),
                num(font)
            );
        }
    }
    out.push_str("</g>");
    let lf = num(label_font);
    out.push_str(r#"<g class="labels">"#);
    for i in 0..k {
        w!(
            out,
            r#"<text class="label-gold" x="{}" y="{}" dy="0.35em" text-anchor="end" font-size="{lf}" fill="{INK}">{}</text>"#,
            num(left - 5.0),
            num(top + (i as f64 + 0.5) * cell),
            escape(&name(i))
        );
    }
    let below = top + grid + 5.0;
    for j in 0..k {
        let (x, y) = (num(left + (j as f64 + 0.5) * cell), num(below));
        w!(
            out,
            r#"<text class="label-pred" x="{x}" y="{y}" dy="0.35em" text-anchor="end" transform="rotate(-90 {x} {y})" font-size="{lf}" fill="{INK}">{}</text>"#,
            escape(&name(j))
        );
    }
    out.push_str("</g>");
    w!(
        out,
        r#"<text class="axis-label" x="{}" y="{}" text-anchor="middle" fill="{INK}">predicted</text>"#,
        num(left + grid / 2.0),
        num(below + label_w + 24.0)
    );
    let (gx, gy) = (num(14.0), num(top + grid / 2.0));
    w!(
        out,
        r#"<text class="axis-label" x="{gx}" y="{gy}" text-anchor="middle" transform="rotate(-90 {gx} {gy})" fill="{INK}">gold</text>"#
    );
    out.push_str("</svg>");
    out
}

/// Bar chart of labelled counts (e.g. score error −2, −1, 0, +1, +2), each bar's
/// count above it and its label (cut to 12 characters) below.
///
/// Root: `class="histogram" data-n="<total>" data-buckets="<len>"`; bars:
/// `<rect class="bar" data-label data-count>`.
pub(crate) fn histogram(title: &str, buckets: &[(String, usize)]) -> String {
    let k = buckets.len();
    let band = if k == 0 {
        0.0
    } else {
        (420.0 / k as f64).clamp(14.0, 64.0)
    };
    let plot_w = (k as f64 * band).max(240.0);
    let band = if k == 0 { 0.0 } else { plot_w / k as f64 };
    let f = Frame {
        x0: 64.0,
        y0: 56.0,
        w: plot_w,
        h: 260.0,
    };
    let width = (f.right() + 24.0).max(360.0).ceil();
    let height = f.bottom() + 64.0;
    let n: usize = buckets.iter().map(|b| b.1).sum();
    let max = buckets.iter().map(|b| b.1).max().unwrap_or(0);

    let mut out = String::new();
    open(
        &mut out,
        "histogram",
        width,
        height,
        &[("n", n.to_string()), ("buckets", k.to_string())],
        title,
    );
    let scale = max.max(1) as f64;
    let yv = |c: f64| f.bottom() - c / scale * f.h;
    let mut yticks = vec![(yv(0.0), "0".to_owned())];
    if max >= 2 {
        let half = max.div_ceil(2);
        if half < max {
            yticks.push((yv(half as f64), half.to_string()));
        }
    }
    if max >= 1 {
        yticks.push((yv(max as f64), max.to_string()));
    }
    // Bucket labels are drawn with the bars; the x axis has no ticks of its own.
    f.axes(&mut out, &[], &yticks, "", "rows");
    let font = if band < 24.0 { 8 } else { 11 };
    out.push_str(r#"<g class="bars">"#);
    for (i, (label, c)) in buckets.iter().enumerate() {
        let bar_w = band * 0.7;
        let x = f.x0 + i as f64 * band + (band - bar_w) / 2.0;
        let bar_h = *c as f64 / scale * f.h;
        let y = f.bottom() - bar_h;
        w!(
            out,
            r#"<rect class="bar" data-label="{}" data-count="{c}" x="{}" y="{}" width="{}" height="{}" fill="{BAR}"/>"#,
            escape(label),
            num(x),
            num(y),
            num(bar_w),
            num(bar_h)
        );
        let cx = num(x + bar_w / 2.0);
        w!(
            out,
            r#"<text class="count" x="{cx}" y="{}" text-anchor="middle" font-size="{font}" fill="{MUTED}">{c}</text>"#,
            num(y - 4.0)
        );
        w!(
            out,
            r#"<text class="bucket" x="{cx}" y="{}" text-anchor="middle" font-size="{font}" fill="{INK}">{}</text>"#,
            num(f.bottom() + 16.0),
            escape(&truncate(label, 12))
        );
    }
    out.push_str("</g>");
    if k == 0 {
        no_data(&mut out, f.x0 + f.w / 2.0, f.y0 + f.h / 2.0);
    }
    out.push_str("</svg>");
    out
}

const PAGE_STYLE: &str = "\
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;background:#f5f7fa;color:#1a202c;font:15px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}
main{max-width:1100px;margin:0 auto;padding:24px 20px 48px}
h1{font-size:1.6rem;line-height:1.25;margin:0 0 20px}
section{background:#fff;border:1px solid #e2e8f0;border-radius:8px;padding:16px 20px;margin:0 0 20px;overflow-x:auto}
h2{font-size:1.15rem;margin:0 0 12px}
p{margin:8px 0}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.9em;background:#f1f5f9;padding:1px 4px;border-radius:3px}
table{border-collapse:collapse;margin:8px 0;font-size:14px}
th,td{padding:4px 10px;border-bottom:1px solid #e2e8f0;text-align:left;vertical-align:top}
th{background:#f1f5f9;font-weight:600}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
svg{display:inline-block;max-width:100%;height:auto;margin:8px 16px 8px 0;vertical-align:top}
";

/// One self-contained HTML5 page: an escaped title, inline CSS only (a policy
/// that forbids scripts and every outside fetch), and the sections in order,
/// each a `<section>` with its escaped heading and its HTML as is.
pub(crate) fn page(title: &str, sections: &[Section]) -> String {
    let title = escape(title);
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n",
    );
    w!(
        out,
        "<title>{title}</title>\n<style>\n{PAGE_STYLE}</style>\n</head>\n<body>\n<main>\n"
    );
    w!(out, "<h1>{title}</h1>\n");
    for (i, s) in sections.iter().enumerate() {
        w!(
            out,
            "<section id=\"section-{}\">\n<h2>{}</h2>\n{}\n</section>\n",
            i + 1,
            escape(&s.heading),
            s.html
        );
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// Whether a table cell reads as a number: an optional sign (`+ - − ±`), digits
/// with an optional decimal part, exponent or `,`/`_` separators, and an optional
/// trailing `%`.
fn looks_numeric(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t).trim_end();
    let t = t.strip_prefix(['+', '-', '−', '±']).unwrap_or(t);
    t.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && t.chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | ',' | '_'))
        && t.replace([',', '_'], "").parse::<f64>().is_ok()
}

/// An HTML table with escaped cells. Numeric-looking cells get `class="num"`
/// (right-aligned), and so does the header of a column whose cells all are.
/// Short rows are padded with empty cells to the header's width.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let cols = rows
        .iter()
        .map(Vec::len)
        .chain([header.len()])
        .max()
        .unwrap_or(0);
    let numeric_col = |j: usize| {
        !rows.is_empty()
            && rows
                .iter()
                .all(|r| r.get(j).is_some_and(|c| looks_numeric(c)))
    };
    let mut out = String::from("<table>\n<thead><tr>");
    for j in 0..cols {
        let text = header.get(j).copied().unwrap_or("");
        let class = if numeric_col(j) { " class=\"num\"" } else { "" };
        w!(out, "<th{class}>{}</th>", escape(text));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for j in 0..cols {
            let cell = row.get(j).map(String::as_str).unwrap_or("");
            let class = if looks_numeric(cell) {
                " class=\"num\""
            } else {
                ""
            };
            w!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>");
    out
}

/// The next `<svg` start tag or `</svg>` end tag at or after `from`:
/// `(offset, is_start)`.
#[cfg(test)]
fn next_svg_tag(html: &str, from: usize) -> Option<(usize, bool)> {
    let mut at = from;
    while let Some(rel) = html.get(at..)?.find('<') {
        let i = at + rel;
        let rest = &html[i..];
        if rest.starts_with("</svg>") {
            return Some((i, false));
        }
        let boundary = |c: char| c.is_ascii_whitespace() || c == '>' || c == '/';
        if rest
            .strip_prefix("<svg")
            .is_some_and(|after| after.starts_with(boundary))
        {
            return Some((i, true));
        }
        at = i + 1;
    }
    None
}

/// The outermost `<svg …>…</svg>` blocks of `html`, in order (nested `<svg>`
/// elements stay inside their parent's block; an unclosed one is skipped).
#[cfg(test)]
pub(crate) fn extract_svgs(html: &str) -> Vec<&str> {
    let mut found = Vec::new();
    let (mut depth, mut start, mut pos) = (0usize, 0usize, 0usize);
    while let Some((at, is_start)) = next_svg_tag(html, pos) {
        if is_start {
            let tag_end = html[at..].find('>').map_or(html.len(), |e| at + e + 1);
            let self_closing = html[..tag_end].ends_with("/>");
            if depth == 0 {
                start = at;
                if self_closing {
                    found.push(&html[at..tag_end]);
                }
            }
            if !self_closing {
                depth += 1;
            }
            pos = tag_end;
        } else {
            pos = at + "</svg>".len();
            if depth > 0 {
                depth -= 1;
                if depth == 0 {
                    found.push(&html[start..pos]);
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests;
