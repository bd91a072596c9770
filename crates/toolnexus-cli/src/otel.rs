//! The OpenTelemetry export of a command that evaluates (SPEC §25): on with
//! `--otel`, or when the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or the
//! traces-specific variable) is set; the rest of its configuration is the
//! standard `OTEL_*` variables, read by the library.

use toolnexus::otel::{OtelGuard, OtelOptions};

use crate::args::OtelArgs;

/// Starts the export the flags or the environment ask for, for a command
/// that `evaluates`. A failure to set it up is a warning: the command judges
/// all the same.
pub fn start(args: &OtelArgs, evaluates: bool) -> Option<OtelGuard> {
    if !evaluates || !(args.otel || toolnexus::otel::configured_by_env()) {
        return None;
    }
    match toolnexus::otel::install(OtelOptions {
        content: args.otel_content,
        ..Default::default()
    }) {
        Ok(guard) => Some(guard),
        Err(e) => {
            crate::warnings::warn(&e.to_string());
            None
        }
    }
}
