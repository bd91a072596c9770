//! `toolnexus.Classifier`: one stack, evaluated synchronously (the GIL
//! released), from asyncio, or over a whole table.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use arrow_pyarrow::{PyArrowType, Table};
use futures::StreamExt as _;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use tokio_util::sync::CancellationToken;
use toolnexus::classifier::{self as tn, EvalContext, Questions};

use crate::asyncio;
use crate::convert::to_json;
use crate::decision::Decision;
use crate::error::classifier_error;
use crate::options;
use crate::runtime::runtime;
use crate::table::{self, StateFrom};
use toolnexus_table::Outcome;

/// How often a blocking call looks for Ctrl-C and reports progress.
const TICK: Duration = Duration::from_millis(200);

/// A classifier: a stack built by `create_classifier`.
#[pyclass(module = "toolnexus", frozen)]
pub struct Classifier {
    inner: tn::Classifier,
    style: String,
    call: String,
}

/// Builds a classifier from keyword arguments (see the package's
/// `create_classifier`).
#[pyfunction]
#[pyo3(signature = (**kwargs))]
pub fn create_classifier(
    py: Python<'_>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Classifier> {
    let built = options::build(py, kwargs)?;
    Ok(Classifier {
        inner: built.classifier,
        style: built.style,
        call: built.call,
    })
}

/// Canonical JSON of a value: keys sorted, compact, the library's exact bytes.
#[pyfunction]
pub fn canonical_json(value: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(tn::canonical_json(&to_json(value)?))
}

#[pymethods]
impl Classifier {
    /// The style at the bottom of the stack.
    #[getter]
    fn style(&self) -> &str {
        &self.style
    }

    /// The model the stack asks for.
    #[getter]
    fn model(&self) -> &str {
        &self.inner.identity().model
    }

    /// The call name evaluations run under.
    #[getter]
    fn call(&self) -> &str {
        &self.call
    }

    /// Evaluates one state; the GIL is released while the call runs, and
    /// Ctrl-C cancels it.
    #[pyo3(signature = (state, questions, *, call_name=None))]
    fn evaluate(
        &self,
        py: Python<'_>,
        state: &Bound<'_, PyAny>,
        questions: &Bound<'_, PyAny>,
        call_name: Option<String>,
    ) -> PyResult<Decision> {
        let (state, qs) = (to_json(state)?, self::questions(questions)?);
        let cancel = CancellationToken::new();
        let ctx = self.context(call_name, cancel.clone());
        let classifier = self.inner.clone();
        let call = async move { classifier.evaluate_ctx(ctx, state, &qs).await };
        let out = block_on(py, &cancel, call, || Ok(()))?;
        out.map(|inner| Decision { inner })
            .map_err(|e| classifier_error(py, &e))
    }

