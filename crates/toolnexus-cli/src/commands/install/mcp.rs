//! `toolnexus mcp install|uninstall`: toolnexus's server entry in Claude
//! Code's and Cursor's JSON and Codex's TOML, everything else kept.

use super::*;

pub(super) fn mcp(args: McpInstallArgs, install: bool) -> Result<Exit> {
    let verb = if install { "install" } else { "uninstall" };
    let agent = known_agent(&format!("mcp {verb}"), &args.agent, MCP_AGENTS)?;
    let name = args.name.trim().to_string();
    if name.is_empty() {
        return Err(exit::usage("--name: the server's name is empty"));
    }
    let words = split_words(args.mcp_args.as_deref().unwrap_or(""))
        .map_err(|e| exit::usage(format!("--mcp-args: {e}")))?;
    if install {
        check_mcp_args(&words)?;
    }
    let exe = exe()?;
    let mut server_args = vec!["mcp".to_string()];
    server_args.extend(words);
    let server = Server {
        name: &name,
        command: &exe,
        args: &server_args,
        install,
    };
    match agent {
        "codex" => {
            let path = codex_dir()?.join("config.toml");
            apply(&path, args.dry_run, install, |text, shown| {
                mcp_toml(text, shown, &server)
            })
        }
        agent => {
            let (path, claude) = if agent == "claude-code" {
                (claude_json()?, true)
            } else {
                (home()?.join(".cursor").join("mcp.json"), false)
            };
            apply(&path, args.dry_run, install, |text, shown| {
                mcp_json(text, shown, &server, claude)
            })
        }
    }
}

/// Checks `--mcp-args` as `toolnexus mcp` will read them when the agent starts
/// it: flags it accepts with values it takes (an unknown `--style` is an
/// error here, not in the agent's log), and the files it reads before serving
/// (a thresholds file, a guard policy, a tape) there and well-formed.
pub(super) fn check_mcp_args(words: &[String]) -> Result<()> {
    use clap::Parser as _;
    let mut argv = vec!["toolnexus".to_string(), "mcp".to_string()];
    argv.extend(words.iter().cloned());
    let cli = crate::args::Cli::try_parse_from(&argv)
        .map_err(|e| exit::usage(format!("--mcp-args: {}", clap_first_line(&e))))?;
    let crate::args::Command::Mcp(m) = cli.command else {
        unreachable!("parsed as `toolnexus mcp`")
    };
    if m.command.is_some() {
        return Err(exit::usage(
            "--mcp-args: a subcommand is not a server argument; the agent runs `toolnexus mcp` with its flags",
        ));
    }
    let at = |e: anyhow::Error| exit::usage(format!("--mcp-args: {e:#}"));
    if let Some(p) = &m.thresholds {
        input::read_thresholds(p, None).map_err(at)?;
    }
    if let Some(p) = &m.policy {
        let loaded = toolnexus_guard::Policy::load(p)
            .map_err(|e| exit::usage(format!("--mcp-args: --policy {}: {e}", p.display())))?;
        loaded
            .check_rules()
            .map_err(|e| exit::usage(format!("--mcp-args: --policy {}: {e}", p.display())))?;
        for w in &loaded.warnings {
            tell!("warning: {w}");
        }
    }
    if let Some(p) = &m.style.tape
        && !p.is_file()
    {
        return Err(exit::usage(format!(
            "--mcp-args: --tape {}: no such file",
            p.display()
        )));
    }
    Ok(())
}

/// The MCP server entry to write or remove.
pub(super) struct Server<'a> {
    name: &'a str,
    command: &'a str,
    args: &'a [String],
    install: bool,
}

impl Server<'_> {
    fn what(&self) -> String {
        format!("the toolnexus MCP server `{}`", self.name)
    }

    /// The sentence for an entry under our name that is another program's.
    fn not_ours(&self, shown: &str, key: &str, command: Option<&str>) -> anyhow::Error {
        // Only the program: a command line may carry a secret.
        let program = command.and_then(|c| c.split_whitespace().next());
        let runs = program.map_or("no toolnexus command".to_string(), |p| {
            format!("runs `{p}`")
        });
        exit::usage(format!(
            "{shown}: `{key}` is another server ({runs}), not toolnexus's; the file is left as it is \
             (choose another --name)"
        ))
    }
}

/// `mcpServers.<name>` in a JSON file: Claude Code's entry has `type` and
/// `env`, Cursor's only `command` and `args`. Fields of an existing entry that
/// are not these (an `env` the user filled in) are kept.
pub(super) fn mcp_json(
    text: Option<&str>,
    shown: &str,
    server: &Server,
    claude: bool,
) -> Result<Edit> {
    let mut root = parse_json(text, shown)?;
    let before = root.clone();
    let key = format!("mcpServers.{}", server.name);
    let what = server.what();
    let top = top_object(&mut root, shown)?;
    if !server.install && !top.contains_key("mcpServers") {
        return Ok(Edit::Same(format!(
            "{what} is not in {shown}; nothing to remove"
        )));
    }
    let servers = top.entry("mcpServers").or_insert_with(|| json!({}));
    let servers = object_at(servers, shown, "mcpServers")?;
    let found = match servers.get(server.name) {
        None => false,
        Some(entry) => {
            let command = entry.get("command").and_then(Value::as_str);
            if !command.is_some_and(is_toolnexus) {
                return Err(server.not_ours(shown, &key, command));
            }
            true
        }
    };
    if !server.install {
        if !found {
            return Ok(Edit::Same(format!(
                "{what} is not in {shown}; nothing to remove"
            )));
        }
        servers.shift_remove(server.name);
        if servers.is_empty() {
            top.shift_remove("mcpServers");
        }
        return Ok(Edit::To(
            json_text(&root),
            format!("removed {what} from {shown}"),
        ));
    }
    let entry = servers
        .entry(server.name.to_string())
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .expect("a new object, or an entry whose command was read above");
    if claude {
        entry.insert("type".into(), json!("stdio"));
    }
    entry.insert("command".into(), json!(server.command));
    entry.insert("args".into(), json!(server.args));
    if claude && !entry.contains_key("env") {
        entry.insert("env".into(), json!({}));
    }
    Ok(if root == before {
        Edit::Same(format!(
            "{what} is already installed in {shown}; nothing changed"
        ))
    } else {
        Edit::To(
            json_text(&root),
            format!(
                "{} {what} in {shown}",
                if found { "updated" } else { "installed" }
            ),
        )
    })
}

