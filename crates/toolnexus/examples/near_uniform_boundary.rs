use std::collections::BTreeMap;

use toolnexus::classifier::{NEAR_UNIFORM_TOLERANCE, near_uniform};

fn p(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

fn main() {
    let cases = [
        // Deviation of exactly 0.05 from 1/n = 0.25: INCLUSIVE, so this IS near-uniform.
        ("at the tolerance", p(&[("a", 0.30), ("b", 0.25), ("c", 0.25), ("d", 0.20)]), true),
        // Past it.
        ("just outside", p(&[("a", 0.56), ("b", 0.44)]), false),
        // A real answer: the model had something to rank on.
        ("decisive", p(&[("a", 0.97), ("b", 0.03)]), false),
        // Never renormalised; a single option is trivially uniform.
        ("n == 1 is trivially uniform", p(&[("only", 0.02)]), true),
        // No distribution at all.
        ("empty", p(&[]), false),
    ];

    for (name, probs, want) in &cases {
        assert_eq!(near_uniform(probs), *want, "{name}");
    }

    // The same rule is applied on decode, so ChoiceAnswer.near_uniform is already set.
    println!("ok: tolerance {NEAR_UNIFORM_TOLERANCE} inclusive, five cases agree");
}
