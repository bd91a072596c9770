use serde_json::json;
use toolnexus::classifier::{
    ClassifierOptions, ClassifierStyle, Questions, RecordedDecision, ScoreQuestion,
    create_classifier,
};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let state = json!("rm -rf ./build");
    let mut questions = Questions::new();
    questions.insert("risk".into(), ScoreQuestion {
        instructions: "How destructive is this shell command?".into(),
        criteria: vec!["harmless".into(), "reversible".into(), "destructive".into()],
    }.into());
    let recorded = br#"{"model":"typesafe/jev-1.13-20260917","calibrated":true,
        "answers":{"risk":{"type":"score","score":1.21,
            "legend":{"0":"harmless","1":"reversible","2":"destructive"},
            "probabilities":{"0":0.10,"1":0.59,"2":0.31},"confidence":0.71}},
        "usage":{"input_tokens":210,"output_tokens":24}}"#;

    let judge = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Static,
        model: "typesafe/jev-1.13".into(),
        decisions: vec![RecordedDecision { state: state.clone(), questions: questions.clone(), response: recorded.to_vec() }],
        ..Default::default()
    })?;

    let d = judge.evaluate(state, &questions).await?;
    let risk = d.score("risk")?;

    // Wrong type: named, not a silent zero.
    let e = d.noul("risk").expect_err("expected a typed read failure");
    assert!(e.to_string().contains("is a score answer, not noul"), "{e}");
    // Absent key: a different message, on purpose.
    let e = d.score("urgency").expect_err("expected an absent-key failure");
    assert!(e.to_string().contains("no answer"), "{e}");

    // The AUTHORITY stays here, in code — the decision only informs it.
    if risk.score >= 1.5 {
        println!("would require approval");
    }

    println!("ok: score={} confidence={} levels={:?}", risk.score, risk.confidence, risk.levels());
    Ok(())
}
