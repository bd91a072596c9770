//! Every engine of this crate in one place: what each says of itself
//! ([`EngineInfo`]) and how it is built from what a surface was given
//! ([`EngineSpec`]). A surface lists, checks, prices and builds engines from
//! the [`Registry`], never from a list of style names: adding an engine is
//! its own file plus one line in [`Registry::builtin`].

use std::path::Path;

use toolnexus::classifier::{Classifier, EnvSource};

use crate::decisiontune::{DECISIONTUNE_ENGINE, DecisionTune, decisiontune};
use crate::embed::{Embedder, model_dir};
use crate::engine::{self, EngineInfo, Precision};
use crate::error::{LocalError, msg};
use crate::laya::{LAYA_ENGINE, Laya, laya};
use crate::student::{LocalStudent, STUDENT_ENGINE, Student, student};
use crate::zero_shot::{ZERO_SHOT_ENGINE, zero_shot};

/// What an engine is built from: the model directory given (for an
/// [`Embedded`](crate::ModelDir::Embedded) engine, `None` means the default
/// directory, see [`model_dir`]), the student file's content for an engine
/// that needs one, and where environment variables are read.
///
/// ```
/// use std::path::Path;
/// use toolnexus_local::EngineSpec;
///
/// let spec = EngineSpec { model_dir: Some(Path::new("/models/laya")), ..Default::default() };
/// assert!(spec.student.is_none());
/// ```
#[derive(Debug, Clone, Default)]
pub struct EngineSpec<'a> {
    /// The model directory given (`--model-dir`).
    pub model_dir: Option<&'a Path>,
    /// The student, for an engine that needs one (`--student`).
    pub student: Option<&'a Student>,
    /// Where `TOOLNEXUS_MODEL_DIR` and `HOME` are read (the process
    /// environment by default).
    pub env: EnvSource,
    /// The embedded model, when the surface has loaded it already (a stack
    /// loads it once for an engine and the cascade in front of it).
    pub embedder: Option<&'a Embedder>,
    /// What the encoder's matrix products run in (`--precision`; f32 by
    /// default). An embedder already loaded keeps its own.
    pub precision: Precision,
}

impl EngineSpec<'_> {
    /// The embedded model from the given directory, else the default one.
    fn embedder(&self) -> Result<Embedder, LocalError> {
        if let Some(e) = self.embedder {
            return Ok(e.clone());
        }
        Embedder::load_with(model_dir(self.model_dir, &self.env)?, self.precision)
    }

    /// The checkpoint directory `engine` needs.
    fn checkpoint(&self, engine: &str) -> Result<&Path, LocalError> {
        self.model_dir.ok_or_else(|| {
            msg::needs(
                engine,
                format_args!(
                    "a model directory: the directory of a downloaded {engine} checkpoint"
                ),
            )
        })
    }
}

/// An engine: what it says of itself, and the function that builds its
/// classifier.
///
/// ```
/// use toolnexus_local::Registry;
///
/// let local = Registry::builtin().get("local").unwrap().clone();
/// assert_eq!(local.info.name, "local");
/// assert!(!local.info.student);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Engine {
    /// What the engine says of itself.
    pub info: EngineInfo,
    /// Builds the engine's classifier (call it through [`Engine::open`],
    /// which marks the result local).
    pub build: fn(&EngineSpec) -> Result<Classifier, LocalError>,
}

impl Engine {
    /// The engine's classifier built from `spec`, marked as this engine's,
    /// on this machine.
    ///
    /// ```
    /// # fn main() -> Result<(), toolnexus_local::LocalError> {
    /// # let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-open-{}", std::process::id()));
    /// # toolnexus_local::tiny_model_for_tests(&dir)?;
    /// use toolnexus_local::{EngineSpec, Registry};
    ///
    /// let local = Registry::builtin().get("local").unwrap().clone();
    /// let judge = local.open(&EngineSpec { model_dir: Some(&dir), ..Default::default() })?;
    /// assert_eq!(judge.model(), "local-minilm-zero-shot");
    /// assert!(judge.identity().local, "priced at $0, whatever a surface calls it");
    /// # std::fs::remove_dir_all(&dir).ok();
    /// # Ok(())
    /// # }
    /// ```
    pub fn open(&self, spec: &EngineSpec) -> Result<Classifier, LocalError> {
        let built = (self.build)(spec)?;
        let model = built.model().to_string();
        Ok(engine::marked_local(built, self.info.name, &model))
    }
}

