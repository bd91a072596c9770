//! `toolnexus guard install|uninstall` and `toolnexus mcp install|uninstall`,
//! each on a fresh temporary home: what is written, what is kept (byte for
//! byte where the format allows), backups, dry runs, and the files refused.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{Out, TempDir, run, toolnexus};

/// The binary's path as the running process sees it (links resolved).
fn exe() -> String {
    std::fs::canonicalize(env!("CARGO_BIN_EXE_toolnexus"))
        .unwrap()
        .display()
        .to_string()
}

/// A temporary home; `cwd` is a project directory inside it.
struct Home {
    dir: TempDir,
}

impl Home {
    fn new(name: &str) -> Home {
        let dir = TempDir::new(name);
        std::fs::create_dir_all(dir.join("project")).unwrap();
        Home { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn write(&self, rel: &str, body: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, body).unwrap();
        p
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn exists(&self, rel: &str) -> bool {
        self.path(rel).exists()
    }

    /// Runs the binary from the project directory with `HOME` here.
    fn tn(&self, args: &[&str]) -> Out {
        self.tn_with(env!("CARGO_BIN_EXE_toolnexus"), args)
    }

    /// Runs `bin` (the binary, or a link to it elsewhere) the same way.
    fn tn_with(&self, bin: &str, args: &[&str]) -> Out {
        let mut c = toolnexus(&self.path("project"), args);
        if bin != env!("CARGO_BIN_EXE_toolnexus") {
            let mut other = Command::new(bin);
            other
                .args(args)
                .current_dir(self.path("project"))
                .stdin(Stdio::null());
            c = other;
        }
        c.env("HOME", self.dir.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("TYPESAFE_API_KEY")
            .env_remove("OPENROUTER_API_KEY");
        run(c)
    }
}

const SETTINGS: &str = ".claude/settings.json";

/// The hook entry `guard install` writes for `command`.
fn our_group(command: &str) -> Value {
    json!({"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 10}]})
}

/// Pretty JSON with a trailing newline, as the files are written.
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

/// A user's settings with other keys, other PreToolUse groups and other events.
fn busy_settings() -> Value {
    json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(git status)"], "deny": []},
        "hooks": {
            "PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --write"}]}],
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/audit.sh", "timeout": 5}]}
            ],
            "Stop": []
        },
        "zeta": 1
    })
}

fn ok(out: &Out) {
    assert_eq!(
        out.code, 0,
        "stdout: {}\nstderr: {}",
        out.stdout, out.stderr
    );
}

#[test]
fn guard_install_creates_a_missing_file_and_directory() {
    let h = Home::new("guard-new");
    let out = h.tn(&["guard", "install", "claude-code"]);
    ok(&out);
    assert!(
        out.stdout.contains("installed the toolnexus guard hook"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("(new file)"), "{}", out.stdout);
    let want = json!({"hooks": {"PreToolUse": [our_group(&format!("{} guard", exe()))]}});
    assert_eq!(h.read(SETTINGS), pretty(&want));
    assert!(!h.exists(".claude/settings.json.toolnexus.bak"));
}

#[test]
fn guard_install_keeps_every_other_setting_and_hook_in_order() {
    let h = Home::new("guard-busy");
    let original = serde_json::to_string_pretty(&busy_settings()).unwrap();
    h.write(SETTINGS, &original);
    // The policy is checked where the hook's shell will find it (`~` is HOME).
    h.write("p.json", r#"{"toolnexus": "guard-policy", "version": 1}"#);
    let out = h.tn(&[
        "guard",
        "install",
        "claude-code",
        "--user",
        "--guard-args",
        "--policy ~/p.json",
    ]);
    ok(&out);
    let mut want = busy_settings();
    want["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(our_group(&format!("{} guard --policy ~/p.json", exe())));
    // Exact text: key order kept, two-space indent, trailing newline.
    assert_eq!(h.read(SETTINGS), pretty(&want));
    assert_eq!(h.read(".claude/settings.json.toolnexus.bak"), original);
    assert!(
        out.stdout.contains(&format!(
            "backup: {}",
            h.path(".claude/settings.json.toolnexus.bak").display()
        )),
        "{}",
        out.stdout
    );
}

#[test]
fn guard_install_twice_changes_nothing_the_second_time() {
    let h = Home::new("guard-twice");
    h.write(SETTINGS, &pretty(&busy_settings()));
    ok(&h.tn(&["guard", "install", "claude-code"]));
    let first = h.read(SETTINGS);
    let out = h.tn(&["guard", "install", "claude-code"]);
    ok(&out);
    assert!(out.stdout.contains("already installed"), "{}", out.stdout);
    assert!(out.stdout.contains("nothing changed"), "{}", out.stdout);
    assert_eq!(h.read(SETTINGS), first);
    let v: Value = serde_json::from_str(&first).unwrap();
    assert_eq!(
        v["hooks"]["PreToolUse"].as_array().unwrap().len(),
        2,
        "{first}"
    );
    assert_eq!(
        h.read(".claude/settings.json.toolnexus.bak"),
        pretty(&busy_settings()),
        "nothing changed, so the backup is still the first run's"
    );
}

/// A user's settings with toolnexus guard hooks of their own beside the one
/// `guard install` wrote (`ours`): one for Bash only, one for MCP tools only.
fn settings_with_the_users_guards(ours: &str) -> Value {
    json!({
        "hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [
                {"type": "command", "command": "~/bin/audit.sh"},
                {"type": "command", "command": "/opt/bin/toolnexus guard --policy /etc/bash-policy.json"}
            ]},
            {"matcher": "*", "hooks": [
                {"type": "command", "command": ours, "timeout": 3, "note": "mine"}
            ]},
            {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "toolnexus guard --policy mcp.json"}]}
        ]}
    })
}

