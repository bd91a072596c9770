use super::*;
use resvg::{tiny_skia, usvg};

fn bin(lo: f64, hi: f64, count: usize, mean_confidence: f64, observed: f64) -> Bin {
    Bin {
        lo,
        hi,
        count,
        mean_confidence,
        observed,
    }
}

fn sample_bins() -> Vec<Bin> {
    vec![
        bin(0.0, 0.2, 4, 0.15, 0.25),
        bin(0.2, 0.4, 0, 0.0, 0.0),
        bin(0.4, 0.6, 11, 0.52, 0.45),
        bin(0.6, 0.8, 20, 0.71, 0.0),
        bin(0.8, 1.0, 25, 0.93, 0.96),
    ]
}

fn labels(k: usize) -> Vec<String> {
    (0..k).map(|i| format!("label {i}")).collect()
}

/// Renders `svg` at its own size and returns the pixmap.
fn render(svg: &str) -> tiny_skia::Pixmap {
    let tree = usvg::Tree::from_str(svg, &usvg::Options::default()).expect("usvg parses");
    let size = tree.size();
    let mut pixmap =
        tiny_skia::Pixmap::new(size.width().ceil() as u32, size.height().ceil() as u32)
            .expect("non-zero size");
    resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
    pixmap
}

/// Something was painted, and not only one flat colour.
fn assert_not_blank(pixmap: &tiny_skia::Pixmap) {
    let px = pixmap.pixels();
    assert!(px.iter().any(|p| p.alpha() > 0), "nothing painted");
    assert!(px.iter().any(|p| *p != px[0]), "only one colour painted");
}

/// Parses with roxmltree, checks the root and renders; returns the root's
/// attributes as `(name, value)`.
fn check_chart(svg: &str, class: &str) -> Vec<(String, String)> {
    assert!(!svg.contains("<script"), "{svg}");
    let doc = roxmltree::Document::parse(svg).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "svg");
    assert_eq!(root.tag_name().namespace(), Some(SVG_NS));
    assert_eq!(root.attribute("class"), Some(class));
    let (w, h) = (
        root.attribute("width").unwrap(),
        root.attribute("height").unwrap(),
    );
    assert_eq!(
        root.attribute("viewBox"),
        Some(format!("0 0 {w} {h}").as_str())
    );
    assert!(
        root.children().any(|c| c.has_tag_name((SVG_NS, "title"))),
        "no <title>"
    );
    let pixmap = render(svg);
    assert_eq!(pixmap.width(), w.parse::<f64>().unwrap().ceil() as u32);
    assert_eq!(pixmap.height(), h.parse::<f64>().unwrap().ceil() as u32);
    assert_not_blank(&pixmap);
    root.attributes()
        .map(|a| (a.name().to_owned(), a.value().to_owned()))
        .collect()
}

fn attr(attrs: &[(String, String)], name: &str) -> String {
    attrs
        .iter()
        .find(|a| a.0 == name)
        .unwrap_or_else(|| panic!("no {name}"))
        .1
        .clone()
}

/// `data-count` of every element of `class`, in document order.
fn counts_of(svg: &str, class: &str) -> Vec<usize> {
    let doc = roxmltree::Document::parse(svg).unwrap();
    doc.descendants()
        .filter(|n| n.attribute("class") == Some(class))
        .map(|n| {
            n.attribute("data-count")
                .expect("data-count")
                .parse()
                .unwrap()
        })
        .collect()
}

fn title_of(svg: &str) -> String {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let t = doc
        .root_element()
        .children()
        .find(|c| c.has_tag_name("title"))
        .unwrap();
    t.text().unwrap_or("").to_owned()
}

#[test]
fn numbers_have_at_most_four_decimals() {
    assert_eq!(num(0.123456), "0.1235");
    assert_eq!(num(2.0), "2");
    assert_eq!(num(0.5), "0.5");
    assert_eq!(num(-0.00001), "0");
    assert_eq!(num(-1.25), "-1.25");
    assert_eq!(num(f64::NAN), "0");
    assert_eq!(num(f64::INFINITY), "0");
}

