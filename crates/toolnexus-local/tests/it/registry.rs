//! The engine registry: a stand-in engine added with `Registry::with` is found
//! by name, builds, and is refused a question kind it does not answer with a
//! message naming the engine, the key, the kind and what it answers; the
//! built-in engines say what they need when it is missing.

use serde_json::{Value, json};
use toolnexus::classifier::{
    BoxQuestion, ClassifierError, Decision, ErrorKind, Evaluated, NoulQuestion, Questions,
    choice_over,
};
use toolnexus_local::{
    Engine, EngineInfo, EngineSpec, LocalEvaluator, ModelDir, QuestionKinds, Registry,
    local_classifier, tiny_model_for_tests,
};

/// Answers every noul question with the share of letters that are capitals.
struct Shouting;

impl LocalEvaluator for Shouting {
    fn evaluate_blocking(
        &self,
        state: &Value,
        questions: &Questions,
    ) -> Result<Evaluated, ClassifierError> {
        let text = state.as_str().unwrap_or_default();
        let letters = text.chars().filter(|c| c.is_alphabetic()).count().max(1);
        let capitals = text.chars().filter(|c| c.is_uppercase()).count();
        let p = capitals as f64 / letters as f64;
        let answers: serde_json::Map<String, Value> = questions
            .keys()
            .map(|k| (k.clone(), json!({"type": "noul", "noul": p})))
            .collect();
        let d = Decision::from_value(&json!({"model": "shouting-1", "answers": answers}))?;
        Ok(Evaluated::new(d))
    }
}

const SHOUTING: EngineInfo = EngineInfo {
    name: "shouting",
    summary: "answers on this machine by counting capitals (a stand-in)",
    answers: QuestionKinds {
        noul: true,
        choice: false,
        score: false,
    },
    model_dir: ModelDir::None,
    student: false,
};

fn stand_in() -> Engine {
    Engine {
        info: SHOUTING,
        build: |_spec| Ok(local_classifier(&SHOUTING, "shouting-1", Shouting)),
    }
}

fn shouted() -> Questions {
    Questions::from([(
        "shouted".to_string(),
        NoulQuestion {
            instructions: "Is it shouted?".into(),
            criteria: None,
        }
        .into(),
    )])
}

#[tokio::test]
async fn a_stand_in_engine_is_found_built_and_answers_what_it_says_it_answers() {
    let engines = Registry::builtin().with(stand_in());
    let names: Vec<&str> = engines.iter().map(|e| e.info.name).collect();
    assert_eq!(
        names,
        ["local", "student", "laya", "decisiontune", "shouting"]
    );
    let engine = engines.get("shouting").expect("registered by name");
    assert_eq!(engine.info, SHOUTING);
    let judge = engine.open(&EngineSpec::default()).unwrap();
    assert_eq!(judge.model(), "shouting-1");
    let id = judge.identity();
    assert!(id.local, "an engine's classifier judges on this machine");
    assert_eq!(
        (id.style.as_str(), id.model.as_str()),
        ("shouting", "shouting-1")
    );
    assert!(id.endpoint.is_none());
    let d = judge
        .evaluate(json!("HELLO there"), &shouted())
        .await
        .unwrap();
    assert_eq!(d.noul("shouted").unwrap().noul, 0.5);
}

#[tokio::test]
async fn a_stand_in_engine_refuses_a_kind_it_does_not_answer_by_name() {
    let engines = Registry::builtin().with(stand_in());
    let judge = engines
        .get("shouting")
        .unwrap()
        .open(&EngineSpec::default())
        .unwrap();
    let qs = Questions::from([(
        "desk".to_string(),
        choice_over("Which desk?", [("billing", ""), ("shipping", "")]).into(),
    )]);
    let e = judge.evaluate(json!("HELLO"), &qs).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(
        e.to_string(),
        "classifier: style \"shouting\" cannot use choice question \"desk\" \
         (it answers noul questions)"
    );
}

#[test]
fn a_later_engine_of_the_same_name_takes_the_place_of_the_first() {
    let mut replaced = stand_in();
    replaced.info.name = "local";
    let engines = Registry::builtin().with(replaced);
    assert_eq!(engines.iter().count(), 4);
    assert_eq!(engines.get("local").unwrap().info.summary, SHOUTING.summary);
}

#[test]
fn the_builtin_engines_say_what_they_need() {
    let engines = Registry::builtin();
    for name in ["laya", "decisiontune"] {
        let engine = engines.get(name).unwrap();
        assert_eq!(engine.info.model_dir, ModelDir::Checkpoint);
        let e = engine.open(&EngineSpec::default()).unwrap_err();
        assert!(e.is_bad_spec(), "{e}");
        assert_eq!(
            e.to_string(),
            format!(
                "local: {name} needs a model directory: the directory of a downloaded {name} checkpoint"
            )
        );
    }
    let student = engines.get("student").unwrap();
    assert!(student.info.student);
    let e = student.open(&EngineSpec::default()).unwrap_err();
    assert!(e.is_bad_spec());
    assert_eq!(
        e.to_string(),
        "local: student needs a student file (from toolnexus distill)"
    );
    for engine in engines.iter() {
        assert_eq!(engine.info.answers, QuestionKinds::NOUL_CHOICE_SCORE);
        assert!(!engine.info.summary.contains('\n'));
    }
}

#[tokio::test]
async fn the_zero_shot_engine_refuses_a_box_question_saying_what_it_answers() {
    let dir = std::env::temp_dir().join(format!("toolnexus-local-registry-{}", std::process::id()));
    tiny_model_for_tests(&dir).unwrap();
    let judge = Registry::builtin()
        .get("local")
        .unwrap()
        .open(&EngineSpec {
            model_dir: Some(&dir),
            ..Default::default()
        })
        .unwrap();
    assert!(judge.identity().local);
    assert_eq!(judge.identity().style, "local");
    let qs = Questions::from([(
        "dent".to_string(),
        BoxQuestion {
            instructions: "Where?".into(),
        }
        .into(),
    )]);
    let e = judge.evaluate(json!("photo"), &qs).await.unwrap_err();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(
        e.to_string(),
        "classifier: style \"local\" cannot use box question \"dent\" \
         (it answers noul, choice and score questions)"
    );
}

#[test]
fn the_checkpoint_engines_build_from_a_model_dir_and_say_they_are_local() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let engines = Registry::builtin();
    for (name, model) in [("laya", "laya"), ("decisiontune", "decisiontune-1.0")] {
        let dir = fixtures.join(name);
        let judge = engines
            .get(name)
            .unwrap()
            .open(&EngineSpec {
                model_dir: Some(&dir),
                ..Default::default()
            })
            .unwrap();
        let id = judge.identity();
        assert!(id.local, "{name}");
        assert_eq!((id.style.as_str(), id.model.as_str()), (name, model));
    }
}