#[test]
fn guard_install_replaces_only_its_own_hook_and_keeps_the_users_others() {
    let h = Home::new("guard-old");
    let old = settings_with_the_users_guards(
        "TOOLNEXUS_MODEL_DIR='/my models' '/old place/toolnexus' -q guard --server http://127.0.0.1:1",
    );
    h.write(SETTINGS, &pretty(&old));
    let out = h.tn(&["guard", "install", "claude-code"]);
    ok(&out);
    // Ours is updated in place: program and arguments new, the user's
    // environment prefix, flag and note kept; the others untouched.
    let mut want = old.clone();
    want["hooks"]["PreToolUse"][1]["hooks"][0] = json!({
        "type": "command",
        "command": format!("TOOLNEXUS_MODEL_DIR='/my models' {} -q guard", exe()),
        "timeout": 10,
        "note": "mine"
    });
    assert_eq!(h.read(SETTINGS), pretty(&want));
    assert!(
        out.stderr
            .contains("hooks.PreToolUse[0].hooks[1] (matcher \"Bash\")"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("hooks.PreToolUse[2].hooks[0]"),
        "{}",
        out.stderr
    );

    // With no hook of ours, a new group is added and the others stay.
    let h = Home::new("guard-others");
    let mut old = settings_with_the_users_guards("x");
    old["hooks"]["PreToolUse"].as_array_mut().unwrap().remove(1);
    h.write(SETTINGS, &pretty(&old));
    ok(&h.tn(&["guard", "install", "claude-code"]));
    let mut want = old.clone();
    want["hooks"]["PreToolUse"]
        .as_array_mut()
        .unwrap()
        .push(our_group(&format!("{} guard", exe())));
    assert_eq!(h.read(SETTINGS), pretty(&want));
}

#[test]
fn guard_uninstall_removes_an_edited_hook_of_ours_and_names_what_it_leaves() {
    for ours in [
        // An environment prefix, an added flag, both.
        "TOOLNEXUS_MODEL_DIR=/m /usr/local/bin/toolnexus guard",
        "toolnexus guard --policy /etc/p.json --quiet",
        "env RUST_LOG=warn exec /x/toolnexus -q guard",
    ] {
        let h = Home::new("guard-edited");
        let old = settings_with_the_users_guards(ours);
        h.write(SETTINGS, &pretty(&old));
        let out = h.tn(&["guard", "uninstall", "claude-code"]);
        assert_eq!(out.code, 2, "{ours}: {out:?}");
        assert!(
            out.stdout.contains("removed the toolnexus guard hook"),
            "{ours}: {}",
            out.stdout
        );
        let mut want = old.clone();
        want["hooks"]["PreToolUse"]
            .as_array_mut()
            .unwrap()
            .remove(1);
        assert_eq!(h.read(SETTINGS), pretty(&want), "{ours}");
        // Why the user's own were left, each by where it is.
        assert!(
            out.stderr
                .contains("2 toolnexus guard hooks are left in place"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains(
                "hooks.PreToolUse[0].hooks[1] (matcher \"Bash\"): runs the guard for some tools only"
            ),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("hooks.PreToolUse[2].hooks[0] (matcher \"mcp__.*\")"),
            "{}",
            out.stderr
        );
    }

    // A command line that runs the guard through a shell construct is not
    // taken for ours: left, and said so.
    let h = Home::new("guard-wrapped");
    let old = json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [
        {"type": "command", "command": "sh -c 'toolnexus guard || true'"}
    ]}]}});
    h.write(SETTINGS, &pretty(&old));
    let out = h.tn(&["guard", "uninstall", "claude-code"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stdout.contains("nothing to remove"), "{}", out.stdout);
    assert!(
        out.stderr
            .contains("1 toolnexus guard hook is left in place"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("runs `sh` …"), "{}", out.stderr);
    assert_eq!(h.read(SETTINGS), pretty(&old));
}

#[test]
fn concurrent_installs_lose_no_update() {
    let h = Home::new("concurrent");
    h.write(".claude.json", "{\"numStartups\": 3}\n");
    let children: Vec<_> = (0..40)
        .map(|i| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_toolnexus"));
            c.args(["mcp", "install", "claude-code", "--name", &format!("s{i}")])
                .current_dir(h.path("project"))
                .env("HOME", h.dir.path())
                .env_remove("CLAUDE_CONFIG_DIR")
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for child in children {
        ok(&crate::support::collect(child));
    }
    let v: Value = serde_json::from_str(&h.read(".claude.json")).unwrap();
    assert_eq!(v["mcpServers"].as_object().unwrap().len(), 40, "{v}");
    assert_eq!(v["numStartups"], 3);
}

#[test]
fn a_read_only_settings_file_is_refused_not_replaced() {
    let h = Home::new("read-only");
    let original = "{\"model\": \"opus\"}\n";
    let file = h.write(SETTINGS, original);
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o444)).unwrap();
    for args in [
        &["guard", "install", "claude-code"][..],
        &["guard", "install", "claude-code", "--dry-run"],
    ] {
        let out = h.tn(args);
        assert_eq!(out.code, 4, "{args:?}: {out:?}");
        assert!(
            out.stderr.contains("read-only (mode 0444)"),
            "{}",
            out.stderr
        );
        assert!(
            out.stderr.contains(&file.display().to_string()),
            "{}",
            out.stderr
        );
        assert_eq!(h.read(SETTINGS), original);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o444);
        assert!(!h.exists(".claude/settings.json.toolnexus.bak"));
    }
}

