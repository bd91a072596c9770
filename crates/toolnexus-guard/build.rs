//! Works out, once, the literal prefixes ("needles") of every expression in the
//! built-in guard policy (`data/policy.json`), so that a hook skips a rule whose
//! needles are absent from the call without parsing the rule first. The table is
//! keyed by the expression's text: a user's policy reusing a built-in expression
//! gets the same needles; any other expression has its needles found at run time
//! by the same function (`src/needles.rs`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

#[path = "src/needles.rs"]
mod needles;

/// The rule keys that hold a regular expression.
const EXPRESSION_KEYS: &[&str] = &["tools", "pattern", "unless", "unless_path", "args"];

fn main() {
    let policy = "data/policy.json";
    println!("cargo:rerun-if-changed={policy}");
    println!("cargo:rerun-if-changed=src/needles.rs");
    let text = std::fs::read_to_string(policy).expect("data/policy.json is readable");
    let v: serde_json::Value = serde_json::from_str(&text).expect("data/policy.json is JSON");
    let mut table: BTreeMap<String, Option<Vec<Vec<u8>>>> = BTreeMap::new();
    for rule in v["rules"].as_array().into_iter().flatten() {
        for key in EXPRESSION_KEYS {
            if let Some(source) = rule.get(*key).and_then(|s| s.as_str())
                && !source.is_empty()
            {
                table.insert(source.to_string(), needles::needles(source));
            }
        }
    }
    let mut out = String::from(
        "/// Each built-in expression and its needles, sorted by the expression's text.\n\
         static BUILTIN_NEEDLES: &[(&str, Option<&[&[u8]]>)] = &[\n",
    );
    for (source, needles) in &table {
        match needles {
            None => writeln!(out, "    ({source:?}, None),").unwrap(),
            Some(list) => {
                write!(out, "    ({source:?}, Some(&[").unwrap();
                for n in list {
                    write!(out, "&{n:?}, ").unwrap();
                }
                writeln!(out, "])),").unwrap();
            }
        }
    }
    out.push_str("];\n");
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR is set"))
        .join("builtin_needles.rs");
    std::fs::write(dest, out).expect("OUT_DIR is writable");
}
