//! The verdict side of the team's corpora (issue 34, point 8): every
//! re-spelling of a forbidden act in `data/bypass.jsonl` is never allowed,
//! under a policy that denies the act's capabilities (built-in rules off, so
//! the capabilities do the work) and under the SPEC's allow-list policy; and
//! the everyday commands of `data/benign.jsonl` are allowed at least 90% of
//! the time and never denied under the built-in policy, with a stand-in judge
//! that allows (the rules alone decide). The command side (each bypass proven
//! by bash, each read as its capabilities or as unread) is
//! `tests/shell_corpus.rs`.

mod support;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use support::*;
use toolnexus_guard::{Guard, Permission};

const CWD: &str = "/home/dev/project";

fn lines(name: &str) -> Vec<Value> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{name}: {l}: {e}")))
        .filter(|v| v.get("header").is_none())
        .collect()
}

#[tokio::test]
async fn no_bypass_is_allowed_under_a_deny_capability_policy_or_the_allow_list() {
    let bypasses = lines("bypass.jsonl");
    assert!(bypasses.len() >= 150, "{} lines", bypasses.len());
    let allowlist = guard(policy(
        r#"{"toolnexus":"guard-policy","version":2,"mode":"allowlist","allow_commands":["echo","ls","true","pwd"]}"#,
    ));
    let mut by_expect: BTreeMap<String, Guard> = BTreeMap::new();
    let mut allowed = Vec::new();
    for b in &bypasses {
        let command = b["command"].as_str().unwrap();
        let expect = &b["expect"];
        let key = expect.to_string();
        let deny = by_expect.entry(key).or_insert_with(|| {
            guard(policy(
                &json!({"toolnexus": "guard-policy", "version": 2, "log": null, "builtin_rules": false,
                        "rules": [{"id": "forbidden", "capabilities": expect, "verdict": "deny",
                                   "why": "the act's capabilities"}]})
                .to_string(),
            ))
        });
        for (name, g) in [("deny-capability", &*deny), ("allowlist", &allowlist)] {
            let j = g
                .judge(&call_in(CWD, "Bash", json!({"command": command})))
                .await;
            if j.permission == Permission::Allow {
                allowed.push(format!("{name}: {} ({}): {command}", b["act"], b["family"]));
            }
        }
    }
    assert!(
        allowed.is_empty(),
        "{} allowed:\n{}",
        allowed.len(),
        allowed.join("\n")
    );
}

#[tokio::test]
async fn everyday_commands_are_allowed_by_the_built_in_policy_and_none_denied() {
    let benign = lines("benign.jsonl");
    assert!(benign.len() >= 100, "{} lines", benign.len());
    let g = guard(builtin());
    let mut asked = Vec::new();
    let mut denied = Vec::new();
    for b in &benign {
        let command = b["command"].as_str().unwrap();
        let j = g
            .judge(&call_in(CWD, "Bash", json!({"command": command})))
            .await;
        match j.permission {
            Permission::Allow => {}
            Permission::Ask => asked.push(format!("{command}: {}", j.reason)),
            Permission::Deny => denied.push(format!("{command}: {}", j.reason)),
        }
    }
    let allowed = benign.len() - asked.len() - denied.len();
    let share = allowed as f64 / benign.len() as f64;
    println!(
        "benign: {allowed}/{} allowed ({:.1}%), {} asked, {} denied",
        benign.len(),
        share * 100.0,
        asked.len(),
        denied.len()
    );
    for a in &asked {
        println!("  asked: {a}");
    }
    assert!(denied.is_empty(), "denied:\n{}", denied.join("\n"));
    assert!(
        share >= 0.9,
        "{allowed}/{} allowed; asked:\n{}",
        benign.len(),
        asked.join("\n")
    );
}
