//! `toolnexus guard install|uninstall` and `toolnexus mcp install|uninstall`:
//! merge toolnexus into an agent's own configuration file.

use anyhow::Result;

use crate::args::{HookInstallArgs, McpInstallArgs};
use crate::exit::{self, Exit};

/// `toolnexus guard install AGENT`.
pub fn guard_install(_args: HookInstallArgs) -> Result<Exit> {
    Err(exit::usage("guard install: not available yet"))
}

/// `toolnexus guard uninstall AGENT`.
pub fn guard_uninstall(_args: HookInstallArgs) -> Result<Exit> {
    Err(exit::usage("guard uninstall: not available yet"))
}

/// `toolnexus mcp install AGENT`.
pub fn mcp_install(_args: McpInstallArgs) -> Result<Exit> {
    Err(exit::usage("mcp install: not available yet"))
}

/// `toolnexus mcp uninstall AGENT`.
pub fn mcp_uninstall(_args: McpInstallArgs) -> Result<Exit> {
    Err(exit::usage("mcp uninstall: not available yet"))
}
