//! toolnexus for Python: the extension module `toolnexus._native` behind the
//! `toolnexus` package (its Python half is `python/toolnexus/`).
//!
//! Every classifier is built by the one stack builder (`toolnexus-stack`)
//! from the keyword arguments of `create_classifier`; calls run on one
//! process-wide tokio runtime with the GIL released. Tables cross the Arrow C
//! data interface both ways: a pyarrow table or record batch in, the same
//! table with SPEC §24's flat result columns out.
//!
//! The module's surface is Python's: its documentation is the package's
//! docstrings and type stubs (`python/toolnexus/*.pyi`).

mod asyncio;
mod classifier;
mod convert;
mod decision;
mod error;
mod options;
mod runtime;
mod table;

use pyo3::prelude::*;

/// The extension module: the types and functions `toolnexus/__init__.py`
/// re-exports.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add(
        "ClassifierError",
        m.py().get_type::<error::ClassifierError>(),
    )?;
    m.add(
        "NEAR_UNIFORM_TOLERANCE",
        toolnexus::classifier::NEAR_UNIFORM_TOLERANCE,
    )?;
    m.add_class::<classifier::Classifier>()?;
    m.add_class::<decision::Decision>()?;
    m.add_class::<decision::NoulAnswer>()?;
    m.add_class::<decision::ChoiceAnswer>()?;
    m.add_class::<decision::ScoreAnswer>()?;
    m.add_class::<decision::Usage>()?;
    m.add_class::<asyncio::CancelOnDone>()?;
    m.add_function(wrap_pyfunction!(classifier::create_classifier, m)?)?;
    m.add_function(wrap_pyfunction!(decision::near_uniform, m)?)?;
    m.add_function(wrap_pyfunction!(decision::decision_from_dict, m)?)?;
    m.add_function(wrap_pyfunction!(classifier::canonical_json, m)?)?;
    Ok(())
}
