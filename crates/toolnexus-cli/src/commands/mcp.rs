//! `toolnexus mcp`: the flags → the stack and the server's settings →
//! `toolnexus_server::mcp` over stdio → the exit code. What the server does is
//! documented there. Standard output carries protocol frames only: status
//! and warnings go to standard error; exit 0 when the client closes standard
//! input.

use std::sync::Arc;

use anyhow::Result;
use toolnexus_server::Backend;
use toolnexus_server::mcp::{McpConfig, McpError, serve_stdio};

use crate::args::{McpArgs, StyleArgs, StyleName};
use crate::exit::{self, Exit};
use crate::input;
use crate::style::{self, Fallback};

/// Serves MCP on stdin/stdout until the client closes it.
pub async fn run(args: McpArgs) -> Result<Exit> {
    let style_args = pick_style(&args.style)?;
    let built = style::build_with(
        &style_args,
        Fallback::SystemOne,
        &style::Layers {
            prices: Some(&args.prices),
            cache: args
                .cache
                .as_deref()
                .map(|p| (p, toolnexus::pinning::DEFAULT_ALIAS_TTL)),
            ..Default::default()
        },
    )?;
    let bands = args
        .thresholds
        .as_deref()
        .map(|p| input::read_thresholds(p, None))
        .transpose()?;
    if built.style == StyleName::SystemOne && !style::key_is_set(&style::key_env(&style_args.live))
    {
        tell!(
            "mcp: note: no {} set; requests carry no API key ({})",
            style::key_env(&style_args.live),
            style::describe(&built)
        );
    }
    tell!("mcp: serving on stdio ({})", style::describe(&built));
    let backend = Backend::new(built.classifier, built.style.as_str(), built.call);
    let config = McpConfig {
        bands,
        policy: args.policy.clone(),
        model_dir: args.style.model_dir.clone(),
        precision: style::judge_precision(&args.style)?,
    };
    match serve_stdio(backend, config, Arc::new(crate::warnings::ServerLog)).await {
        Ok(()) => Ok(Exit::Success),
        Err(e @ McpError::Start(_)) => Err(exit::usage(e)),
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// The style flags, with `--style local` filled in when nothing else is named
/// (no `--style`, no `--tape`, no API key) and the embedded model is on this
/// machine; without it, exit 2 saying how to get one.
fn pick_style(args: &StyleArgs) -> Result<StyleArgs> {
    let mut args = args.clone();
    let var = style::key_env(&args.live);
    if args.live.style.is_some()
        || args.tape.is_some()
        || args.tape_match.is_some()
        || style::key_is_set(&var)
    {
        return Ok(args);
    }
    let dir = toolnexus_local::model_dir(
        args.model_dir.as_deref(),
        &toolnexus::classifier::EnvSource::process(),
    )
    .map_err(|e| exit::usage(format!("--model-dir: {e}")))?;
    if dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file() {
        args.live.style = Some(StyleName::LOCAL);
        return Ok(args);
    }
    // The one no-key line every command says (then --style local is the default).
    Err(exit::usage(style::no_key_line(
        &args.live,
        args.model_dir.as_deref(),
    )))
}