    /// Evaluates one state from asyncio: awaitable on the running loop;
    /// cancelling the task cancels the call.
    #[pyo3(signature = (state, questions, *, call_name=None))]
    fn evaluate_async<'py>(
        &self,
        py: Python<'py>,
        state: &Bound<'py, PyAny>,
        questions: &Bound<'py, PyAny>,
        call_name: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (state, qs) = (to_json(state)?, self::questions(questions)?);
        let classifier = self.inner.clone();
        let (call, name) = (self.call.clone(), call_name);
        asyncio::spawn(
            py,
            move |cancel| async move {
                let ctx = EvalContext::new()
                    .with_call_name(name.unwrap_or(call))
                    .with_cancel(cancel);
                classifier.evaluate_ctx(ctx, state, &qs).await
            },
            |py, out| match out {
                Ok(inner) => Ok(Py::new(py, Decision { inner })?.into_any()),
                Err(e) => Err(classifier_error(py, &e)),
            },
        )
    }

    /// Evaluates every row of an Arrow table and returns it with the result
    /// columns; a failed row has its message in `error`, never fails the
    /// table. The GIL is released while it runs; `progress(done, total)` is
    /// called now and then and once at the end.
    #[pyo3(signature = (table, questions, *, state_column=None, state_columns=None, concurrency=16, progress=None, call_name=None))]
    #[allow(clippy::too_many_arguments)]
    fn evaluate_table<'py>(
        &self,
        py: Python<'py>,
        table: PyArrowType<Table>,
        questions: &Bound<'py, PyAny>,
        state_column: Option<String>,
        state_columns: Option<Vec<String>>,
        concurrency: usize,
        progress: Option<Bound<'py, PyAny>>,
        call_name: Option<String>,
    ) -> PyResult<PyArrowType<Table>> {
        let qs = Arc::new(self::questions(questions)?);
        let from = match (state_column, state_columns) {
            (Some(c), None) => StateFrom::Column(c),
            (None, Some(cs)) => StateFrom::Columns(cs),
            _ => {
                return Err(PyValueError::new_err(
                    "evaluate_table: give state_column= (one column is the state) or state_columns= (an object of several), not both",
                ));
            }
        };
        if concurrency == 0 {
            return Err(PyValueError::new_err(
                "evaluate_table: concurrency= must be at least 1",
            ));
        }
        let (batches, schema) = table.0.into_inner();
        let bad = |e: String| PyValueError::new_err(format!("evaluate_table: {e}"));
        let out_schema = table::out_schema(&schema, &qs).map_err(bad)?;
        let states = table::states(&schema, &batches, &from).map_err(bad)?;
        let total = states.len();
        let done = Arc::new(AtomicUsize::new(0));
        let cancel = CancellationToken::new();
        let (classifier, name) = (
            self.inner.clone(),
            call_name.unwrap_or_else(|| self.call.clone()),
        );
        let run = {
            let (qs, done, cancel) = (qs.clone(), done.clone(), cancel.clone());
            async move {
                let calls = states.into_iter().enumerate().map(|(i, state)| {
                    let (classifier, qs, done) = (classifier.clone(), qs.clone(), done.clone());
                    let ctx = EvalContext::new()
                        .with_call_name(name.clone())
                        .with_cancel(cancel.child_token());
                    async move {
                        let out = match state {
                            Ok(state) => classifier
                                .evaluate_ctx(ctx, state, &qs)
                                .await
                                .map_err(|e| e.to_string()),
                            Err(e) => Err(format!("row {}: {e}", i + 1)),
                        };
                        done.fetch_add(1, Ordering::Relaxed);
                        (i, out)
                    }
                });
                let mut outcomes: Vec<table::Slot> = (0..total).map(|_| None).collect();
                let mut stream = futures::stream::iter(calls).buffer_unordered(concurrency);
                while let Some((i, out)) = stream.next().await {
                    outcomes[i] = Some(out);
                }
                outcomes
            }
        };
        let progress = progress.map(Bound::unbind);
        let report = |py: Python<'_>| -> PyResult<()> {
            match &progress {
                Some(f) => f.call1(py, (done.load(Ordering::Relaxed), total)).map(drop),
                None => Ok(()),
            }
        };
        let outcomes = block_on(py, &cancel, run, || Python::attach(report))?;
        report(py)?;
        let outcomes: Vec<Outcome> = outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| Err("not evaluated".to_string())))
            .collect();
        let batches = table::with_results(&out_schema, &batches, &qs, &outcomes).map_err(bad)?;
        let out = Table::try_new(batches, out_schema).map_err(|e| bad(e.to_string()))?;
        Ok(PyArrowType(out))
    }

    fn __repr__(&self) -> String {
        format!(
            "Classifier(style={:?}, model={:?}, call={:?})",
            self.style,
            self.inner.identity().model,
            self.call
        )
    }
}

impl Classifier {
    fn context(&self, call_name: Option<String>, cancel: CancellationToken) -> EvalContext {
        EvalContext::new()
            .with_call_name(call_name.unwrap_or_else(|| self.call.clone()))
            .with_cancel(cancel)
    }
}

/// Questions from Python, once per call.
fn questions(obj: &Bound<'_, PyAny>) -> PyResult<Questions> {
    crate::convert::questions(obj)
}

/// Runs `work` on the runtime with the GIL released. Every [`TICK`] it looks
/// for a pending signal (Ctrl-C raises KeyboardInterrupt and cancels the
/// work) and runs `tick` (a progress report); an error from either cancels
/// the work and is raised.
fn block_on<T: Send>(
    py: Python<'_>,
    cancel: &CancellationToken,
    work: impl std::future::Future<Output = T> + Send,
    tick: impl Fn() -> PyResult<()> + Send + Sync,
) -> PyResult<T> {
    let rt = runtime()?;
    py.detach(|| {
        rt.block_on(async {
            tokio::pin!(work);
            loop {
                tokio::select! {
                    out = &mut work => return Ok(out),
                    _ = tokio::time::sleep(TICK) => {
                        let interrupted = Python::attach(|py| py.check_signals()).and_then(|()| tick());
                        if let Err(e) = interrupted {
                            cancel.cancel();
                            return Err(e);
                        }
                    }
                }
            }
        })
    })
}
