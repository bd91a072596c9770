//! The flags every command that evaluates shares to export what it judges:
//! global, so `eval`, `batch`, `serve`, `mcp`, `guard` and `assess run` take
//! them in one place (other commands accept and ignore them).

use clap::Args;

/// `--otel` and `--otel-content`: OpenTelemetry export of every call.
#[derive(Debug, Clone, Default, Args)]
pub struct OtelArgs {
    /// eval, batch, serve, mcp, guard, assess run: export each call as an
    /// OpenTelemetry span with its evaluation events, and the call metrics,
    /// over OTLP/HTTP (protobuf) to OTEL_EXPORTER_OTLP_ENDPOINT (default
    /// http://localhost:4318). On without the flag when that variable (or
    /// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set.
    #[arg(long, global = true)]
    pub otel: bool,
    /// With the export: also the state text and the questions' instructions
    /// (they may hold personal data; credentials are never exported).
    #[arg(long, global = true)]
    pub otel_content: bool,
}
