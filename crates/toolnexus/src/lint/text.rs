//! The text heuristics behind the rules: each takes one text and returns what
//! it found with the byte offset of the phrase, so a finding points at the
//! words. Pure; the word lists are the ones `--explain` documents.

/// A word of a text: its byte range and its ASCII-lowercased spelling.
#[derive(Debug)]
struct Word {
    start: usize,
    end: usize,
    lower: String,
}

/// Runs of letters, digits and apostrophes (so `doesn't` is one word).
fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices().chain([(text.len(), ' ')]) {
        let inside = c.is_alphanumeric() || c == '\'' || c == '’';
        match (inside, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                let w = text[s..i].trim_matches(['\'', '’']);
                if !w.is_empty() {
                    let lead = text[s..i].len() - text[s..i].trim_start_matches(['\'', '’']).len();
                    out.push(Word {
                        start: s + lead,
                        end: s + lead + w.len(),
                        lower: w.to_lowercase().replace('’', "'"),
                    });
                }
                start = None;
            }
            _ => {}
        }
    }
    out
}

/// Whether the words from `i` on spell `phrase` (space-separated).
fn spells(ws: &[Word], i: usize, phrase: &str) -> bool {
    let parts: Vec<&str> = phrase.split(' ').collect();
    parts.len() <= ws.len() - i.min(ws.len())
        && parts.iter().zip(&ws[i..]).all(|(p, w)| w.lower == *p)
}

const NUMBER_WORDS: [&str; 32] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "dozen",
    "half",
];

fn is_number(w: &str) -> bool {
    w.chars().next().is_some_and(|c| c.is_ascii_digit())
        || NUMBER_WORDS.contains(&w)
        || w == "twice"
}

/// Comparisons that make a threshold when a number follows.
const COMPARISONS: [&str; 22] = [
    "more than",
    "less than",
    "fewer than",
    "greater than",
    "larger than",
    "smaller than",
    "higher than",
    "lower than",
    "at least",
    "at most",
    "up to",
    "over",
    "under",
    "above",
    "below",
    "exceeds",
    "exceed",
    "exceeding",
    "within",
    "between",
    "no more than",
    "no fewer than",
];

/// Arithmetic a model would have to do.
const ARITHMETIC: [&str; 9] = [
    "sum of",
    "average of",
    "mean of",
    "divided by",
    "multiplied by",
    "ratio of",
    "percentage of",
    "add up",
    "total of",
];

