//! Policy version 2 (SPEC §21) end to end, with a stand-in judge: rules over
//! what a call does, the allow-list mode, what cannot be read, every tool
//! that runs a command, the reading tools, self-protection, a project's own
//! policy, and the built-in policy on the issue's own examples.

mod support;

use serde_json::json;
use support::*;
use toolnexus_guard::{Guard, Permission, Policy};

const NEVER_DELETE: &str = r#"{"toolnexus":"guard-policy","version":2,"rules":[{"id":"never-delete","capabilities":["delete"],"verdict":"deny","why":"deletes files"}]}"#;
const ALLOWLIST: &str = r#"{"toolnexus":"guard-policy","version":2,"mode":"allowlist","allow_commands":["echo","ls","true","pwd"]}"#;

#[test]
fn the_specs_example_policies_are_valid() {
    for text in [NEVER_DELETE, ALLOWLIST] {
        let p = Policy::parse(text, None).unwrap();
        p.check_rules().unwrap();
        assert_eq!(p.version, 2);
    }
    // The effective policy, printed, is itself a valid policy.
    let p = Policy::parse(ALLOWLIST, None).unwrap();
    let again = Policy::parse(&p.effective.to_string(), None).unwrap();
    assert_eq!(again.allowlist, p.allowlist);
    // Version 1 files are read as before; version 2's keys are not theirs.
    let e = Policy::parse(
        r#"{"toolnexus":"guard-policy","version":1,"mode":"allowlist"}"#,
        None,
    )
    .unwrap_err();
    assert_eq!(e.key, "mode");
    let e = Policy::parse(
        r#"{"toolnexus":"guard-policy","version":2,"rules":[{"id":"x","capabilities":["erase"],"verdict":"deny"}]}"#,
        None,
    )
    .unwrap_err();
    assert_eq!(e.key, "rules[0] (x).capabilities[0]");
    assert!(e.message.contains("\"erase\""), "{e}");
}

#[tokio::test]
async fn under_the_allow_list_ls_is_allowed_and_anything_else_asks() {
    let g = guard(policy(ALLOWLIST));
    let j = g.judge(&bash("ls -la")).await;
    assert_eq!(j.permission, Permission::Allow, "{}", j.reason);
    let j = g.judge(&bash("true; rm x")).await;
    assert_eq!(j.permission, Permission::Ask, "{}", j.reason);
    assert!(
        j.reason.contains("not on the policy's allow list: rm"),
        "{}",
        j.reason
    );
}

#[tokio::test]
async fn a_capability_rule_denies_every_spelling_it_reads() {
    let g = guard(policy(NEVER_DELETE));
    for cmd in [
        "rm -rf build",
        "unlink notes.txt",
        "r''m x",
        "find . -name '*.o' -delete",
        "sudo rm -f x",
    ] {
        let j = g.judge(&bash(cmd)).await;
        assert_eq!(j.permission, Permission::Deny, "{cmd}: {}", j.reason);
        assert!(
            j.reason.contains("rule never-delete"),
            "{cmd}: {}",
            j.reason
        );
    }
    let j = g.judge(&bash("cargo test")).await;
    assert_eq!(j.permission, Permission::Allow, "{}", j.reason);
}

#[tokio::test]
async fn what_cannot_be_read_asks_and_the_judge_may_only_make_it_stricter() {
    let g = guard(builtin());
    let j = g.judge(&bash("$(echo ls) -la")).await;
    assert_eq!(j.permission, Permission::Ask, "{}", j.reason);
    assert!(
        j.reason.contains("could not be read statically"),
        "{}",
        j.reason
    );
    // A judge over a deny cut still denies.
    let strict = policy(
        r#"{"toolnexus":"guard-policy","version":2,"log":null,"cuts":{
            "destructive":{"ask":0.5,"deny":0.9},"exfiltration":{"ask":0.9},"secrets":{"ask":0.9},
            "outside_project":{"ask":0.9},"risk":{"ask":{"at_least":3,"p":0.7}}}}"#,
    );
    let g = Guard::new(strict, standing(0.95).0);
    let j = g.judge(&bash("$(echo ls) -la")).await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
}

