//! The installers' edits, on files in a temporary directory.

use super::*;

#[test]
fn words_split_like_a_shell() {
    assert_eq!(
        split_words(r#" --style local  --model-dir '/a b/c' "x\"y" z\ w "#).unwrap(),
        ["--style", "local", "--model-dir", "/a b/c", "x\"y", "z w"]
    );
    assert_eq!(split_words("").unwrap(), Vec::<String>::new());
    assert_eq!(split_words("''").unwrap(), [""]);
    assert!(split_words("'open").unwrap_err().contains("'"));
    assert!(split_words("\"open").unwrap_err().contains('"'));
}

#[test]
fn paths_are_quoted_only_when_needed() {
    assert_eq!(shell_quote("/usr/bin/toolnexus"), "/usr/bin/toolnexus");
    assert_eq!(shell_quote("/My Tools/toolnexus"), "'/My Tools/toolnexus'");
    assert_eq!(shell_quote("/it's/toolnexus"), r"'/it'\''s/toolnexus'");
    let quoted = shell_quote("/My Tools/toolnexus");
    assert_eq!(split_words(&quoted).unwrap(), ["/My Tools/toolnexus"]);
}

#[test]
fn guard_hooks_are_recognised_by_program_and_subcommand() {
    let hook = |c: &str| json!({"type": "command", "command": c});
    assert!(is_guard_hook(&hook("/opt/bin/toolnexus guard")));
    assert!(is_guard_hook(&hook(
        "'/My Tools/toolnexus' guard --policy p.json"
    )));
    assert!(is_guard_hook(&hook("toolnexus guard")));
    assert!(!is_guard_hook(&hook("toolnexus eval")));
    assert!(!is_guard_hook(&hook("/bin/guard toolnexus")));
    assert!(!is_guard_hook(&hook("my-toolnexus guard")));
    assert!(!is_guard_hook(&json!({"type": "command"})));
}

#[test]
fn line_and_column_count_characters() {
    assert_eq!(line_column("ab\ncdé\nx", 7), (2, 4));
    assert_eq!(line_column("", 0), (1, 1));
}