/// Numbers to compare or compute (TNL006).
pub fn numeric(text: &str) -> Vec<(usize, String)> {
    let ws = words(text);
    // (start, end, what): a later match inside an earlier one is the same finding.
    let mut out: Vec<(usize, usize, String)> = Vec::new();
    let covered =
        |out: &[(usize, usize, String)], at: usize| out.iter().any(|(s, e, _)| *s <= at && at < *e);
    let mut i = 0;
    while i < ws.len() {
        let mut hit = None;
        for c in COMPARISONS {
            let n = c.split(' ').count();
            if spells(&ws, i, c) {
                // "more than 3", "over $50", "at least a dozen"
                let next = ws[i + n..].iter().take(2).position(|w| is_number(&w.lower));
                let article = next == Some(1) && ws[i + n].lower == "a";
                if next == Some(0) || article {
                    let last = i + n + next.unwrap_or(0);
                    hit = Some((
                        last + 1 - i,
                        format!("\"{}\"", phrase(text, &ws, i, last + 1 - i)),
                    ));
                    break;
                }
            }
        }
        if hit.is_none() {
            for a in ARITHMETIC {
                if spells(&ws, i, a) {
                    let n = a.split(' ').count();
                    hit = Some((n, format!("\"{}\" (arithmetic)", phrase(text, &ws, i, n))));
                    break;
                }
            }
        }
        if hit.is_none() && is_number(&ws[i].lower) && ws[i].lower != "half" {
            let or_more = [
                "more", "fewer", "less", "greater", "higher", "above", "over",
            ];
            if ws.get(i + 1).is_some_and(|w| w.lower == "or")
                && ws
                    .get(i + 2)
                    .is_some_and(|w| or_more.contains(&w.lower.as_str()))
            {
                hit = Some((3, format!("\"{}\"", phrase(text, &ws, i, 3))));
            }
        }
        if let Some((n, what)) = hit {
            // A "%" or "percent" right after belongs to this finding.
            let mut end = ws[i + n - 1].end;
            let rest = &text[end..];
            let pct = rest.len() - rest.trim_start_matches([' ', '%']).len();
            end += pct;
            out.push((ws[i].start, end, what));
            i += n;
        } else {
            i += 1;
        }
    }
    // Signs: > 50, >= 3, ≤ 10, 50%, 10+.
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(at, c)) in chars.iter().enumerate() {
        if covered(&out, at) {
            continue;
        }
        let sign_part = |c: char| c == ' ' || c == '=' || c == '$';
        let found = match c {
            '>' | '<' | '≥' | '≤'
                if chars[k + 1..]
                    .iter()
                    .find(|(_, c)| !sign_part(*c))
                    .is_some_and(|(_, c)| c.is_ascii_digit()) =>
            {
                let end = chars[k + 1..]
                    .iter()
                    .find(|(_, c)| !(sign_part(*c) || c.is_ascii_digit() || *c == '.' || *c == '%'))
                    .map_or(text.len(), |(i, _)| *i);
                Some((at, end, format!("\"{}\"", text[at..end].trim_end())))
            }
            '%' if k > 0 && chars[k - 1].1.is_ascii_digit() => {
                let start = chars[number_start(&chars, k)].0;
                Some((
                    start,
                    at + 1,
                    format!("\"{}\" (a percentage)", &text[start..at + 1]),
                ))
            }
            '+' if k > 0
                && chars[k - 1].1.is_ascii_digit()
                && chars.get(k + 1).is_none_or(|(_, c)| !c.is_alphanumeric()) =>
            {
                let start = chars[number_start(&chars, k)].0;
                Some((start, at + 1, format!("\"{}\"", &text[start..at + 1])))
            }
            _ => None,
        };
        if let Some(f) = found
            && !covered(&out, f.0)
        {
            out.push(f);
        }
    }
    for (k, w) in ws.iter().enumerate() {
        if (w.lower == "percent" || w.lower == "percentage")
            && k > 0
            && is_number(&ws[k - 1].lower)
            && !covered(&out, ws[k - 1].start)
        {
            let what = format!("\"{}\" (a percentage)", phrase(text, &ws, k - 1, 2));
            out.push((ws[k - 1].start, w.end, what));
        }
    }
    out.sort_by_key(|(s, _, _)| *s);
    out.into_iter().map(|(s, _, w)| (s, w)).collect()
}

/// The index of the first character of the number that ends just before `k`.
fn number_start(chars: &[(usize, char)], k: usize) -> usize {
    let mut s = k;
    while s > 0
        && (chars[s - 1].1.is_ascii_digit() || chars[s - 1].1 == '.' || chars[s - 1].1 == ',')
    {
        s -= 1;
    }
    s
}

/// The text of `n` words from word `i`, as written.
fn phrase<'t>(text: &'t str, ws: &[Word], i: usize, n: usize) -> &'t str {
    &text[ws[i].start..ws[i + n - 1].end]
}

const NEGATIONS: [&str; 10] = [
    "not", "never", "no", "none", "nothing", "nobody", "neither", "nor", "cannot", "nowhere",
];

/// Negations in a statement (TNL007).
pub fn negations(text: &str) -> Vec<(usize, String)> {
    let ws = words(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        let w = &ws[i].lower;
        if w == "neither" && ws[i + 1..].iter().any(|x| x.lower == "nor") {
            out.push((ws[i].start, "\"neither … nor\"".to_string()));
            // The nor is part of this finding.
            let nor = ws[i + 1..]
                .iter()
                .position(|x| x.lower == "nor")
                .unwrap_or(0);
            i += nor + 2;
            continue;
        }
        if NEGATIONS.contains(&w.as_str()) || w.ends_with("n't") {
            out.push((ws[i].start, format!("\"{w}\"")));
        }
        i += 1;
    }
    out
}

/// Words that start a second clause after "and"/"or" ("this" and "that" are
/// left out: they start noun phrases as often).
const CLAUSE_STARTS: [&str; 28] = [
    "is", "are", "was", "were", "does", "do", "did", "has", "have", "had", "can", "could", "would",
    "will", "should", "must", "may", "might", "it", "they", "he", "she", "there", "we", "you", "i",
    "isn't", "doesn't",
];

