//! One engine, one place: an engine registered with `Registry::with` is built
//! by the stack builder by its name, priced at an explicit $0 because its
//! identity says it is local, described by its own summary where `serve` lists
//! models, and refused a question kind it does not answer with a message
//! naming the engine, the key and what it answers.

use serde_json::{Value, json};
use toolnexus::classifier::{ClassifierError, Decision, Evaluated, Questions, choice_over};
use toolnexus::cost::CostSource;
use toolnexus::judge::{noul, questions};
use toolnexus_local::{
    Engine, EngineInfo, LocalEvaluator, ModelDir, QuestionKinds, Registry, local_classifier,
};
use toolnexus_stack::{StackSpec, build, style_summary};

/// Says every noul is a coin toss.
struct CoinToss;

impl LocalEvaluator for CoinToss {
    fn evaluate_blocking(
        &self,
        _state: &Value,
        questions: &Questions,
    ) -> Result<Evaluated, ClassifierError> {
        let answers: serde_json::Map<String, Value> = questions
            .keys()
            .map(|k| (k.clone(), json!({"type": "noul", "noul": 0.5})))
            .collect();
        let usage = json!({"input_tokens": 12, "output_tokens": 0});
        let d =
            Decision::from_value(&json!({"model": "coin-1", "answers": answers, "usage": usage}))?;
        Ok(Evaluated::new(d))
    }
}

const COIN: EngineInfo = EngineInfo {
    name: "coin",
    summary: "answers on this machine by tossing a coin (a stand-in)",
    answers: QuestionKinds {
        noul: true,
        choice: false,
        score: false,
    },
    model_dir: ModelDir::None,
    student: false,
};

fn engines() -> Registry {
    Registry::builtin().with(Engine {
        info: COIN,
        build: |_spec| Ok(local_classifier(&COIN, "coin-1", CoinToss)),
    })
}

fn spec() -> StackSpec {
    StackSpec {
        style: Some("coin".into()),
        engines: Some(engines()),
        ..Default::default()
    }
}

#[tokio::test]
async fn a_registered_engine_is_built_by_name_and_priced_local() {
    let stack = build(&spec()).unwrap();
    assert_eq!(stack.style, "coin");
    assert!(stack.classifier.identity().local, "its identity says local");
    let qs = questions(&[noul("spam", "Is it spam?")]).unwrap();
    let e = stack
        .classifier
        .evaluate_request(
            Default::default(),
            toolnexus::classifier::EvalRequest::new(json!("hi"), qs),
        )
        .await
        .unwrap();
    assert_eq!(e.decision.noul("spam").unwrap().noul, 0.5);
    assert_eq!(
        (e.cost.usd, e.cost.source),
        (Some(0.0), Some(CostSource::Local)),
        "an engine on this machine costs an explicit $0, never unknown"
    );
}

#[test]
fn a_registered_engine_is_listed_with_its_own_summary() {
    assert_eq!(style_summary(&engines(), "coin"), Some(COIN.summary));
    let e = build(&StackSpec {
        style: Some("dice".into()),
        engines: Some(engines()),
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.to_string().ends_with("decisiontune|coin)"), "{e}");
}

#[tokio::test]
async fn a_registered_engine_refuses_a_kind_it_does_not_answer_by_name() {
    let stack = build(&spec()).unwrap();
    let desk = Questions::from([(
        "desk".to_string(),
        choice_over("Which desk?", [("billing", "money"), ("tech", "bugs")]).into(),
    )]);
    let e = stack
        .classifier
        .evaluate(json!("hi"), &desk)
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "classifier: style \"coin\" cannot use choice question \"desk\" (it answers noul questions)"
    );
}
