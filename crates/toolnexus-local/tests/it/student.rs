//! Students and the cascade on the tiny random model: a head's confidence
//! decides where a call is answered, a question the student was not trained
//! on goes to the teacher, and a student file survives a save and a load.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use toolnexus::classifier::*;
use toolnexus_local::student::{
    Head, HeadReport, LocalStudent, Student, TeacherRow, TrainOptions, cascade, distill, student,
};
use toolnexus_local::{Embedder, tiny_model_for_tests};

struct Dir(std::path::PathBuf);

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tiny(name: &str) -> (Dir, Embedder) {
    let dir =
        std::env::temp_dir().join(format!("toolnexus-local-it-{name}-{}", std::process::id()));
    tiny_model_for_tests(&dir).unwrap();
    let e = Embedder::load(&dir).unwrap();
    (Dir(dir), e)
}

fn spam() -> Questions {
    Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )])
}

/// A student whose `spam` head ignores the state: P(true) = sigmoid(`logit`).
fn constant_student(embedder: &Embedder, logit: f32) -> Student {
    let q = &spam()["spam"];
    let d = embedder.dimension();
    let head = Head {
        kind: "noul".into(),
        hash: question_hash(q),
        labels: vec!["false".into(), "true".into()],
        legend: BTreeMap::new(),
        weights: vec![vec![0.0; d], vec![0.0; d]],
        bias: vec![0.0, logit],
        report: HeadReport {
            train: 0,
            holdout: 0,
            epochs: 0,
            agreement: 1.0,
            log_loss: 0.0,
            ece: 0.0,
        },
    };
    Student {
        embedding_model: embedder.model_hash().to_string(),
        teacher_model: "teacher-1".into(),
        threshold: 0.9,
        target_agreement: 0.98,
        served_locally: 1.0,
        local_agreement: Some(1.0),
        questions: BTreeMap::from([("spam".to_string(), head)]),
        state_text: Default::default(),
    }
}

fn counting_teacher() -> (Classifier, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let counted = calls.clone();
    let teacher = create_classifier(ClassifierOptions {
        style: ClassifierStyle::Custom,
        model: "teacher-1".into(),
        evaluate: Some(Arc::new(move |_ctx, _state, _qs| {
            counted.fetch_add(1, Ordering::SeqCst);
            Box::pin(async {
                Decision::from_value(&json!({"model": "teacher-1", "answers": {"spam": {"type": "noul", "noul": 0.5}}}))
                    .map_err(|e| e.to_string())
            })
        })),
        ..Default::default()
    })
    .unwrap();
    (teacher, calls)
}

