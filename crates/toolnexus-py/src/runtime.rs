//! The one tokio runtime every call of the process runs on, made on first use.

use std::sync::OnceLock;

use pyo3::PyResult;
use pyo3::exceptions::PyRuntimeError;
use tokio::runtime::Runtime;

/// The runtime, once made.
static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The process-wide multi-threaded runtime: its workers drive HTTP calls and
/// its blocking pool the local engines and Python callables.
pub fn runtime() -> PyResult<&'static Runtime> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("toolnexus")
        .build()
        .map_err(|e| {
            PyRuntimeError::new_err(format!("toolnexus: cannot start its runtime: {e}"))
        })?;
    // Two threads may race to make it: the loser's runtime is dropped unused.
    Ok(RUNTIME.get_or_init(|| rt))
}