/// Two claims joined in one statement (TNL008).
pub fn compound(text: &str) -> Vec<(usize, String)> {
    let ws = words(text);
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        if (w.lower == "and" || w.lower == "or")
            && ws
                .get(i + 1)
                .is_some_and(|n| CLAUSE_STARTS.contains(&n.lower.as_str()))
        {
            out.push((w.start, format!("\"{} {}\"", w.lower, ws[i + 1].lower)));
        }
        if w.lower == "and"
            && text[w.start + 3..].starts_with('/')
            && ws.get(i + 1).is_some_and(|n| n.lower == "or")
        {
            out.push((w.start, "\"and/or\"".to_string()));
        }
    }
    out
}

const TWO_THINGS: [&str; 7] = [
    "and also",
    "as well as",
    "additionally",
    "in addition",
    "and whether",
    "and if",
    "or whether",
];

/// Instructions that ask two things (TNL011).
pub fn two_things(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let marks: Vec<usize> = text.match_indices('?').map(|(i, _)| i).collect();
    // "??" is one question asked loudly.
    let separate: Vec<usize> = marks
        .iter()
        .copied()
        .filter(|&i| !text[..i].ends_with('?'))
        .collect();
    if separate.len() >= 2 {
        out.push((separate[1], format!("{} question marks", separate.len())));
    }
    let ws = words(text);
    for i in 0..ws.len() {
        for p in TWO_THINGS {
            if spells(&ws, i, p) {
                let n = p.split(' ').count();
                out.push((ws[i].start, format!("\"{}\"", phrase(text, &ws, i, n))));
            }
        }
    }
    out
}

