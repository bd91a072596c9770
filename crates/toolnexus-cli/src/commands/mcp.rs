//! `toolnexus mcp`: judgments as MCP tools over stdio.

use anyhow::Result;

use crate::args::McpArgs;
use crate::exit::{self, Exit};

/// Serves MCP on stdin/stdout until the client closes it.
pub async fn run(_args: McpArgs) -> Result<Exit> {
    Err(exit::usage("mcp: not available yet"))
}
