use super::*;

#[test]
fn the_solver_solves_a_small_system() {
    let a = vec![
        vec![2.0, 1.0, -1.0],
        vec![-3.0, -1.0, 2.0],
        vec![-2.0, 1.0, 2.0],
    ];
    let x = solve_dyn(a, vec![8.0, -11.0, -3.0]).unwrap();
    for (got, want) in x.iter().zip([2.0, 3.0, -1.0]) {
        assert!((got - want).abs() < 1e-12, "{x:?}");
    }
    assert!(solve_dyn(vec![vec![1.0, 2.0], vec![2.0, 4.0]], vec![1.0, 2.0]).is_none());
}

#[test]
fn nnls_keeps_what_least_squares_would_make_negative_at_zero() {
    // Least squares: x = (2, -1); bounded at zero: x = (1.5, 0).
    let a = [[1.0, 0.5], [0.5, 1.0]];
    let b = [1.5, 0.0];
    let x = nnls(&a, &b).unwrap();
    assert!((x[0] - 1.5).abs() < 1e-9 && x[1] == 0.0, "{x:?}");
    // An interior solution is the least-squares one.
    let x = nnls(&[[2.0, 0.0], [0.0, 4.0]], &[2.0, 8.0]).unwrap();
    assert!(
        (x[0] - 1.0).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12,
        "{x:?}"
    );
}

#[test]
fn usage_that_falls_as_requests_grow_fits_no_negative_coefficient() {
    // Bigger states recorded fewer tokens: least squares would fit a
    // negative per_state_char.
    let samples: Vec<Sample> = (0..40u64)
        .map(|i| {
            let s = Shape::new(1 + i % 3, 0, 0, 100 + 10 * i);
            Sample::new(s, (900 - 5 * i + 7 * (i % 3)) as i64, 0)
        })
        .collect();
    let e = fit(&samples).unwrap();
    let c = e.coefficients.to_array();
    assert!(c.iter().all(|x| *x >= 0.0), "{c:?}");
    assert_eq!(e.coefficients.per_state_char, 0.0, "{c:?}");
    assert!(e.input_tokens(&Shape::new(5, 1275, 0, 40)) > 100.0);
}

#[test]
fn a_fit_without_tokens_per_request_is_refused() {
    // 3 tokens per question and nothing else: no billed instructions.
    let samples: Vec<Sample> = (1..30u64)
        .map(|i| Sample::new(Shape::new(i, 0, 0, 0), 3 * i as i64, 0))
        .collect();
    let e = fit(&samples).unwrap_err();
    assert!(e.to_string().contains("per_request"), "{e}");
}

#[test]
fn an_estimator_file_with_negative_or_no_per_request_tokens_is_refused_by_name() {
    let text = Estimator::default().to_json();
    let bad = text.replace("\"per_question\":8.0", "\"per_question\":-3.0");
    let e = Estimator::parse(&bad, "e.json").unwrap_err().to_string();
    assert!(
        e.starts_with("e.json: coefficients.per_question is -3"),
        "{e}"
    );
    let bad = text.replace("\"per_request\":261.0", "\"per_request\":0.0");
    let e = Estimator::parse(&bad, "e.json").unwrap_err().to_string();
    assert!(
        e.starts_with("e.json: coefficients.per_request is 0"),
        "{e}"
    );
}

#[test]
fn one_question_set_keeps_what_the_data_cannot_tell_apart_at_the_defaults() {
    // Every request asks the same two questions: per_request and
    // per_question are never seen apart.
    let samples: Vec<Sample> = (0..50u64)
        .map(|i| {
            let s = Shape::new(2, 0, 0, 100 + 13 * i);
            Sample::new(s, (300 + (100 + 13 * i) / 3) as i64, 0)
        })
        .collect();
    let e = fit(&samples).unwrap();
    let c = e.coefficients;
    assert!(
        (c.per_request + 2.0 * c.per_question - 300.0).abs() < 0.5,
        "{c:?}"
    );
    assert!((c.per_state_char - 1.0 / 3.0).abs() < 0.01, "{c:?}");
    assert!(e.fit.unwrap().worst_pct < 1.0);
    assert_eq!(c.per_described_option, 21.0, "never seen: the default");
    assert_eq!(
        e.undetermined,
        [
            "per_request",
            "per_question",
            "per_described_option",
            "per_score_level"
        ]
    );
}

#[test]
fn nothing_recorded_is_a_named_error() {
    let e = fit(&[Sample::new(Shape::default(), 0, 0)]).unwrap_err();
    assert!(e.to_string().contains("usage.input_tokens"), "{e}");
}