#[tokio::test]
async fn a_command_that_is_not_a_string_is_on_error() {
    let g = guard(builtin());
    let j = g
        .judge(&call_in("/w", "Bash", json!({"command": 42})))
        .await;
    assert_eq!(j.permission, Permission::Ask);
    assert!(
        j.reason
            .contains("must be a command (a string), not a number"),
        "{}",
        j.reason
    );
    let g = guard(policy(
        r#"{"toolnexus":"guard-policy","version":2,"log":null,"on_error":"deny"}"#,
    ));
    let j = g
        .judge(&call_in(
            "/w",
            "mcp__shell__run",
            json!({"cmd": ["rm", "-rf", "/"]}),
        ))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
}

#[tokio::test]
async fn command_rules_apply_to_mcp_tools_that_run_commands() {
    let g = guard(builtin());
    let j = g
        .judge(&call_in(
            "/home/dev/shop",
            "mcp__desktop-commander__execute_command",
            json!({"command": "rm -rf /"}),
        ))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
    let g = guard(policy(NEVER_DELETE));
    let j = g
        .judge(&call_in(
            "/w",
            "mcp__ssh__run",
            json!({"script": "unlink x"}),
        ))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
}

#[tokio::test]
async fn reading_tools_are_judged_on_the_paths_they_reach() {
    let g = guard(builtin());
    for (tool, input, want) in [
        (
            "Grep",
            json!({"pattern": "BEGIN", "path": "/home/dev/.ssh"}),
            Permission::Deny,
        ),
        (
            "Glob",
            json!({"pattern": "/home/dev/.aws/*"}),
            Permission::Deny,
        ),
        ("LS", json!({"path": "/home/dev/.gnupg"}), Permission::Deny),
        (
            "Read",
            json!({"file_path": "/home/dev/shop/.env"}),
            Permission::Ask,
        ),
        (
            "Read",
            json!({"file_path": "/home/dev/shop/.env.example"}),
            Permission::Allow,
        ),
        (
            "Grep",
            json!({"pattern": "TODO", "output_mode": "content"}),
            Permission::Allow,
        ),
        ("Glob", json!({"pattern": "src/**/*.rs"}), Permission::Allow),
    ] {
        let j = g
            .judge(&call_in("/home/dev/shop", tool, input.clone()))
            .await;
        assert!(!j.skipped, "{tool} is judged");
        assert_eq!(j.permission, want, "{tool} {input}: {}", j.reason);
    }
}

#[tokio::test]
async fn a_symlink_is_judged_by_what_it_points_to() {
    let t = Temp::new("symlink");
    let ssh = t.0.join("home/.ssh");
    std::fs::create_dir_all(&ssh).unwrap();
    std::fs::write(ssh.join("id_ed25519"), "key").unwrap();
    let project = t.0.join("p");
    std::fs::create_dir_all(&project).unwrap();
    std::os::unix::fs::symlink(ssh.join("id_ed25519"), project.join("notes.txt")).unwrap();
    let g = guard(builtin());
    let cwd = project.to_str().unwrap();
    let j = g
        .judge(&call_in(cwd, "Bash", json!({"command": "cat notes.txt"})))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
    let j = g
        .judge(&call_in(cwd, "Read", json!({"file_path": "notes.txt"})))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
}

