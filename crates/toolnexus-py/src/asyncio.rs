//! A library call as an asyncio future: the call runs on the runtime, its
//! result is handed to the event loop thread-safely, and cancelling the
//! Python future cancels the call.

use std::future::Future;

use pyo3::prelude::*;
use tokio_util::sync::CancellationToken;

use crate::runtime::runtime;

/// The done-callback that cancels a call when its asyncio future is cancelled.
#[pyclass(module = "toolnexus._native", frozen)]
pub struct CancelOnDone {
    token: CancellationToken,
}

#[pymethods]
impl CancelOnDone {
    fn __call__(&self, future: &Bound<'_, PyAny>) -> PyResult<()> {
        if future.call_method0("cancelled")?.extract::<bool>()? {
            self.token.cancel();
        }
        Ok(())
    }
}

/// Sets a future's result or exception unless it is done already (it was
/// cancelled while the call finished), on the loop's own thread.
#[pyfunction]
fn settle(future: &Bound<'_, PyAny>, ok: bool, value: &Bound<'_, PyAny>) -> PyResult<()> {
    if future.call_method0("done")?.extract::<bool>()? {
        return Ok(());
    }
    match ok {
        true => future.call_method1("set_result", (value,))?,
        false => future.call_method1("set_exception", (value,))?,
    };
    Ok(())
}

/// Runs `call(token)` on the runtime and returns an asyncio future of the
/// running loop for its result; `finish` turns the result into a Python
/// value (or the exception to raise) with the GIL held.
pub fn spawn<'py, F, T>(
    py: Python<'py>,
    call: impl FnOnce(CancellationToken) -> F,
    finish: impl FnOnce(Python<'_>, T) -> PyResult<Py<PyAny>> + Send + 'static,
) -> PyResult<Bound<'py, PyAny>>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let event_loop = py.import("asyncio")?.call_method0("get_running_loop")?;
    let future = event_loop.call_method0("create_future")?;
    let token = CancellationToken::new();
    future.call_method1(
        "add_done_callback",
        (CancelOnDone {
            token: token.clone(),
        },),
    )?;
    let settle = wrap_pyfunction!(settle, py)?.unbind();
    let (loop_ref, future_ref) = (event_loop.clone().unbind(), future.clone().unbind());
    let work = call(token.clone());
    runtime()?.spawn(async move {
        let out = tokio::select! {
            out = work => out,
            // Cancelled: the future is done already; dropping the call abandons it.
            _ = token.cancelled() => return,
        };
        Python::attach(|py| {
            let (ok, value) = match finish(py, out) {
                Ok(v) => (true, v),
                Err(e) => (false, e.into_value(py).into_any()),
            };
            // A closed loop cannot take the result: nobody awaits it any more.
            let _ = loop_ref
                .bind(py)
                .call_method1("call_soon_threadsafe", (settle, future_ref, ok, value));
        });
    });
    Ok(future)
}