/// The engines a surface can build, by name.
///
/// ```
/// use toolnexus_local::{ModelDir, Registry};
///
/// let engines = Registry::builtin();
/// let names: Vec<&str> = engines.iter().map(|e| e.info.name).collect();
/// assert_eq!(names, ["local", "student", "laya", "decisiontune"]);
/// assert_eq!(engines.get("laya").unwrap().info.model_dir, ModelDir::Checkpoint);
/// assert!(engines.get("systemone").is_none());
/// ```
#[derive(Debug, Clone)]
pub struct Registry {
    engines: Vec<Engine>,
}

impl Registry {
    /// The engines of this crate: `local` (zero-shot on the embedded model),
    /// `student`, `laya` and `decisiontune`.
    pub fn builtin() -> Registry {
        Registry {
            engines: vec![
                Engine {
                    info: ZERO_SHOT_ENGINE,
                    build: |spec| Ok(zero_shot(spec.embedder()?)),
                },
                Engine {
                    info: STUDENT_ENGINE,
                    build: build_student,
                },
                Engine {
                    info: LAYA_ENGINE,
                    build: |spec| {
                        Laya::load_with(spec.checkpoint(LAYA_ENGINE.name)?, spec.precision)
                            .map(laya)
                    },
                },
                Engine {
                    info: DECISIONTUNE_ENGINE,
                    build: |spec| {
                        let dir = spec.checkpoint(DECISIONTUNE_ENGINE.name)?;
                        DecisionTune::load_with(dir, spec.precision).map(decisiontune)
                    },
                },
            ],
        }
    }

    /// This registry with `engine` added; it takes the place of an engine of
    /// the same name.
    ///
    /// ```
    /// use toolnexus::classifier::Classifier;
    /// use toolnexus_local::{Engine, EngineInfo, LocalError, ModelDir, QuestionKinds, Registry};
    ///
    /// fn unbuilt(_: &toolnexus_local::EngineSpec) -> Result<Classifier, LocalError> {
    ///     unimplemented!("never built here")
    /// }
    /// let mine = Engine {
    ///     info: EngineInfo {
    ///         name: "rules",
    ///         summary: "keyword rules, on this machine",
    ///         answers: QuestionKinds { noul: true, choice: false, score: false },
    ///         model_dir: ModelDir::None,
    ///         student: false,
    ///     },
    ///     build: unbuilt,
    /// };
    /// let engines = Registry::builtin().with(mine);
    /// assert_eq!(engines.iter().count(), 5);
    /// assert_eq!(engines.get("rules").unwrap().info.summary, "keyword rules, on this machine");
    /// ```
    pub fn with(mut self, engine: Engine) -> Registry {
        match self
            .engines
            .iter_mut()
            .find(|e| e.info.name == engine.info.name)
        {
            Some(same) => *same = engine,
            None => self.engines.push(engine),
        }
        self
    }

    /// The engine named `name`.
    pub fn get(&self, name: &str) -> Option<&Engine> {
        self.engines.iter().find(|e| e.info.name == name)
    }

    /// Every engine, in registration order.
    pub fn iter(&self) -> impl Iterator<Item = &Engine> + '_ {
        self.engines.iter()
    }
}

/// The `student` engine: the spec's student on the embedded model.
fn build_student(spec: &EngineSpec) -> Result<Classifier, LocalError> {
    let name = STUDENT_ENGINE.name;
    let s = spec
        .student
        .ok_or_else(|| msg::needs(name, "a student file (from toolnexus distill)"))?;
    let local = LocalStudent::new(spec.embedder()?, s.clone()).map_err(msg::student_misfit)?;
    Ok(student(local))
}