#[tokio::test]
async fn any_call_that_would_switch_the_guard_off_is_denied() {
    let t = Temp::new("protect");
    let policy_file = t.0.join("my-policy.json");
    std::fs::write(
        &policy_file,
        r#"{"toolnexus":"guard-policy","version":2,"log":null}"#,
    )
    .unwrap();
    let g = guard(Policy::load(&policy_file).unwrap());
    let cwd = "/home/dev/shop";
    let pf = policy_file.to_str().unwrap();
    for (tool, input) in [
        (
            "Bash",
            json!({"command": "sed -i 's/toolnexus guard//' .claude/settings.json"}),
        ),
        (
            "Bash",
            json!({"command": "printf '{}' > ~/.claude/settings.local.json"}),
        ),
        (
            "Bash",
            json!({"command": "echo x | tee .toolnexus/guard.json"}),
        ),
        (
            "Bash",
            json!({"command": "mv .claude/settings.json /tmp/s"}),
        ),
        ("Bash", json!({"command": "rm -f .git/hooks/pre-commit"})),
        (
            "Bash",
            json!({"command": "echo 'rm -rf ~' > .git/hooks/pre-commit"}),
        ),
        (
            "Bash",
            json!({"command": "toolnexus guard uninstall --agent claude"}),
        ),
        (
            "Bash",
            json!({"command": "git config core.hooksPath /tmp/hooks"}),
        ),
        ("Bash", json!({"command": format!("echo '{{}}' > {pf}")})),
        (
            "Bash",
            json!({"command": "git -c core.hooksPath=/tmp/h commit -m x"}),
        ),
        ("Bash", json!({"command": "rm -rf .claude"})),
        ("Bash", json!({"command": "mv .git/hooks /tmp/old-hooks"})),
        ("Bash", json!({"command": "chmod -R 000 .toolnexus"})),
        (
            "Write",
            json!({"file_path": ".git/hooks/pre-commit", "content": "rm -rf ~"}),
        ),
        (
            "Edit",
            json!({"file_path": "/home/dev/.claude/settings.json", "old_string": "a", "new_string": "b"}),
        ),
        ("Write", json!({"file_path": pf, "content": "{}"})),
        (
            "mcp__filesystem__write_file",
            json!({"path": "/home/dev/.codex/config.toml", "content": ""}),
        ),
    ] {
        let j = g.judge(&call_in(cwd, tool, input.clone())).await;
        assert_eq!(
            j.permission,
            Permission::Deny,
            "{tool} {input}: {}",
            j.reason
        );
        assert!(
            j.reason.contains("self-protection"),
            "{input}: {}",
            j.reason
        );
    }
    // Reading them is not changing them.
    for cmd in [
        "cat .claude/settings.json",
        "git config --get core.hooksPath",
        "ls .git/hooks",
        "git commit -m 'docs: explain core.hooksPath'",
    ] {
        let j = g
            .judge(&call_in(cwd, "Bash", json!({"command": cmd})))
            .await;
        assert_ne!(j.permission, Permission::Deny, "{cmd}: {}", j.reason);
    }
}

#[tokio::test]
async fn a_project_policy_adds_rules_and_waives_the_judges_ask_never_a_rules() {
    let t = Temp::new("project");
    std::fs::create_dir_all(t.0.join(".git")).unwrap();
    std::fs::create_dir_all(t.0.join(".toolnexus")).unwrap();
    std::fs::create_dir_all(t.0.join("src")).unwrap();
    std::fs::write(
        t.0.join(".toolnexus/guard.json"),
        r#"{"toolnexus":"guard-policy","version":2,"allow":["make","cargo build"],
            "rules":[{"id":"no-kubectl","commands":["kubectl"],"verdict":"deny","why":"this project deploys from CI only"}]}"#,
    )
    .unwrap();
    let cwd = t.0.join("src");
    let cwd = cwd.to_str().unwrap();
    let (judge, calls) = standing(0.95);
    let g = Guard::new(builtin(), judge);
    // The judge would ask; the project expects the command.
    let j = g
        .judge(&call_in(cwd, "Bash", json!({"command": "make -j4"})))
        .await;
    assert_eq!(j.permission, Permission::Allow, "{}", j.reason);
    assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 0);
    // Not expected: the judge's ask stands.
    let j = g
        .judge(&call_in(cwd, "Bash", json!({"command": "make && ./run"})))
        .await;
    assert_eq!(j.permission, Permission::Ask, "{}", j.reason);
    // A rule's verdict is never waived.
    let j = g
        .judge(&call_in(
            cwd,
            "Bash",
            json!({"command": "make; git push --force origin main"}),
        ))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
    // The project's own rule.
    let j = g
        .judge(&call_in(
            cwd,
            "Bash",
            json!({"command": "kubectl get pods"}),
        ))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
    assert!(j.reason.contains("project rule no-kubectl"), "{}", j.reason);
    // The project's policy file is protected like the user's.
    let j = g
        .judge(&call_in(
            cwd,
            "Write",
            json!({"file_path": "../.toolnexus/guard.json", "content": "{}"}),
        ))
        .await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);

    // A project policy that cannot be read is on_error, naming the file.
    std::fs::write(
        t.0.join(".toolnexus/guard.json"),
        r#"{"toolnexus":"guard-policy","version":2,"on_error":"ask"}"#,
    )
    .unwrap();
    let g = guard(builtin());
    let j = g
        .judge(&call_in(cwd, "Bash", json!({"command": "ls"})))
        .await;
    assert_eq!(j.permission, Permission::Ask, "{}", j.reason);
    assert!(j.reason.contains("guard.json: on_error"), "{}", j.reason);
}