/// A text for comparison: lowercase letters and digits, single spaces.
pub fn normalise(text: &str) -> String {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a description says no more than its option id.
pub fn is_name_only(id: &str, description: &str) -> bool {
    normalise(id) == normalise(description)
}

/// Words in an option id that mark a way out.
const WAY_OUT_IDS: [&str; 20] = [
    "other",
    "others",
    "unclear",
    "unknown",
    "none",
    "neither",
    "unsure",
    "uncertain",
    "ambiguous",
    "misc",
    "miscellaneous",
    "unrelated",
    "na",
    "n/a",
    "else",
    "undecided",
    "irrelevant",
    "nothing",
    "abstain",
    "unclassified",
];

/// Phrases in a description that mark a way out.
const WAY_OUT_PHRASES: [&str; 12] = [
    "anything else",
    "none of the above",
    "none of these",
    "none of the others",
    "does not fit",
    "doesn't fit",
    "out of scope",
    "not clear",
    "unclear",
    "cannot tell",
    "can't tell",
    "something else",
];

/// Whether an option is a way out (TNL009).
pub fn is_way_out(id: &str, description: Option<&str>) -> bool {
    let id = id.to_lowercase();
    if [
        "out_of_scope",
        "off_topic",
        "out-of-scope",
        "off-topic",
        "not_applicable",
        "no_match",
    ]
    .iter()
    .any(|p| id.contains(p))
    {
        return true;
    }
    if id
        .split(|c: char| !c.is_alphanumeric() && c != '/')
        .any(|w| WAY_OUT_IDS.contains(&w))
    {
        return true;
    }
    description.is_some_and(|d| {
        let d = normalise(d);
        WAY_OUT_PHRASES
            .iter()
            .any(|p| format!(" {d} ").contains(&format!(" {} ", normalise(p))))
    })
}

/// The ordered scales a score level's words are read on, each word with its
/// rank. Size words are on the degree scale: "small, moderate, large" is one
/// dimension.
const SCALES: [(&str, &[(&str, u8)]); 4] = [
    (
        "degree",
        &[
            ("none", 0),
            ("minimal", 1),
            ("negligible", 1),
            ("trivial", 1),
            ("low", 2),
            ("minor", 2),
            ("slight", 2),
            ("mild", 2),
            ("some", 3),
            ("moderate", 3),
            ("medium", 3),
            ("partial", 3),
            ("high", 4),
            ("major", 4),
            ("significant", 4),
            ("serious", 4),
            ("severe", 5),
            ("critical", 5),
            ("extreme", 5),
            ("maximum", 5),
            ("tiny", 1),
            ("small", 2),
            ("large", 4),
            ("big", 4),
            ("huge", 5),
            ("enormous", 5),
        ],
    ),
    (
        "frequency",
        &[
            ("never", 0),
            ("rarely", 1),
            ("seldom", 1),
            ("sometimes", 2),
            ("occasionally", 2),
            ("often", 3),
            ("frequently", 3),
            ("usually", 3),
            ("always", 4),
        ],
    ),
    (
        "likelihood",
        &[
            ("impossible", 0),
            ("unlikely", 1),
            ("possible", 2),
            ("possibly", 2),
            ("plausible", 2),
            ("likely", 3),
            ("probable", 3),
            ("probably", 3),
            ("certain", 4),
            ("certainly", 4),
            ("definitely", 4),
        ],
    ),
    (
        "quality",
        &[
            ("terrible", 0),
            ("awful", 0),
            ("poor", 1),
            ("bad", 1),
            ("fair", 2),
            ("acceptable", 2),
            ("adequate", 2),
            ("good", 3),
            ("great", 4),
            ("excellent", 4),
        ],
    ),
];

/// The scale word a level is read by: its leading label (`high:`, `low -`),
/// else its first scale word.
fn scale_of(level: &str) -> Option<(&'static str, &'static str, u8)> {
    let lookup = |w: &str| {
        SCALES.iter().find_map(|(scale, words)| {
            words
                .iter()
                .find(|(x, _)| *x == w)
                .map(|(x, r)| (*scale, *x, *r))
        })
    };
    let ws = words(level);
    let label_end = level.find([':', '—', '–']).or_else(|| level.find(" - "));
    if let Some(end) = label_end {
        let label: Vec<&Word> = ws.iter().filter(|w| w.start < end).collect();
        if let Some(hit) = label.iter().rev().find_map(|w| lookup(&w.lower)) {
            return Some(hit);
        }
    }
    ws.iter().find_map(|w| lookup(&w.lower))
}

/// Why a score's levels are not one ordered dimension, and the index of the
/// level to point at (TNL010).
pub fn score_order(levels: &[Option<String>]) -> Option<(usize, String)> {
    for (j, b) in levels.iter().enumerate() {
        let Some(b) = b else { continue };
        let nb = normalise(b);
        if nb.is_empty() {
            continue;
        }
        if let Some(i) = levels[..j]
            .iter()
            .position(|a| a.as_deref().map(normalise).as_deref() == Some(nb.as_str()))
        {
            return Some((j, format!("level {j} repeats level {i}")));
        }
    }
    let read: Vec<(usize, (&str, &str, u8))> = levels
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.as_deref().and_then(scale_of).map(|s| (i, s)))
        .collect();
    if read.len() < 2 {
        return None;
    }
    let (first_i, (first_scale, first_word, _)) = read[0];
    if let Some(&(j, (scale, word, _))) = read.iter().find(|(_, (s, _, _))| *s != first_scale) {
        return Some((
            j,
            format!(
                "levels mix two scales: level {first_i} reads as {first_scale} (\"{first_word}\"), level {j} as {scale} (\"{word}\")"
            ),
        ));
    }
    let ranks: Vec<u8> = read.iter().map(|(_, (_, _, r))| *r).collect();
    if ranks.windows(2).all(|w| w[0] > w[1]) {
        return Some((
            read[0].0,
            format!(
                "levels run highest first (\"{}\" … \"{}\"); a score's levels are lowest first",
                read[0].1.1,
                read[read.len() - 1].1.1
            ),
        ));
    }
    if let Some(k) = ranks.windows(2).position(|w| w[1] < w[0]) {
        let (a, b) = (read[k], read[k + 1]);
        return Some((
            b.0,
            format!(
                "levels go down: level {} (\"{}\") comes after level {} (\"{}\")",
                b.0, b.1.1, a.0, a.1.1
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(v: Vec<(usize, String)>) -> Vec<String> {
        v.into_iter().map(|(_, w)| w).collect()
    }

    #[test]
    fn thresholds_are_found_and_ordinary_words_are_not() {
        assert_eq!(
            found(numeric("Does it have more than 3 items?")),
            ["\"more than 3\""]
        );
        assert_eq!(found(numeric("Is the error rate > 50%?")), ["\"> 50%\""]);
        assert_eq!(found(numeric("a 15% discount")), ["\"15%\" (a percentage)"]);
        assert_eq!(found(numeric("at least ten rows")), ["\"at least ten\""]);
        assert_eq!(found(numeric("5 or more parcels")), ["\"5 or more\""]);
        assert_eq!(found(numeric("a 10+ seat order")), ["\"10+\""]);
        assert_eq!(
            found(numeric("the sum of the line items")),
            ["\"sum of\" (arithmetic)"]
        );
        assert_eq!(
            found(numeric("within 30 days of purchase")),
            ["\"within 30\""]
        );
        assert_eq!(found(numeric("over 20 percent")), ["\"over 20\""]);
        assert_eq!(
            found(numeric("about 20 percent")),
            ["\"20 percent\" (a percentage)"]
        );
        assert!(numeric("Does it send data over the network or under a new name?").is_empty());
        assert!(numeric("a <script> tag, HTTP 404, version 2").is_empty());
        let (at, _) = numeric("Is it more than 3?")[0];
        assert_eq!(at, 6);
    }

    #[test]
    fn negations_and_compounds() {
        assert_eq!(found(negations("The customer did not ask")), ["\"not\""]);
        assert_eq!(found(negations("It doesn't ship")), ["\"doesn't\""]);
        assert_eq!(
            found(negations("neither paid nor refunded")),
            ["\"neither … nor\""]
        );
        assert!(negations("Does the customer want a refund?").is_empty());
        assert_eq!(
            found(compound("Is it spam and does it mention a refund?")),
            ["\"and does\""]
        );
        assert_eq!(found(compound("paid and/or refunded")), ["\"and/or\""]);
        assert!(compound("Would it delete, overwrite or irreversibly change data?").is_empty());
        assert!(compound("Does it compare our price and that of a rival?").is_empty());
        assert_eq!(
            found(two_things("Which team? How urgent?")),
            ["2 question marks"]
        );
        assert!(two_things("Really??").is_empty());
        assert_eq!(
            found(two_things("Pick a team and also say why")),
            ["\"and also\""]
        );
    }

    #[test]
    fn ways_out_and_names() {
        assert!(is_way_out("other", Some("x")));
        assert!(is_way_out("out_of_scope", None));
        assert!(is_way_out("misc", None));
        assert!(is_way_out("x", Some("Anything else.")));
        assert!(!is_way_out("billing", Some("money moved")));
        assert!(!is_way_out("another_desk", Some("the other desk's work")));
        assert!(is_name_only("billing", " Billing. "));
        assert!(is_name_only("out_of_scope", "out of scope"));
        assert!(!is_name_only("billing", "money moved"));
    }

    fn levels(l: &[&str]) -> Vec<Option<String>> {
        l.iter().map(|s| Some(s.to_string())).collect()
    }

    #[test]
    fn score_levels_are_one_ordered_dimension() {
        assert_eq!(score_order(&levels(&["low", "medium", "high"])), None);
        assert_eq!(
            score_order(&levels(&["low", "Low.", "high"])),
            Some((1, "level 1 repeats level 0".into()))
        );
        assert!(
            score_order(&levels(&["high", "medium", "low"]))
                .unwrap()
                .1
                .contains("highest first")
        );
        assert!(
            score_order(&levels(&["rarely", "low", "often"]))
                .unwrap()
                .1
                .contains("two scales")
        );
        assert!(
            score_order(&levels(&["low", "high", "medium"]))
                .unwrap()
                .1
                .contains("go down")
        );
        // The leading label decides, whatever else the level says.
        let guard = levels(&[
            "none: read-only, nothing changes",
            "low: routine work that is easy to undo",
            "moderate: plausible but worth a look",
            "high: could lose work",
            "severe: irreversible destruction",
        ]);
        assert_eq!(score_order(&guard), None);
        assert_eq!(score_order(&levels(&["calm", "annoyed", "furious"])), None);
        assert_eq!(score_order(&levels(&["small", "moderate", "large"])), None);
        assert_eq!(
            score_order(&levels(&[
                "1 - very poor",
                "2 - poor",
                "3 - fair",
                "4 - good",
                "5 - excellent"
            ])),
            None
        );
    }
}

/// The name of a direction control (TNL014), if `c` is one.
fn bidi_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{200E}' => "LEFT-TO-RIGHT MARK",
        '\u{200F}' => "RIGHT-TO-LEFT MARK",
        '\u{202A}' => "LEFT-TO-RIGHT EMBEDDING",
        '\u{202B}' => "RIGHT-TO-LEFT EMBEDDING",
        '\u{202C}' => "POP DIRECTIONAL FORMATTING",
        '\u{202D}' => "LEFT-TO-RIGHT OVERRIDE",
        '\u{202E}' => "RIGHT-TO-LEFT OVERRIDE",
        '\u{2066}' => "LEFT-TO-RIGHT ISOLATE",
        '\u{2067}' => "RIGHT-TO-LEFT ISOLATE",
        '\u{2068}' => "FIRST STRONG ISOLATE",
        '\u{2069}' => "POP DIRECTIONAL ISOLATE",
        _ => return None,
    })
}

/// The name of an invisible character (TNL015), if `c` is one.
fn zero_width_name(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{200B}' => "ZERO WIDTH SPACE",
        '\u{200C}' => "ZERO WIDTH NON-JOINER",
        '\u{200D}' => "ZERO WIDTH JOINER",
        '\u{2060}' => "WORD JOINER",
        '\u{FEFF}' => "ZERO WIDTH NO-BREAK SPACE (a byte-order mark inside the text)",
        _ => return None,
    })
}

