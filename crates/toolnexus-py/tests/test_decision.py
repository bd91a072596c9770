"""The typed decision and its errors: the library's messages, word for word."""

import pickle

import pytest

import toolnexus as tn

QS = {"risk": tn.Score("How destructive is this shell command?", ["harmless", "reversible", "destructive"])}
RECORDED = {
    "model": "typesafe/jev-1.13-20260917",
    "calibrated": True,
    "answers": {
        "risk": {
            "type": "score",
            "score": 1.21,
            "legend": {"0": "harmless", "1": "reversible", "2": "destructive"},
            "probabilities": {"0": 0.10, "1": 0.59, "2": 0.31},
            "confidence": 0.71,
        }
    },
    "usage": {"input_tokens": 210, "output_tokens": 24},
}


@pytest.fixture
def judge():
    return tn.create_classifier(style="static", model="typesafe/jev-1.13",
                                decisions=[tn.RecordedDecision("rm -rf ./build", QS, RECORDED)])


def test_accessors_name_absent_and_wrong_type_differently(judge):
    d = judge.evaluate("rm -rf ./build", QS)
    with pytest.raises(tn.ClassifierError) as wrong:
        d.noul("risk")
    assert str(wrong.value) == 'classifier: answer "risk" is a score answer, not noul'
    assert wrong.value.kind == "wrong_type"
    assert wrong.value.status is None and wrong.value.is_retryable is False
    with pytest.raises(tn.ClassifierError) as absent:
        d.score("urgency")
    assert str(absent.value) == 'classifier: no answer "urgency" in this decision'
    assert absent.value.kind == "missing_answer"


def test_the_decision_reads_as_typed_values(judge):
    d = judge.evaluate("rm -rf ./build", QS)
    risk = d.score("risk")
    assert (risk.score, risk.confidence) == (1.21, 0.71)
    assert risk.levels() == ["harmless", "reversible", "destructive"]
    assert risk.probabilities == {"0": 0.10, "1": 0.59, "2": 0.31}
    assert d.model == "typesafe/jev-1.13-20260917" and d.calibrated is True
    assert (d.usage.input_tokens, d.usage.output_tokens) == (210, 24)
    assert d.usage.cost is None, "unreported cost is None, never 0"
    assert set(d.answers) == {"risk"} and d.answers["risk"] == risk


def test_to_dict_is_the_wire_json_and_round_trips(judge):
    d = judge.evaluate("rm -rf ./build", QS)
    wire = d.to_dict()
    assert wire == RECORDED
    assert "cost" not in wire["usage"]
    assert tn.Decision.from_dict(wire) == d


def test_calibrated_absent_reads_true_and_a_non_bool_is_an_error():
    wire = {"model": "m", "answers": {"q": {"type": "noul", "noul": 0.3}}}
    assert tn.Decision.from_dict(wire).calibrated is True
    with pytest.raises(tn.ClassifierError) as e:
        tn.Decision.from_dict(dict(wire, calibrated="yes"))
    assert e.value.kind == "decode"


def test_near_uniform_and_its_tolerance():
    assert tn.NEAR_UNIFORM_TOLERANCE == 0.05
    assert tn.near_uniform({"a": 0.30, "b": 0.25, "c": 0.25, "d": 0.20}) is True
    assert tn.near_uniform({"a": 0.56, "b": 0.44}) is False
    assert tn.near_uniform({"only": 0.02}) is True
    assert tn.near_uniform({}) is False


def test_a_miss_is_a_classifier_error_with_its_kind(judge):
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("ls", QS)
    assert str(e.value) == "classifier: static: no recorded decision for this request+state"
    assert e.value.kind == "static_miss"


def test_a_bad_question_names_its_key():
    judge = tn.create_classifier(style="custom", evaluate=lambda s, q: {})
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("x", {"tone": tn.Choice("Tone?", {})})
    assert '"tone"' in str(e.value) and e.value.kind == "invalid_question"
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("x", {"odd": {"type": "poll"}})
    assert str(e.value).startswith('classifier: question "odd": ')


def test_questions_pickle_and_keep_the_callers_option_order():
    q = tn.choice_over("Which desk?", [("zeta", "last letter"), ("alpha", "first letter")])
    assert list(pickle.loads(pickle.dumps(q)).criteria) == ["zeta", "alpha"]
    assert q.to_wire() == {"type": "choice", "instructions": "Which desk?",
                           "criteria": {"zeta": "last letter", "alpha": "first letter"}}
    assert tn.Noul("x").to_wire() == {"type": "noul", "instructions": "x"}
    assert tn.Noul("x", when_true="yes").to_wire()["criteria"] == {"false": "", "true": "yes"}


def test_canonical_json_is_the_librarys():
    assert tn.canonical_json({"b": 1, "a": [1.5e-07, "é"]}) == '{"a":[1.5e-7,"é"],"b":1}'