#[tokio::test]
async fn the_cascade_answers_locally_only_when_sure_on_every_key() {
    let (_dir, embedder) = tiny("cascade");
    // sigmoid(4) ≈ 0.982: sure at 0.9, unsure at 0.99.
    let local = LocalStudent::new(embedder.clone(), constant_student(&embedder, 4.0)).unwrap();
    let (teacher, calls) = counting_teacher();

    let (sure, stats) = cascade(local.clone(), teacher.clone(), Some(0.9));
    let d = sure.evaluate(json!("hello"), &spam()).await.unwrap();
    assert!(d.model.starts_with("toolnexus-student"), "{}", d.model);
    assert!((d.noul("spam").unwrap().noul - 0.982).abs() < 1e-3);
    assert!(!d.calibrated);
    assert_eq!(
        (stats.local(), stats.teacher(), calls.load(Ordering::SeqCst)),
        (1, 0, 0)
    );

    let (unsure, stats) = cascade(local.clone(), teacher.clone(), Some(0.99));
    let d = unsure.evaluate(json!("hello"), &spam()).await.unwrap();
    assert_eq!(d.model, "teacher-1");
    assert_eq!(
        (stats.local(), stats.teacher(), calls.load(Ordering::SeqCst)),
        (0, 1, 1)
    );

    // A question the student never saw goes to the teacher...
    let other = Questions::from([(
        "ham".to_string(),
        NoulQuestion {
            instructions: "Is it spam?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let (c, stats) = cascade(local.clone(), teacher, None);
    assert_eq!(
        c.evaluate(json!("hello"), &other).await.unwrap().model,
        "teacher-1"
    );
    assert_eq!(stats.teacher(), 1);
    // ...and the student style alone refuses it, naming it.
    let alone = student(local);
    let e = alone.evaluate(json!("hello"), &other).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("\"ham\""), "{e}");
}

#[test]
fn a_student_file_round_trips_and_a_changed_question_is_refused() {
    let (dir, embedder) = tiny("file");
    let s = constant_student(&embedder, 1.0);
    let path = dir.0.join("student.json");
    s.save(&path).unwrap();
    let back = Student::load(&path).unwrap();
    assert_eq!(back, s);
    let changed = Questions::from([(
        "spam".to_string(),
        NoulQuestion {
            instructions: "Is it spam, really?".into(),
            criteria: None,
        }
        .into(),
    )]);
    let e = back
        .answer(&vec![0.0; embedder.dimension()], &changed)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("has changed since the student was trained"),
        "{e}"
    );
    std::fs::write(&path, "{\"format\": \"toolnexus.student\", \"version\": 7}").unwrap();
    let e = Student::load(&path).unwrap_err();
    assert!(e.to_string().contains("version 7 is not supported"), "{e}");
}

#[test]
fn distill_learns_a_teacher_and_picks_a_threshold_that_keeps_the_target() {
    // Synthetic embeddings: the teacher's answer is the sign of the first
    // coordinate, and it is unsure near zero.
    let qs = spam();
    let rows: Vec<TeacherRow> = (0..1000)
        .map(|i| {
            let x = (i as f32 / 500.0) - 1.0;
            let p = 1.0 / (1.0 + (-8.0 * x as f64).exp());
            TeacherRow {
                embedding: vec![x, ((i * 7919) % 13) as f32 / 13.0, 1.0],
                decision: Decision::from_value(&json!({"model": "teacher-1", "answers": {"spam": {"type": "noul", "noul": p}}}))
                    .unwrap(),
            }
        })
        .collect();
    let (s, report) = distill(&rows, &qs, "sha256:synthetic", &TrainOptions::default()).unwrap();
    let head = &report.questions["spam"];
    assert!(head.agreement >= 0.95, "{report:?}");
    assert_eq!(head.train + head.holdout, 1000);
    assert!(report.local_agreement.unwrap() >= 0.98, "{report:?}");
    assert!(
        report.served_locally > 0.5 && report.served_locally <= 1.0,
        "{report:?}"
    );
    assert_eq!(s.threshold, report.threshold);
    assert_eq!(s.teacher_model, "teacher-1");
    assert!(report.table().contains("cascade threshold"));
}

/// Rows near two poles, the teacher sure of the pole's answer.
fn polar_rows(embedder: &Embedder) -> Vec<TeacherRow> {
    let texts: Vec<String> = (0..24)
        .map(|i| {
            if i % 2 == 0 {
                format!("buy cheap pills now {i}")
            } else {
                format!("see you at lunch {i}")
            }
        })
        .collect();
    let vectors = embedder.embed(&texts).unwrap();
    vectors
        .into_iter()
        .enumerate()
        .map(|(i, embedding)| TeacherRow {
            embedding,
            decision: Decision::from_value(&json!({"model": "teacher-1", "answers": {
                "spam": {"type": "noul", "noul": if i % 2 == 0 { 0.95 } else { 0.05 }}}}))
            .unwrap(),
        })
        .collect()
}

#[test]
fn a_head_starts_from_its_prior_and_l2_pulls_toward_it() {
    let (_dir, e) = tiny("prior");
    let rows = polar_rows(&e);
    let d = e.dimension();
    let prior: Vec<Vec<f32>> = vec![
        (0..d).map(|j| (j as f32 * 0.37).sin()).collect(),
        (0..d).map(|j| (j as f32 * 0.11).cos()).collect(),
    ];
    let with_prior = |max_epochs| TrainOptions {
        max_epochs,
        priors: BTreeMap::from([("spam".to_string(), prior.clone())]),
        ..Default::default()
    };
    // No epoch at all: the head is its prior, unchanged.
    let (s, report) = distill(&rows, &spam(), e.model_hash(), &with_prior(0)).unwrap();
    assert_eq!(s.questions["spam"].weights, prior);
    assert_eq!(report.questions["spam"].epochs, 0);
    // Training moves it, and starts where the prior is, not at zero.
    let (s, _) = distill(&rows, &spam(), e.model_hash(), &with_prior(500)).unwrap();
    let (scratch, _) = distill(&rows, &spam(), e.model_hash(), &TrainOptions::default()).unwrap();
    let gap = |a: &[Vec<f32>]| -> f32 {
        a.iter()
            .flatten()
            .zip(prior.iter().flatten())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    };
    assert!(
        gap(&s.questions["spam"].weights) < gap(&scratch.questions["spam"].weights),
        "a head trained from the prior stays nearer to it than one trained from zero"
    );
}

#[test]
fn a_prior_of_the_wrong_shape_is_named() {
    let (_dir, e) = tiny("prior-shape");
    let rows = polar_rows(&e);
    let options = TrainOptions {
        priors: BTreeMap::from([("spam".to_string(), vec![vec![0.0; 3]; 2])]),
        ..Default::default()
    };
    let err = distill(&rows, &spam(), e.model_hash(), &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "distill: question \"spam\": the prior has 2 rows of 3 numbers; the head needs 2 of {}",
            e.dimension()
        )
    );
}

/// A student that reads a state as `key: value` lines answers a JSON object
/// exactly as a JSON-reading one answers those lines as a string; the file
/// keeps the choice, and leaves the default out.
#[tokio::test]
async fn a_student_reads_states_the_way_its_file_says() {
    use toolnexus_local::StateText;
    let (dir, embedder) = tiny("state-text");
    // A head that does look at the state: its weights are an embedding.
    let mut json_reader = constant_student(&embedder, 0.0);
    let direction = embedder
        .embed(&["command: rm -rf build"])
        .unwrap()
        .remove(0);
    json_reader.questions.get_mut("spam").unwrap().weights[1] =
        direction.iter().map(|x| x * 8.0).collect();
    let mut lines_reader = json_reader.clone();
    lines_reader.state_text = StateText::Lines;

    let state = json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf build"}});
    let as_lines = json!(StateText::Lines.write(&state));
    let p = |s: Student, state: serde_json::Value| {
        let local = LocalStudent::new(embedder.clone(), s).unwrap();
        async move {
            let d = student(local).evaluate(state, &spam()).await.unwrap();
            d.noul("spam").unwrap().noul
        }
    };
    let lines = p(lines_reader.clone(), state.clone()).await;
    assert_eq!(lines, p(json_reader.clone(), as_lines).await);
    assert_ne!(lines, p(json_reader.clone(), state).await);

    let path = dir.0.join("lines.student.json");
    lines_reader.save(&path).unwrap();
    assert!(
        std::fs::read_to_string(&path)
            .unwrap()
            .contains("\"state_text\": \"lines\"")
    );
    assert_eq!(Student::load(&path).unwrap(), lines_reader);
    json_reader.save(&path).unwrap();
    assert!(
        !std::fs::read_to_string(&path)
            .unwrap()
            .contains("state_text")
    );
    assert_eq!(Student::load(&path).unwrap(), json_reader);
}

#[tokio::test]
async fn one_cache_keeps_apart_two_cascade_thresholds_and_two_students() {
    use toolnexus::cache::{MemoryCache, caching};
    let (_dir, embedder) = tiny("cascade-cache");
    let local = LocalStudent::new(embedder.clone(), constant_student(&embedder, 4.0)).unwrap();
    let (teacher, calls) = counting_teacher();
    let store = Arc::new(MemoryCache::new());

    // Sure at 0.9: the student's answer is stored; unsure at 0.99, the same
    // request must reach the teacher, not the student's stored answer.
    let (sure, _) = cascade(local.clone(), teacher.clone(), Some(0.9));
    let (unsure, _) = cascade(local.clone(), teacher.clone(), Some(0.99));
    let first = caching(sure, store.clone())
        .evaluate(json!("hello"), &spam())
        .await
        .unwrap();
    assert!(
        first.model.starts_with("toolnexus-student"),
        "{}",
        first.model
    );
    let e = caching(unsure, store.clone())
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!("hello"), spam()))
        .await
        .unwrap();
    assert!(!e.cache_hit, "another threshold is another stack");
    assert_eq!(e.decision.model, "teacher-1");
    assert_eq!(calls.load(Ordering::SeqCst), 1);

    // Two students of one teacher answer under one model name: kept apart.
    let other = LocalStudent::new(embedder.clone(), constant_student(&embedder, -4.0)).unwrap();
    let a = caching(student(local), store.clone())
        .evaluate(json!("hello"), &spam())
        .await
        .unwrap();
    let b = caching(student(other), store.clone())
        .evaluate_request(EvalContext::new(), EvalRequest::new(json!("hello"), spam()))
        .await
        .unwrap();
    assert!(!b.cache_hit, "another student is another stack");
    assert_eq!(a.model, b.decision.model);
    assert!(a.noul("spam").unwrap().noul > 0.9 && b.decision.noul("spam").unwrap().noul < 0.1);
}