fn found(text: &str, name: fn(char) -> Option<&'static str>) -> Vec<(usize, String)> {
    text.char_indices()
        .filter_map(|(at, c)| name(c).map(|n| (at, format!("U+{:04X} {n}", c as u32))))
        .collect()
}

/// Direction controls (TNL014): byte offset and `U+202E RIGHT-TO-LEFT OVERRIDE`.
pub fn bidi_controls(text: &str) -> Vec<(usize, String)> {
    found(text, bidi_name)
}

/// Invisible characters (TNL015): byte offset and `U+200B ZERO WIDTH SPACE`.
pub fn zero_width(text: &str) -> Vec<(usize, String)> {
    found(text, zero_width_name)
}

/// What a key looks like (TNL016): lower case, without separators (`_`, `-`,
/// `.`, spaces) and invisible characters, full-width forms as ASCII, and
/// the common Cyrillic and Greek look-alikes (and `0`, `1`) as the Latin
/// letters they pass for. Two keys with one skeleton look alike.
pub fn skeleton(key: &str) -> String {
    key.chars()
        .filter(|c| {
            !matches!(c, '_' | '-' | '.')
                && !c.is_whitespace()
                && bidi_name(*c).is_none()
                && zero_width_name(*c).is_none()
        })
        .map(|c| match c as u32 {
            0xFF01..=0xFF5E => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'а' | 'α' => 'a',
            'в' | 'β' => 'b',
            'с' | 'ϲ' => 'c',
            'ԁ' => 'd',
            'е' | 'ε' => 'e',
            'һ' => 'h',
            'і' | 'ι' | 'ı' => 'i',
            'ј' => 'j',
            'к' | 'κ' => 'k',
            'ӏ' | '1' => 'l',
            'м' => 'm',
            'о' | 'ο' | '0' => 'o',
            'р' | 'ρ' => 'p',
            'ѕ' => 's',
            'т' | 'τ' => 't',
            'υ' => 'u',
            'ν' => 'v',
            'х' | 'χ' => 'x',
            'у' | 'γ' => 'y',
            other => other,
        })
        .collect()
}