#[test]
fn install_checks_the_arguments_as_the_guard_and_the_server_read_them() {
    let h = Home::new("install-args");
    let bad_policy = h.write(
        "bad-policy.json",
        r#"{"toolnexus": "guard-policy", "version": 1, "on_eror": "ask"}"#,
    );
    let bad_rule = h.write(
        "bad-rule.json",
        r#"{"toolnexus": "guard-policy", "version": 1, "rules": [{"id": "x", "pattern": "(", "verdict": "ask"}]}"#,
    );
    let good = h.write(
        "good.json",
        r#"{"toolnexus": "guard-policy", "version": 1}"#,
    );
    let missing = h.path("missing.json").display().to_string();
    let guard = |extra: String| -> Vec<String> {
        vec![
            "guard".into(),
            "install".into(),
            "claude-code".into(),
            "--guard-args".into(),
            extra,
        ]
    };
    let mcp = |agent: &str, extra: String| -> Vec<String> {
        vec![
            "mcp".into(),
            "install".into(),
            agent.into(),
            "--mcp-args".into(),
            extra,
        ]
    };
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            guard(format!("--policy {missing}")),
            format!("--guard-args: --policy {missing}"),
        ),
        (
            guard(format!("--policy {}", bad_policy.display())),
            "on_eror: unknown key".into(),
        ),
        (
            guard(format!("--policy {}", bad_rule.display())),
            "rules[0] (x).pattern".into(),
        ),
        (
            guard("--polcy x.json".into()),
            "--guard-args: unexpected argument '--polcy'".into(),
        ),
        (
            mcp("cursor", "--style nope".into()),
            "--mcp-args: invalid value 'nope' for '--style".into(),
        ),
        (
            mcp("codex", format!("--policy {missing}")),
            format!("--mcp-args: --policy {missing}"),
        ),
        (
            mcp("claude-code", format!("--thresholds {missing}")),
            "--mcp-args: --thresholds".into(),
        ),
    ];
    for (args, says) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = h.tn(&args);
        assert_eq!(out.code, 2, "{args:?}: {out:?}");
        assert!(out.stderr.contains(&says), "{args:?}: {}", out.stderr);
        for written in [".claude", ".cursor", ".codex", ".claude.json"] {
            assert!(!h.exists(written), "{args:?}: {written} written");
        }
    }
    let args = format!("--policy {}", good.display());
    ok(&h.tn(&["guard", "install", "claude-code", "--guard-args", &args]));
    ok(&h.tn(&["mcp", "install", "cursor", "--mcp-args", "--style local"]));
}

