//! The OpenTelemetry export of a command that evaluates (SPEC §25): on with
//! `--otel`, or when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
//! traces-specific variable) is set; the rest of its configuration is the
//! standard `OTEL_*` variables, read by the library.
//!
//! The export's last flush, as the command ends, waits for the collector a
//! bounded time: [`FLUSH`] for every command, [`FLUSH_HOOK`] for the guard's
//! hook, whose caller (an agent) waits on its exit. A collector that has not
//! answered by then is warned about and what it did not take is dropped.

use std::time::Duration;

use toolnexus::otel::{OtelGuard, OtelOptions};

use crate::args::{Command, OtelArgs};

/// How long a command's exit waits for the collector.
pub const FLUSH: Duration = Duration::from_secs(1);

/// How long `toolnexus guard`'s exit waits for the collector: the agent
/// waits on the hook.
pub const FLUSH_HOOK: Duration = Duration::from_millis(200);

/// Starts the export the flags or the environment ask for, for a command
/// that evaluates. A failure to set it up is a warning: the command judges
/// all the same.
pub fn start(args: &OtelArgs, command: &Command) -> Option<OtelGuard> {
    if !command.evaluates() || !(args.otel || toolnexus::otel::configured_by_env()) {
        return None;
    }
    let hook = matches!(command, Command::Guard(g) if g.command.is_none());
    match toolnexus::otel::install(OtelOptions {
        content: args.otel_content,
        flush_timeout: Some(if hook { FLUSH_HOOK } else { FLUSH }),
        ..Default::default()
    }) {
        Ok(guard) => Some(guard),
        Err(e) => {
            crate::warnings::warn(&e.to_string());
            None
        }
    }
}
