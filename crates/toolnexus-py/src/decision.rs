//! The typed decision in Python: the answers as frozen objects, the typed
//! accessors raising the library's own errors.

use std::collections::BTreeMap;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use toolnexus::classifier::{self as tn, DecisionAnswer};

use crate::convert::{from_json, to_json};
use crate::error::classifier_error;

/// A noul answer: the probability that the statement holds.
#[pyclass(module = "toolnexus", frozen, get_all, eq, skip_from_py_object)]
#[derive(Clone, PartialEq)]
pub struct NoulAnswer {
    /// P(the statement holds), in [0, 1].
    pub noul: f64,
}

#[pymethods]
impl NoulAnswer {
    fn __repr__(&self) -> String {
        format!("NoulAnswer(noul={})", py_float(self.noul))
    }
}

/// A choice answer: the picked option, the distribution, the confidence and
/// whether the distribution is near uniform.
#[pyclass(module = "toolnexus", frozen, get_all, eq, skip_from_py_object)]
#[derive(Clone, PartialEq)]
pub struct ChoiceAnswer {
    /// The picked option id.
    pub choice: String,
    /// Option id → probability, as returned.
    pub probabilities: BTreeMap<String, f64>,
    /// How sure the model is about the question.
    pub confidence: f64,
    /// Whether the distribution is within 0.05 of uniform (derived on decode).
    pub near_uniform: bool,
}

#[pymethods]
impl ChoiceAnswer {
    fn __repr__(&self) -> String {
        format!(
            "ChoiceAnswer(choice={:?}, confidence={}, near_uniform={})",
            self.choice,
            py_float(self.confidence),
            py_bool(self.near_uniform)
        )
    }
}

/// A score answer: the expected level, the legend, the distribution and the
/// confidence.
#[pyclass(module = "toolnexus", frozen, get_all, eq, skip_from_py_object)]
#[derive(Clone, PartialEq)]
pub struct ScoreAnswer {
    /// The expected level, in [0, levels − 1]; may fall between levels.
    pub score: f64,
    /// Level index (a decimal string) → the level's text.
    pub legend: BTreeMap<String, String>,
    /// Level index (a decimal string) → probability.
    pub probabilities: BTreeMap<String, f64>,
    /// How sure the model is about the question.
    pub confidence: f64,
}

#[pymethods]
impl ScoreAnswer {
    /// The legend's texts in numeric level order ("2" before "10").
    fn levels(&self) -> Vec<String> {
        self.rust().levels()
    }

    fn __repr__(&self) -> String {
        format!(
            "ScoreAnswer(score={}, confidence={})",
            py_float(self.score),
            py_float(self.confidence)
        )
    }
}

impl ScoreAnswer {
    /// The library's answer, for its methods.
    fn rust(&self) -> tn::ScoreAnswer {
        tn::ScoreAnswer {
            score: self.score,
            legend: self.legend.clone(),
            probabilities: self.probabilities.clone(),
            confidence: self.confidence,
        }
    }
}

/// Tokens and cost of one call; `cost` is None when the backend did not say.
#[pyclass(module = "toolnexus", frozen, get_all, eq, skip_from_py_object)]
#[derive(Clone, PartialEq)]
pub struct Usage {
    /// Input tokens.
    pub input_tokens: i64,
    /// Output tokens.
    pub output_tokens: i64,
    /// US dollars as the backend reported them; None when unreported, never 0.
    pub cost: Option<f64>,
}

#[pymethods]
impl Usage {
    fn __repr__(&self) -> String {
        let cost = self.cost.map_or("None".to_string(), py_float);
        format!(
            "Usage(input_tokens={}, output_tokens={}, cost={cost})",
            self.input_tokens, self.output_tokens
        )
    }
}

/// A decision: one typed answer per question key, the model that answered,
/// the usage and whether the probabilities are calibrated.
#[pyclass(module = "toolnexus", frozen, eq, skip_from_py_object)]
#[derive(Clone, PartialEq)]
pub struct Decision {
    /// The library's decision.
    pub inner: tn::Decision,
}

#[pymethods]
impl Decision {
    /// What actually answered.
    #[getter]
    fn model(&self) -> &str {
        &self.inner.model
    }

    /// Whether the probabilities are calibrated (advisory).
    #[getter]
    fn calibrated(&self) -> bool {
        self.inner.calibrated
    }