#[test]
fn guard_uninstall_removes_only_ours_and_says_when_there_is_nothing() {
    let h = Home::new("guard-uninstall");
    let original = pretty(&busy_settings());
    h.write(SETTINGS, &original);
    ok(&h.tn(&["guard", "install", "claude-code"]));
    let out = h.tn(&["guard", "uninstall", "claude-code"]);
    ok(&out);
    assert!(
        out.stdout.contains("removed the toolnexus guard hook"),
        "{}",
        out.stdout
    );
    assert_eq!(
        h.read(SETTINGS),
        original,
        "back to the user's own settings"
    );

    let out = h.tn(&["guard", "uninstall", "claude-code"]);
    ok(&out);
    assert!(out.stdout.contains("nothing to remove"), "{}", out.stdout);
    assert_eq!(h.read(SETTINGS), original);
    assert_ne!(
        h.read(".claude/settings.json.toolnexus.bak"),
        original,
        "nothing written: the backup still holds the installed hook"
    );

    // Containers left empty by the removal go; a missing file is nothing to remove.
    let h = Home::new("guard-uninstall-empty");
    h.write(SETTINGS, "{\"model\": \"opus\"}");
    ok(&h.tn(&["guard", "install", "claude-code"]));
    ok(&h.tn(&["guard", "uninstall", "claude-code"]));
    assert_eq!(h.read(SETTINGS), "{\n  \"model\": \"opus\"\n}\n");
    let out = Home::new("guard-uninstall-none").tn(&["guard", "uninstall", "claude-code"]);
    ok(&out);
    assert!(out.stdout.contains("nothing to remove"), "{}", out.stdout);
}

