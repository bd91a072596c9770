//! What a policy may not say because the guard would then fail open: hide a
//! field the rules or the judge need (Bash's `command`, a path), skip a tool
//! that runs commands or writes files, or name a field no tool it is about has
//! (such a rule never fires). Each refusal names its key.

use crate::call::{COMMAND_FIELDS, KNOWN_TOOLS, PATH_ARGS, WRITING_TOOLS};
use crate::fields::{PolicyError, err};
use crate::rules::Rule;

use super::Policy;

/// An MCP tool's name the checks try a rule's `tools` against: a rule that
/// could match one may read any field.
const SOME_MCP_TOOL: &str = "mcp__server__tool";

/// The known tools a rule's `tools` matches, and whether it could match an
/// MCP tool (any field) too.
fn tools_of(rule: &Rule) -> (Vec<&'static str>, bool) {
    match &rule.tools {
        None => (KNOWN_TOOLS.iter().map(|(t, _)| *t).collect(), true),
        Some(p) => {
            let known = KNOWN_TOOLS
                .iter()
                .map(|(t, _)| *t)
                .filter(|t| p.matches(t.as_bytes()) != Some(false))
                .collect();
            let mcp =
                p.as_str().contains("mcp") || p.matches(SOME_MCP_TOOL.as_bytes()) != Some(false);
            (known, mcp)
        }
    }
}

fn has_field(tool: &str, field: &str) -> bool {
    KNOWN_TOOLS
        .iter()
        .any(|(t, fields)| *t == tool && fields.contains(&field))
}

/// The first thing in `policy` that could let a call through unjudged.
pub(super) fn fail_open(policy: &Policy) -> Result<(), PolicyError> {
    for (i, tool) in policy.skip_tools.iter().enumerate() {
        if tool == "Bash" || WRITING_TOOLS.contains(&tool.as_str()) {
            return Err(err(
                format!("skip_tools[{i}]"),
                format!(
                    "{tool} runs commands or writes files: skipping it would let every such call through unjudged"
                ),
            ));
        }
    }
    for (tool, fields) in &policy.hide_fields {
        for f in fields {
            let at = || format!("hide_fields.{tool}");
            let everyone = tool == "*";
            let mcp = tool.starts_with("mcp__");
            if (tool == "Bash" || everyone) && f == "command"
                || (mcp || everyone) && COMMAND_FIELDS.contains(&f.as_str())
            {
                return Err(err(
                    at(),
                    format!(
                        "hides {f:?}, the command the rules and the judge read: a hidden command would be judged as nothing"
                    ),
                ));
            }
            if PATH_ARGS.contains(&f.as_str()) && (everyone || mcp || has_field(tool, f)) {
                return Err(err(
                    at(),
                    format!(
                        "hides {f:?}, a path the rules read: a hidden path could not be judged"
                    ),
                ));
            }
            for rule in &policy.rules {
                let named = rule.field.as_deref() == Some(f.as_str()) || rule.fields.contains(f);
                if !named {
                    continue;
                }
                let (known, any_mcp) = tools_of(rule);
                if everyone || known.contains(&tool.as_str()) || (mcp && any_mcp) {
                    return Err(err(
                        at(),
                        format!("hides {f:?}, which rule {} reads", rule.id),
                    ));
                }
            }
        }
    }
    for rule in &policy.rules {
        // Only a rule that names a field can name one no tool has: the rest
        // are not matched against the tools at all (a policy read per call).
        if rule.field.is_none() && rule.fields.is_empty() {
            continue;
        }
        let (known, any_mcp) = tools_of(rule);
        if any_mcp {
            continue;
        }
        let named: Vec<(&str, &str)> = rule
            .field
            .iter()
            .map(|f| ("field", f.as_str()))
            .chain(rule.fields.iter().map(|f| ("fields", f.as_str())))
            .collect();
        for (key, f) in named {
            if !known.iter().any(|t| has_field(t, f)) {
                return Err(err(
                    format!("rules ({}).{key}", rule.id),
                    format!(
                        "no tool it is about has a field {f:?} ({}): the rule would never fire",
                        if known.is_empty() {
                            "it names no known tool".to_string()
                        } else {
                            format!("its tools: {}", known.join(", "))
                        }
                    ),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::policy::Policy;

    fn bad(extra: &str) -> String {
        let text = format!(r#"{{"toolnexus":"guard-policy","version":2{extra}}}"#);
        Policy::parse(&text, None).unwrap_err().to_string()
    }

    #[test]
    fn the_builtin_policy_passes_the_checks_a_hook_skips_for_it() {
        super::fail_open(&Policy::builtin().unwrap()).unwrap();
    }

    #[test]
    fn a_policy_that_could_fail_open_is_refused_by_its_key() {
        assert!(
            bad(r#","hide_fields":{"Bash":["command"]}"#)
                .starts_with("hide_fields.Bash: hides \"command\""),
        );
        assert!(
            bad(r#","hide_fields":{"*":["file_path"]}"#)
                .starts_with("hide_fields.*: hides \"file_path\"")
        );
        assert!(
            bad(r#","hide_fields":{"mcp__x__run":["cmd"]}"#).starts_with("hide_fields.mcp__x__run")
        );
        assert!(bad(r#","skip_tools":["Bash"]"#).starts_with("skip_tools[0]: Bash runs commands"));
        let e = bad(
            r#","rules":[{"id":"x","tools":["Write"],"fields":["command"],"pattern":"a","verdict":"ask"}]"#,
        );
        assert!(
            e.starts_with("rules (x).fields: no tool it is about has a field \"command\""),
            "{e}"
        );
        let e = bad(
            r#","rules":[{"id":"x","tools":"^Bash$","field":"cmd","pattern":"a","verdict":"ask"}]"#,
        );
        assert!(e.contains("its tools: Bash"), "{e}");
        let e = bad(
            r#","rules":[{"id":"x","tools":"^Read$","field":"file_path","pattern":"a","verdict":"ask"}],"hide_fields":{"Read":["file_path"]}"#,
        );
        assert!(e.starts_with("hide_fields.Read"), "{e}");
        // What a rule on an MCP tool reads is the MCP tool's: any field.
        let ok = r#"{"toolnexus":"guard-policy","version":2,"rules":[{"id":"x","tools":["mcp__*"],"fields":["query"],"pattern":"DROP","verdict":"deny"}],"hide_fields":{"Bash":["description"]},"skip_tools":["Read"]}"#;
        Policy::parse(ok, None).unwrap();
    }
}