#[test]
fn escape_covers_markup_and_bad_controls() {
    assert_eq!(escape(r#"<&"'>"#), "&lt;&amp;&quot;&#39;&gt;");
    assert_eq!(escape("a\u{1}b\tc"), "a\u{FFFD}b\tc");
    assert_eq!(escape("plain é"), "plain é");
}

#[test]
fn reliability_counts_add_up() {
    let bins = sample_bins();
    let svg = reliability("Reliability", &bins);
    let attrs = check_chart(&svg, "reliability");
    let total: usize = bins.iter().map(|b| b.count).sum();
    assert_eq!(attr(&attrs, "data-n"), total.to_string());
    let drawn = counts_of(&svg, "bin");
    assert_eq!(drawn.iter().sum::<usize>(), total);
    assert_eq!(drawn, vec![4, 11, 20, 25], "one bar per non-empty bin");

    let doc = roxmltree::Document::parse(&svg).unwrap();
    let bars: Vec<_> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("bin"))
        .collect();
    assert_eq!(bars[1].attribute("data-lo"), Some("0.4"));
    assert_eq!(bars[1].attribute("data-hi"), Some("0.6"));
    // A bin that was never right still gets a visible stub.
    assert!(bars[2].attribute("height").unwrap().parse::<f64>().unwrap() > 0.0);
    let printed: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("count"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(printed, ["4", "11", "20", "25"]);
    assert_eq!(
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("mean"))
            .count(),
        4
    );
    assert_eq!(
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("diagonal"))
            .count(),
        1
    );
    let ticks: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("tick"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(ticks, ["0", "0.5", "1", "0", "0.5", "1"]);
    assert_eq!(svg, reliability("Reliability", &bins), "deterministic");
}

#[test]
fn reliability_empty_is_valid() {
    for bins in [
        vec![],
        vec![bin(0.0, 0.5, 0, 0.0, 0.0), bin(0.5, 1.0, 0, 0.0, 0.0)],
    ] {
        let svg = reliability("", &bins);
        let attrs = check_chart(&svg, "reliability");
        assert_eq!(attr(&attrs, "data-n"), "0");
        assert!(counts_of(&svg, "bin").is_empty());
    }
    // Out-of-range and NaN figures are clamped, not emitted as NaN.
    let svg = reliability("odd", &[bin(-1.0, 2.0, 3, f64::NAN, 7.0)]);
    check_chart(&svg, "reliability");
    assert!(!svg.contains("NaN") && !svg.contains("inf"));
}

#[test]
fn risk_coverage_sorts_and_marks() {
    let points = [(1.0, 0.81), (0.4, 0.97), (0.7, 0.9), (0.2, 1.0)];
    let svg = risk_coverage("Risk", &points, Some((0.7, 0.9)), Some(0.92));
    let attrs = check_chart(&svg, "risk-coverage");
    assert_eq!(attr(&attrs, "data-points"), "4");
    assert_eq!(attr(&attrs, "data-y-min"), "0.8");
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let curve = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("curve"))
        .unwrap();
    let xs: Vec<f64> = curve
        .attribute("points")
        .unwrap()
        .split(' ')
        .map(|p| p.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(xs.len(), 4);
    assert!(
        xs.windows(2).all(|w| w[0] < w[1]),
        "sorted by coverage: {xs:?}"
    );
    let chosen = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("chosen"))
        .unwrap();
    assert_eq!(chosen.tag_name().name(), "circle");
    assert_eq!(chosen.attribute("data-coverage"), Some("0.7"));
    assert_eq!(chosen.attribute("data-accuracy"), Some("0.9"));
    let target = doc
        .descendants()
        .find(|n| n.attribute("class") == Some("target"))
        .unwrap();
    assert_eq!(target.tag_name().name(), "line");
    assert_eq!(target.attribute("y1"), target.attribute("y2"));
    assert!(target.attribute("stroke-dasharray").is_some());
    assert_eq!(target.attribute("data-target"), Some("0.92"));
}