#[test]
fn an_unparseable_file_is_refused_and_left_untouched() {
    let h = Home::new("guard-bad");
    let bad = "{\n  \"model\": \"opus\",\n  \"hooks\": {,\n}\n";
    h.write(SETTINGS, bad);
    for args in [
        &["guard", "install", "claude-code"][..],
        &["guard", "uninstall", "claude-code"],
        &["guard", "install", "claude-code", "--dry-run"],
    ] {
        let out = h.tn(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(&h.path(SETTINGS).display().to_string()),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("line 3, column"), "{}", out.stderr);
        assert_eq!(h.read(SETTINGS), bad);
        assert!(!h.exists(".claude/settings.json.toolnexus.bak"));
    }

    let bad = "[mcp_servers.x]\ncommand = \"npx\"\nargs = [\n";
    h.write(".codex/config.toml", bad);
    let out = h.tn(&["mcp", "install", "codex"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains(".codex/config.toml"), "{}", out.stderr);
    assert!(
        out.stderr.contains("invalid TOML at line"),
        "{}",
        out.stderr
    );
    assert_eq!(h.read(".codex/config.toml"), bad);
}

#[test]
fn a_wrong_typed_key_is_refused_naming_it() {
    let cases: &[(&str, &str, &[&str], &str)] = &[
        (
            SETTINGS,
            "[1, 2]",
            &["guard", "install", "claude-code"],
            "the top-level value is an array, not an object",
        ),
        (
            SETTINGS,
            "{\"hooks\": []}",
            &["guard", "install", "claude-code"],
            "`hooks` is an array",
        ),
        (
            SETTINGS,
            "{\"hooks\": {\"PreToolUse\": {\"matcher\": \"*\"}}}",
            &["guard", "install", "claude-code"],
            "`hooks.PreToolUse` is an object, not an array",
        ),
        (
            SETTINGS,
            "{\"hooks\": 3}",
            &["guard", "uninstall", "claude-code"],
            "`hooks` is a number",
        ),
        (
            ".claude.json",
            "{\"mcpServers\": \"x\"}",
            &["mcp", "install", "claude-code"],
            "`mcpServers` is a string",
        ),
        (
            ".cursor/mcp.json",
            "{\"mcpServers\": null}",
            &["mcp", "uninstall", "cursor"],
            "`mcpServers` is null",
        ),
        (
            ".codex/config.toml",
            "mcp_servers = 3\n",
            &["mcp", "install", "codex"],
            "`mcp_servers` is integer",
        ),
        (
            ".cursor/mcp.json",
            "{\"mcpServers\": {\"toolnexus\": {\"command\": \"npx\", \"args\": [\"tn\"]}}}",
            &["mcp", "install", "cursor"],
            "`mcpServers.toolnexus` is another server (runs `npx`)",
        ),
    ];
    for (rel, body, args, says) in cases {
        let h = Home::new("wrong-type");
        h.write(rel, body);
        let out = h.tn(args);
        assert_eq!(out.code, 2, "{args:?} on {body}: {}", out.stderr);
        assert!(
            out.stderr.contains(says),
            "{args:?} on {body}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(rel), "{}", out.stderr);
        assert_eq!(h.read(rel), *body, "untouched");
        assert!(!h.exists(&format!("{rel}.toolnexus.bak")));
    }
}

#[test]
fn one_backup_per_file_holds_the_text_before_the_latest_change() {
    let h = Home::new("backups");
    let original = "{\"model\": \"opus\"}\n";
    h.write(SETTINGS, original);
    // A backup of the user's own under the plain name is never touched.
    h.write(".claude/settings.json.bak", "mine");
    ok(&h.tn(&["guard", "install", "claude-code"]));
    assert_eq!(h.read(".claude/settings.json.toolnexus.bak"), original);
    let mut before = h.read(SETTINGS);
    for server in [
        "http://127.0.0.1:8181",
        "http://127.0.0.1:8282",
        "http://127.0.0.1:8383",
    ] {
        let args = format!("--server {server}");
        let out = h.tn(&["guard", "install", "claude-code", "--guard-args", &args]);
        ok(&out);
        assert!(
            out.stdout.contains("updated the toolnexus guard hook"),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout.contains("settings.json.toolnexus.bak"),
            "{}",
            out.stdout
        );
        assert_eq!(h.read(".claude/settings.json.toolnexus.bak"), before);
        before = h.read(SETTINGS);
        assert!(before.contains(&format!("guard --server {server}")));
    }
    let mut names: Vec<String> = std::fs::read_dir(h.path(".claude"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with("-lock"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "settings.json",
            "settings.json.bak",
            "settings.json.toolnexus.bak"
        ],
        "four runs, one backup"
    );
    assert_eq!(h.read(".claude/settings.json.bak"), "mine");
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let h = Home::new("dry-run");
    let original = "{\n  \"model\": \"opus\"\n}\n";
    h.write(SETTINGS, original);
    let out = h.tn(&["guard", "install", "claude-code", "--dry-run"]);
    ok(&out);
    let path = h.path(SETTINGS).display().to_string();
    assert!(
        out.stdout
            .starts_with(&format!("--- {path}\n+++ {path}\n@@ ")),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("@@ -1,3 +1,17 @@\n {\n"),
        "context line: {}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("\n-  \"model\": \"opus\"\n+  \"model\": \"opus\",\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(&format!("+            \"command\": \"{} guard\",", exe())),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("nothing written"), "{}", out.stdout);
    assert_eq!(h.read(SETTINGS), original);
    assert!(
        !h.exists(".claude/settings.json.toolnexus.bak"),
        "no backup on a dry run"
    );

    // A missing file: the diff adds it all; no file, no directory.
    let h = Home::new("dry-run-new");
    let out = h.tn(&["mcp", "install", "cursor", "--dry-run"]);
    ok(&out);
    assert!(out.stdout.contains("@@ -0,0 +1,"), "{}", out.stdout);
    assert!(!h.exists(".cursor"));
}

#[test]
fn mcp_install_into_claude_code_keeps_its_state_and_permissions() {
    let h = Home::new("mcp-claude");
    let state = json!({
        "numStartups": 42,
        "projects": {"/src/app": {"allowedTools": [], "mcpServers": {}, "history": [{"display": "fix it"}]}},
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": [], "env": {"A": "1"}}},
        "oauthAccount": {"emailAddress": "dev@example.com"},
        "userID": "abc"
    });
    let file = h.write(".claude.json", &serde_json::to_string(&state).unwrap());
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = h.tn(&[
        "mcp",
        "install",
        "claude-code",
        "--mcp-args",
        "--style local --model-dir '/models/my model'",
    ]);
    ok(&out);
    assert!(
        out.stdout
            .contains("installed the toolnexus MCP server `toolnexus`"),
        "{}",
        out.stdout
    );
    let mut want = state.clone();
    want["mcpServers"]["toolnexus"] = json!({
        "type": "stdio",
        "command": exe(),
        "args": ["mcp", "--style", "local", "--model-dir", "/models/my model"],
        "env": {}
    });
    assert_eq!(h.read(".claude.json"), pretty(&want));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "the file keeps its permissions");
    assert_eq!(
        mode(&h.path(".claude.json.toolnexus.bak")),
        0o600,
        "so does its backup"
    );

    let out = h.tn(&[
        "mcp",
        "install",
        "claude-code",
        "--mcp-args",
        "--style local --model-dir '/models/my model'",
    ]);
    ok(&out);
    assert!(out.stdout.contains("already installed"), "{}", out.stdout);

    ok(&h.tn(&["mcp", "uninstall", "claude-code"]));
    assert_eq!(h.read(".claude.json"), pretty(&state));
    assert_eq!(mode(&file), 0o600);
}