/// `[mcp_servers.<name>]` in Codex's config.toml, edited in place: comments,
/// spacing and every other table are kept byte for byte.
pub(super) fn mcp_toml(text: Option<&str>, shown: &str, server: &Server) -> Result<Edit> {
    use toml_edit::{Array, DocumentMut, Item, Table, value};

    let old = text.unwrap_or("");
    let mut doc: DocumentMut = old.parse().map_err(|e: toml_edit::TomlError| {
        let (line, column) = e.span().map_or((1, 1), |s| line_column(old, s.start));
        exit::usage(format!(
            "{shown}: invalid TOML at line {line}, column {column}: {}; the file is left as it is",
            e.message().trim()
        ))
    })?;
    let key = format!("mcp_servers.{}", server.name);
    let what = server.what();
    let inline = is_inline(doc.as_table(), "mcp_servers");
    let top = doc.as_table_mut();
    if !server.install && !top.contains_key("mcp_servers") {
        return Ok(Edit::Same(format!(
            "{what} is not in {shown}; nothing to remove"
        )));
    }
    let servers = top.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        t.set_implicit(true);
        Item::Table(t)
    });
    let kind = servers.type_name();
    let Some(servers) = servers.as_table_like_mut() else {
        return Err(exit::usage(format!(
            "{shown}: `mcp_servers` is {kind}, not a table; the file is left as it is"
        )));
    };
    let found = match servers.get(server.name) {
        None => false,
        Some(entry) => {
            let command = entry
                .as_table_like()
                .and_then(|t| t.get("command"))
                .and_then(Item::as_str);
            if !command.is_some_and(is_toolnexus) {
                return Err(server.not_ours(shown, &key, command));
            }
            true
        }
    };
    if !server.install {
        if !found {
            return Ok(Edit::Same(format!(
                "{what} is not in {shown}; nothing to remove"
            )));
        }
        servers.remove(server.name);
        if servers.is_empty() {
            doc.as_table_mut().remove("mcp_servers");
        }
        return Ok(Edit::To(
            doc.to_string(),
            format!("removed {what} from {shown}"),
        ));
    }
    let args: Array = server.args.iter().map(String::as_str).collect();
    if !found {
        if inline {
            // `mcp_servers = { … }`: the new server is an inline table too.
            let mut t = toml_edit::InlineTable::new();
            t.insert("command", server.command.into());
            t.insert("args", toml_edit::Value::Array(args));
            servers.insert(server.name, Item::Value(toml_edit::Value::InlineTable(t)));
        } else {
            let mut t = Table::new();
            t.insert("command", value(server.command));
            t.insert("args", value(args));
            servers.insert(server.name, Item::Table(t));
        }
        return Ok(Edit::To(
            doc.to_string(),
            format!("installed {what} in {shown}"),
        ));
    }
    let entry = servers
        .get_mut(server.name)
        .and_then(Item::as_table_like_mut)
        .expect("checked above");
    let same_args = entry.get("args").and_then(Item::as_array).is_some_and(|a| {
        a.len() == server.args.len()
            && a.iter()
                .zip(server.args)
                .all(|(v, s)| v.as_str() == Some(s))
    });
    if entry.get("command").and_then(Item::as_str) != Some(server.command) {
        set_keeping_decor(entry, "command", server.command.into());
    }
    if !same_args {
        set_keeping_decor(entry, "args", toml_edit::Value::Array(args));
    }
    let new = doc.to_string();
    Ok(if new == old {
        Edit::Same(format!(
            "{what} is already installed in {shown}; nothing changed"
        ))
    } else {
        Edit::To(new, format!("updated {what} in {shown}"))
    })
}

/// Whether `key` of `table` is written inline (`key = { … }`).
pub(super) fn is_inline(table: &toml_edit::Table, key: &str) -> bool {
    table.get(key).is_some_and(|i| i.is_inline_table())
}

/// Sets `key` to `v`, keeping the old value's surrounding spaces and comment.
pub(super) fn set_keeping_decor(
    t: &mut dyn toml_edit::TableLike,
    key: &str,
    mut v: toml_edit::Value,
) {
    if let Some(old) = t.get(key).and_then(toml_edit::Item::as_value) {
        *v.decor_mut() = old.decor().clone();
        t.insert(key, toml_edit::Item::Value(v));
    } else {
        t.insert(key, toml_edit::value(v));
    }
}

// ---------------------------------------------------------------------------
// The one way a file changes