    /// Tokens and cost.
    #[getter]
    fn usage(&self) -> Usage {
        let u = &self.inner.usage;
        Usage {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cost: u.cost,
        }
    }

    /// Key → answer object (NoulAnswer, ChoiceAnswer or ScoreAnswer).
    #[getter]
    fn answers<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (key, answer) in &self.inner.answers {
            out.set_item(key, answer_object(py, answer)?)?;
        }
        Ok(out)
    }

    /// The noul answer under `key`; raises ClassifierError when it is absent
    /// or of another type.
    fn noul(&self, py: Python<'_>, key: &str) -> PyResult<NoulAnswer> {
        let a = self.inner.noul(key).map_err(|e| classifier_error(py, &e))?;
        Ok(NoulAnswer { noul: a.noul })
    }

    /// The choice answer under `key`; raises ClassifierError when it is
    /// absent or of another type.
    fn choice(&self, py: Python<'_>, key: &str) -> PyResult<ChoiceAnswer> {
        let a = self
            .inner
            .choice(key)
            .map_err(|e| classifier_error(py, &e))?;
        Ok(choice_answer(a))
    }

    /// The score answer under `key`; raises ClassifierError when it is absent
    /// or of another type.
    fn score(&self, py: Python<'_>, key: &str) -> PyResult<ScoreAnswer> {
        let a = self
            .inner
            .score(key)
            .map_err(|e| classifier_error(py, &e))?;
        Ok(score_answer(a))
    }

    /// A decision from its wire dict, decoded strictly (what `to_dict` gives).
    #[staticmethod]
    fn from_dict(py: Python<'_>, wire: &Bound<'_, PyAny>) -> PyResult<Decision> {
        decision_from_dict(py, wire)
    }

    /// The wire JSON of the decision, as a dict (what a tape stores).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_json(py, &self.inner.to_value())
    }

    fn __repr__(&self) -> String {
        let keys: Vec<String> = self
            .inner
            .answers
            .keys()
            .map(|k| format!("{k:?}"))
            .collect();
        format!(
            "Decision(model={:?}, answers=[{}], calibrated={})",
            self.inner.model,
            keys.join(", "),
            py_bool(self.inner.calibrated)
        )
    }
}

/// A decision from its wire dict, decoded strictly (`Decision.from_dict`).
#[pyfunction]
pub fn decision_from_dict(py: Python<'_>, wire: &Bound<'_, PyAny>) -> PyResult<Decision> {
    let value = to_json(wire)?;
    let inner = tn::Decision::from_value(&value).map_err(|e| classifier_error(py, &e))?;
    Ok(Decision { inner })
}

/// Whether a distribution is near uniform: every probability within
/// NEAR_UNIFORM_TOLERANCE of 1/n, inclusive; one option is; none is not.
#[pyfunction]
pub fn near_uniform(probabilities: BTreeMap<String, f64>) -> bool {
    tn::near_uniform(&probabilities)
}

/// An answer as its Python object.
fn answer_object<'py>(py: Python<'py>, answer: &DecisionAnswer) -> PyResult<Bound<'py, PyAny>> {
    Ok(match answer {
        DecisionAnswer::Noul(a) => Bound::new(py, NoulAnswer { noul: a.noul })?.into_any(),
        DecisionAnswer::Choice(a) => Bound::new(py, choice_answer(a))?.into_any(),
        DecisionAnswer::Score(a) => Bound::new(py, score_answer(a))?.into_any(),
        // A box answer has no Python type yet: its wire dict.
        other => from_json(py, &other.to_value())?,
    })
}

fn choice_answer(a: &tn::ChoiceAnswer) -> ChoiceAnswer {
    ChoiceAnswer {
        choice: a.choice.clone(),
        probabilities: a.probabilities.clone(),
        confidence: a.confidence,
        near_uniform: a.near_uniform,
    }
}

fn score_answer(a: &tn::ScoreAnswer) -> ScoreAnswer {
    ScoreAnswer {
        score: a.score,
        legend: a.legend.clone(),
        probabilities: a.probabilities.clone(),
        confidence: a.confidence,
    }
}

/// A float as Python's repr writes it (`1.0`, not `1`).
fn py_float(x: f64) -> String {
    match x.fract() == 0.0 && x.is_finite() {
        true => format!("{x:.1}"),
        false => x.to_string(),
    }
}

/// A bool as Python writes it.
fn py_bool(b: bool) -> &'static str {
    match b {
        true => "True",
        false => "False",
    }
}