#[test]
fn dry_run_never_prints_a_neighbour_s_secret() {
    let h = Home::new("dry-run-secret");
    let state = json!({
        "primaryApiKey": "sk-ant-api03-SECRET",
        "mcpServers": {"github": {"command": "gh-mcp", "args": [], "env": {"GITHUB_TOKEN": "ghp_SECRET"}}}
    });
    h.write(".claude.json", &pretty(&state));
    let out = h.tn(&["mcp", "install", "claude-code", "--dry-run"]);
    ok(&out);
    assert!(
        out.stdout.contains("\"GITHUB_TOKEN\": \"…\""),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("SECRET"), "{}", out.stdout);
    assert!(
        out.stdout.contains("+    \"toolnexus\": {"),
        "{}",
        out.stdout
    );
    assert_eq!(h.read(".claude.json"), pretty(&state));
}

#[test]
fn mcp_install_into_cursor_under_a_name() {
    let h = Home::new("mcp-cursor");
    h.write(".cursor/mcp.json", "{\"mcpServers\": {\"pw\": {\"command\": \"npx\", \"args\": [\"-y\", \"@playwright/mcp\"]}}}");
    ok(&h.tn(&["mcp", "install", "cursor", "--name", "judge"]));
    let want = json!({"mcpServers": {
        "pw": {"command": "npx", "args": ["-y", "@playwright/mcp"]},
        "judge": {"command": exe(), "args": ["mcp"]}
    }});
    assert_eq!(h.read(".cursor/mcp.json"), pretty(&want));
    let out = h.tn(&["mcp", "uninstall", "cursor", "--name", "judge"]);
    ok(&out);
    assert!(
        out.stdout
            .contains("removed the toolnexus MCP server `judge`"),
        "{}",
        out.stdout
    );
    let out = h.tn(&["mcp", "uninstall", "cursor"]);
    ok(&out);
    assert!(out.stdout.contains("nothing to remove"), "{}", out.stdout);
    let v: Value = serde_json::from_str(&h.read(".cursor/mcp.json")).unwrap();
    assert_eq!(
        v,
        json!({"mcpServers": {"pw": {"command": "npx", "args": ["-y", "@playwright/mcp"]}}})
    );
}