#[test]
fn risk_coverage_empty_is_valid() {
    let svg = risk_coverage("none", &[], None, None);
    let attrs = check_chart(&svg, "risk-coverage");
    assert_eq!(attr(&attrs, "data-points"), "0");
    assert!(!svg.contains(r#"class="curve""#));
    assert!(!svg.contains(r#"class="chosen""#));
    assert!(!svg.contains(r#"class="target""#));
    // One point, or a target only, also render.
    check_chart(
        &risk_coverage("one", &[(0.5, 0.5)], None, None),
        "risk-coverage",
    );
    check_chart(&risk_coverage("t", &[], None, Some(1.0)), "risk-coverage");
}

#[test]
fn confusion_cells_add_up() {
    let mut names = labels(3);
    names[2] = "a label far longer than sixteen characters".to_owned();
    let counts = vec![vec![5, 1, 0], vec![2, 7, 1], vec![0, 0, 9]];
    let svg = confusion("Confusion", &names, &counts);
    let attrs = check_chart(&svg, "confusion");
    let total: usize = counts.iter().flatten().sum();
    assert_eq!(attr(&attrs, "data-n"), total.to_string());
    let cells = counts_of(&svg, "cell");
    assert_eq!(cells.len(), 9);
    assert_eq!(cells.iter().sum::<usize>(), total);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let cell = doc
        .descendants()
        .find(|n| n.attribute("data-gold") == Some("1") && n.attribute("data-pred") == Some("2"))
        .unwrap();
    assert_eq!(cell.attribute("data-count"), Some("1"));
    let in_cell = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cell-count"))
        .count();
    assert_eq!(in_cell, 9);
    let cut: Vec<&str> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("label-gold"))
        .filter_map(|n| n.text())
        .collect();
    assert_eq!(cut[2].chars().count(), 16);
    assert!(cut[2].ends_with('…'));
    assert_eq!(cut[0], "label 0");
}

#[test]
fn confusion_dense_and_empty() {
    let k = 40;
    let counts: Vec<Vec<usize>> = (0..k)
        .map(|i| {
            (0..k)
                .map(|j| usize::from(i == j) * 3 + (i + j) % 2)
                .collect()
        })
        .collect();
    let svg = confusion("Dense", &labels(k), &counts);
    let attrs = check_chart(&svg, "confusion");
    let cells = counts_of(&svg, "cell");
    assert_eq!(cells.len(), k * k);
    assert_eq!(
        attr(&attrs, "data-n"),
        cells.iter().sum::<usize>().to_string()
    );
    assert!(
        !svg.contains("cell-count"),
        "no in-cell numbers above 30 labels"
    );

    // All zero, no labels at all, and counts wider than the labels.
    let attrs = check_chart(
        &confusion("zero", &labels(2), &[vec![0, 0], vec![0, 0]]),
        "confusion",
    );
    assert_eq!(attr(&attrs, "data-n"), "0");
    let attrs = check_chart(&confusion("empty", &[], &[]), "confusion");
    assert_eq!(attr(&attrs, "data-n"), "0");
    let svg = confusion("ragged", &labels(1), &[vec![1, 2], vec![3]]);
    let attrs = check_chart(&svg, "confusion");
    assert_eq!(attr(&attrs, "data-n"), "6");
    assert_eq!(counts_of(&svg, "cell").len(), 4);
}

#[test]
fn confusion_255_labels_parses() {
    let k = 255;
    let counts: Vec<Vec<usize>> = (0..k)
        .map(|i| (0..k).map(|j| usize::from(i == j)).collect())
        .collect();
    let svg = confusion("Wide", &labels(k), &counts);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(doc.root_element().attribute("data-n"), Some("255"));
    let cells = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cell"))
        .count();
    assert_eq!(cells, k * k);
    let w: f64 = doc
        .root_element()
        .attribute("width")
        .unwrap()
        .parse()
        .unwrap();
    assert!(w < 1200.0, "width {w}");
}

#[test]
fn histogram_counts_add_up() {
    let buckets: Vec<(String, usize)> = [("−2", 1), ("−1", 6), ("0", 30), ("+1", 4), ("+2", 0)]
        .iter()
        .map(|&(l, c)| (l.to_owned(), c))
        .collect();
    let svg = histogram("Score error", &buckets);
    let attrs = check_chart(&svg, "histogram");
    assert_eq!(attr(&attrs, "data-n"), "41");
    assert_eq!(counts_of(&svg, "bar"), vec![1, 6, 30, 4, 0]);
    let attrs = check_chart(&histogram("empty", &[]), "histogram");
    assert_eq!(attr(&attrs, "data-n"), "0");
    let attrs = check_chart(&histogram("zeros", &[("a".to_owned(), 0)]), "histogram");
    assert_eq!(attr(&attrs, "data-n"), "0");
}

#[test]
fn titles_are_escaped() {
    let title = r#"a <&"'> b"#;
    let charts = [
        reliability(title, &sample_bins()),
        risk_coverage(title, &[(0.5, 0.9)], None, None),
        confusion(title, &[title.to_owned()], &[vec![1]]),
        histogram(title, &[(title.to_owned(), 2)]),
    ];
    for svg in &charts {
        assert!(svg.contains("a &lt;&amp;&quot;&#39;&gt; b"));
        assert!(!svg.contains(title));
        assert_eq!(title_of(svg), title);
    }
    let html = page(
        title,
        &[Section {
            heading: title.to_owned(),
            html: String::new(),
        }],
    );
    assert!(!html.contains(title));
    assert!(html.contains("<h2>a &lt;&amp;&quot;&#39;&gt; b</h2>"));
}

#[test]
fn page_holds_all_charts_and_nothing_external() {
    let buckets = vec![("0".to_owned(), 3), ("+1".to_owned(), 1)];
    let charts = [
        reliability("Reliability", &sample_bins()),
        risk_coverage(
            "Risk",
            &[(0.5, 0.95), (1.0, 0.9)],
            Some((0.5, 0.95)),
            Some(0.9),
        ),
        confusion("Confusion", &labels(2), &[vec![3, 1], vec![0, 4]]),
        histogram("Errors", &buckets),
    ];
    let mut sections: Vec<Section> = charts
        .iter()
        .enumerate()
        .map(|(i, svg)| Section {
            heading: format!("Chart {i}"),
            html: svg.clone(),
        })
        .collect();
    sections.push(Section {
        heading: "Summary".to_owned(),
        html: table(
            &["metric", "value"],
            &[vec!["accuracy".to_owned(), "0.93".to_owned()]],
        ),
    });
    let html = page("Assessment", &sections);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(!html.to_ascii_lowercase().contains("<script"));
    assert!(!html.contains("https://"));
    assert!(!html.contains("<link"));
    assert_eq!(
        html.matches("http://").count(),
        html.matches(&format!("xmlns=\"{SVG_NS}\"")).count()
    );
    assert_eq!(html.matches("http://").count(), 4);
    let found = extract_svgs(&html);
    assert_eq!(found.len(), 4);
    for (svg, chart) in found.iter().zip(&charts) {
        assert_eq!(svg, chart);
    }
    let order: Vec<usize> = (0..4)
        .map(|i| html.find(&format!("<h2>Chart {i}</h2>")).unwrap())
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]) && html.find("<h2>Summary</h2>").unwrap() > order[3]
    );
}

#[test]
fn table_escapes_and_aligns() {
    let rows = vec![
        vec!["<b>".to_owned(), "0.5".to_owned(), "12%".to_owned()],
        vec!["x & y".to_owned(), "−3".to_owned(), "n/a".to_owned()],
        vec!["short".to_owned()],
    ];
    let html = table(&["name", "value", "share"], &rows);
    assert!(html.contains("<td>&lt;b&gt;</td>"));
    assert!(html.contains("<td>x &amp; y</td>"));
    assert!(html.contains(r#"<td class="num">0.5</td>"#));
    assert!(html.contains(r#"<td class="num">−3</td>"#));
    assert!(html.contains(r#"<td class="num">12%</td>"#));
    assert!(html.contains("<td>n/a</td>"));
    assert_eq!(html.matches("<tr>").count(), 4);
    assert_eq!(html.matches("<td").count(), 9, "short rows are padded");
    assert!(html.contains("<th>name</th><th>value</th><th>share</th>"));
    let html = table(&["k", "n"], &[vec!["a".to_owned(), "1,200".to_owned()]]);
    assert!(html.contains(r#"<th class="num">n</th>"#));
    for (cell, numeric) in [
        ("1e-3", true),
        ("+0.25", true),
        ("2026-01-01", false),
        ("inf", false),
        ("", false),
        (".", false),
    ] {
        assert_eq!(looks_numeric(cell), numeric, "{cell:?}");
    }
}

#[test]
fn extract_svgs_handles_nesting_and_noise() {
    let html = "<p>svg</p><svgfoo></svgfoo><svg a='1'><svg><g/></svg></svg> x <svg/> <svg>open";
    assert_eq!(
        extract_svgs(html),
        ["<svg a='1'><svg><g/></svg></svg>", "<svg/>"]
    );
    assert!(extract_svgs("no charts").is_empty());
}