/// The first earlier key each key looks like (TNL016), in the keys' order:
/// `(later, earlier)` pairs.
pub fn look_alikes<'k>(keys: &[&'k str]) -> Vec<(&'k str, &'k str)> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    let mut out = Vec::new();
    for k in keys {
        let s = skeleton(k);
        match seen.iter().find(|(sk, _)| *sk == s) {
            Some((_, first)) => out.push((*k, *first)),
            None => seen.push((s, k)),
        }
    }
    out
}

#[cfg(test)]
mod hidden_tests {
    use super::*;

    #[test]
    fn hidden_characters_are_found_by_offset_and_name() {
        assert_eq!(
            bidi_controls("ab\u{202E}c\u{2066}"),
            vec![
                (2, "U+202E RIGHT-TO-LEFT OVERRIDE".to_string()),
                (6, "U+2066 LEFT-TO-RIGHT ISOLATE".to_string())
            ]
        );
        assert_eq!(
            zero_width("x\u{200B}y\u{FEFF}").len(),
            2,
            "a space and a mark inside the text"
        );
        assert!(bidi_controls("plain text, ünïcödé, עברית").is_empty());
        assert!(zero_width("plain").is_empty());
    }

    #[test]
    fn keys_that_differ_in_case_separators_or_script_look_alike() {
        assert_eq!(
            look_alikes(&["refund_requested", "refund-requested", "Refund Requested"]),
            vec![
                ("refund-requested", "refund_requested"),
                ("Refund Requested", "refund_requested")
            ]
        );
        // Cyrillic а and о; a zero-width space; full-width letters.
        assert_eq!(look_alikes(&["spam", "spаm"]), vec![("spаm", "spam")]);
        assert_eq!(look_alikes(&["desk", "de\u{200B}sk"]).len(), 1);
        assert_eq!(look_alikes(&["desk", "ｄｅｓｋ"]).len(), 1);
        assert!(look_alikes(&["billing", "shipping", "technical", "other"]).is_empty());
    }
}