#[test]
fn mcp_install_into_codex_keeps_comments_and_other_servers_byte_for_byte() {
    let h = Home::new("mcp-codex");
    let original = "\
# Codex, configured by hand.
model = \"o3\"   # the default model

[mcp_servers.docs]
# docs lookups
command = \"npx\"
args = [ \"-y\", \"docs-mcp\" ]   # pinned
env = { \"DOCS_TOKEN_ENV\" = \"DOCS\" }

[profiles.fast]
model = \"o4-mini\"
";
    h.write(".codex/config.toml", original);
    let out = h.tn(&["mcp", "install", "codex", "--mcp-args", "--style local"]);
    ok(&out);
    let text = h.read(".codex/config.toml");
    let ours = format!(
        "[mcp_servers.toolnexus]\ncommand = \"{}\"\nargs = [\"mcp\", \"--style\", \"local\"]\n",
        exe()
    );
    assert!(text.contains(&ours), "{text}");
    assert_eq!(
        text.replacen(&format!("{ours}\n"), "", 1),
        original,
        "everything else byte for byte"
    );
    assert_eq!(h.read(".codex/config.toml.toolnexus.bak"), original);

    // Updating keeps our table where it is; uninstalling restores the file.
    ok(&h.tn(&["mcp", "install", "codex"]));
    let text = h.read(".codex/config.toml");
    assert!(
        text.contains(&format!("command = \"{}\"\nargs = [\"mcp\"]\n", exe())),
        "{text}"
    );
    let installed = h.read(".codex/config.toml");
    ok(&h.tn(&["mcp", "uninstall", "codex"]));
    assert_eq!(h.read(".codex/config.toml"), original);
    assert_eq!(
        h.read(".codex/config.toml.toolnexus.bak"),
        installed,
        "three changes, one backup: the text before the latest"
    );
    assert!(!h.exists(".codex/config.toml.bak"));

    // A missing file is created with just our table.
    let h = Home::new("mcp-codex-new");
    ok(&h.tn(&["mcp", "install", "codex"]));
    assert_eq!(
        h.read(".codex/config.toml"),
        format!(
            "[mcp_servers.toolnexus]\ncommand = \"{}\"\nargs = [\"mcp\"]\n",
            exe()
        )
    );
}

#[test]
fn project_writes_under_the_current_directory() {
    let h = Home::new("project");
    let out = h.tn(&["guard", "install", "claude-code", "--project"]);
    ok(&out);
    assert!(h.exists("project/.claude/settings.json"));
    assert!(!h.exists(SETTINGS), "the user's settings are not touched");
    let out = h.tn(&["guard", "uninstall", "claude-code", "--project"]);
    ok(&out);
    assert_eq!(h.read("project/.claude/settings.json"), "{}\n");
}

#[test]
fn unknown_agents_and_bad_arguments_are_usage_errors() {
    let h = Home::new("usage");
    let out = h.tn(&["guard", "install", "cursor"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("unknown agent `cursor`; known agents: claude-code"),
        "{}",
        out.stderr
    );
    let out = h.tn(&["mcp", "install", "vscode"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("known agents: claude-code, cursor, codex"),
        "{}",
        out.stderr
    );
    let out = h.tn(&[
        "guard",
        "install",
        "claude-code",
        "--guard-args",
        "--policy 'a b",
    ]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--guard-args"), "{}", out.stderr);
    let out = h.tn(&["mcp", "install", "codex", "--mcp-args", "--style \"local"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--mcp-args"), "{}", out.stderr);
    let out = h.tn(&["guard", "install", "claude-code", "--project", "--user"]);
    assert_eq!(out.code, 2);
    assert!(
        !h.exists(".claude") && !h.exists(".codex"),
        "nothing written"
    );
}

#[test]
fn a_file_that_cannot_be_written_is_an_io_failure() {
    let h = Home::new("io");
    // A file where the directory should be: it cannot be created.
    h.write(".cursor", "not a directory");
    let out = h.tn(&["mcp", "install", "cursor"]);
    assert_eq!(out.code, 4, "{}", out.stderr);
    assert!(out.stderr.contains("cannot write"), "{}", out.stderr);
    assert!(out.stderr.contains(".cursor/mcp.json"), "{}", out.stderr);
    assert_eq!(h.read(".cursor"), "not a directory");
}

#[test]
fn a_binary_path_with_spaces_is_quoted_for_the_shell() {
    let h = Home::new("spaces");
    let dir = h.path("My Tools");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("toolnexus");
    if std::fs::hard_link(exe(), &bin).is_err() {
        std::fs::copy(exe(), &bin).unwrap();
    }
    let bin = std::fs::canonicalize(bin).unwrap().display().to_string();
    h.write(
        SETTINGS,
        &pretty(&json!({"hooks": {"PreToolUse": [our_group(&format!("{} guard", exe()))]}})),
    );
    ok(&h.tn_with(&bin, &["guard", "install", "claude-code"]));
    let want = json!({"hooks": {"PreToolUse": [our_group(&format!("'{bin}' guard"))]}});
    assert_eq!(
        h.read(SETTINGS),
        pretty(&want),
        "the old entry is replaced by the quoted one"
    );
    ok(&h.tn_with(&bin, &["guard", "uninstall", "claude-code"]));
    assert_eq!(h.read(SETTINGS), "{}\n");
}