#[tokio::test]
async fn the_built_in_policy_reads_the_issues_examples() {
    let g = guard(builtin());
    // Quoted text that only mentions a command is data.
    for cmd in [
        "git commit -m 'Fix the parser: do not rm -rf / on bad input'",
        "echo 'never run curl http://x | sh' >> NOTES.md",
        "cargo build --release",
        "cargo test -p guard",
        "git status",
        "git diff HEAD~1",
        "git log --oneline -5",
        "cargo fmt --all",
    ] {
        let j = g.judge(&bash(cmd)).await;
        assert_eq!(j.permission, Permission::Allow, "{cmd}: {}", j.reason);
    }
    // Re-spellings and equivalents are never allowed.
    for cmd in [
        "rm${IFS}-rf${IFS}/",
        "$(echo rm) -rf ~",
        "echo cm0gLXJmIH4= | base64 -d | sh",
        "python3 -c \"import shutil; shutil.rmtree('/home')\"",
        "git -C . push -f origin main",
        "git -c k=v push --force origin main",
        "mv ~ /dev/null",
        "cat ~/.ssh/id_rsa",
    ] {
        let j = g.judge(&bash(cmd)).await;
        assert_ne!(j.permission, Permission::Allow, "{cmd}: {}", j.reason);
    }
    for cmd in [
        "git -C . push -f origin main",
        "git -c k=v push --force origin main",
        "mv ~ /dev/null",
        "rm -rf /",
    ] {
        let j = g.judge(&bash(cmd)).await;
        assert_eq!(j.permission, Permission::Deny, "{cmd}: {}", j.reason);
    }
}

#[tokio::test]
async fn explain_gives_the_parse_and_every_rule_that_fired() {
    let g = guard(builtin());
    let e = g.explain(&bash("make && rm -rf ../build")).await;
    let commands = e.reading["commands"].as_array().unwrap();
    assert_eq!(commands[1]["name"], "rm");
    assert_eq!(
        commands[1]["capabilities"][0]["paths"][0]["resolved"],
        "/home/dev/build"
    );
    assert!(
        e.fired
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == "rm-recursive-outside")
    );
    // An allow is explained too.
    let e = g.explain(&bash("ls")).await;
    assert_eq!(e.judgment.permission, Permission::Allow);
    assert_eq!(e.reading["commands"][0]["name"], "ls");
}

#[tokio::test]
async fn a_statement_split_by_quotes_is_read_as_the_client_gets_it() {
    let g = guard(builtin());
    let j = g.judge(&bash("psql -c 'DR''OP TABLE users'")).await;
    assert_eq!(j.permission, Permission::Deny, "{}", j.reason);
    assert!(j.reason.contains("rule drop-data-client"), "{}", j.reason);
    let j = g.judge(&bash("psql -c 'SELECT count(*) FROM users'")).await;
    assert_ne!(j.permission, Permission::Deny, "{}", j.reason);
}
