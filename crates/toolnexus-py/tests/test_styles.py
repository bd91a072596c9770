"""create_classifier for every style and the stack's options."""

import json
import pathlib

import pytest

import toolnexus as tn

QS = {
    "refund": tn.Noul("Does the customer ask for money back?"),
    "desk": tn.Choice("Which desk owns this?", {"billing": "money moved", "shipping": "a parcel"}),
    "risk": tn.Score("How destructive?", ["harmless", "reversible", "destructive"]),
}


def test_systemone_asks_the_backend(stub):
    judge = tn.create_classifier(style="systemone", base_url=stub.url, model="jev-1.13", retries=0)
    assert judge.style == "systemone" and judge.model == "jev-1.13"
    d = judge.evaluate({"text": "charged twice"}, QS)
    assert d.model == "stub-1"
    assert 0 <= d.noul("refund").noul <= 1
    assert d.choice("desk").choice in {"billing", "shipping"}
    assert stub.requests == 1


def test_an_http_failure_carries_its_status_and_retryability(stub):
    stub.status = 503
    judge = tn.create_classifier(base_url=stub.url, retries=0)
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("x", QS)
    assert e.value.kind == "http" and e.value.status == 503 and e.value.is_retryable is True
    assert str(e.value).startswith(f"classifier: POST {stub.url}/systemone: HTTP 503")


def test_timeout_ms_bounds_an_attempt(stub):
    stub.delay_s = 2.0
    judge = tn.create_classifier(base_url=stub.url, timeout_ms=100, retries=0)
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("x", QS)
    assert e.value.kind == "timeout" and e.value.is_timeout
    assert "request timeout after 100ms" in str(e.value)


def test_a_cache_answers_the_second_identical_call(stub):
    judge = tn.create_classifier(base_url=stub.url, cache=True)
    first = judge.evaluate("same", QS)
    second = judge.evaluate("same", QS)
    assert first == second and stub.requests == 1


def test_a_sqlite_cache_file_is_shared_by_two_classifiers(stub, tmp_path):
    db = tmp_path / "cache.db"
    tn.create_classifier(base_url=stub.url, cache=str(db)).evaluate("same", QS)
    tn.create_classifier(base_url=stub.url, cache=db).evaluate("same", QS)
    assert stub.requests == 1


def test_fallback_asks_the_next_endpoint_when_one_is_unavailable(stub):
    down = tn.create_classifier(base_url=stub.url, retries=0)
    stub_down = stub.url.replace("/v1", "/down/v1")
    judge = tn.create_classifier(base_url=stub_down, fallback=[stub.url], retries=0)
    # The first endpoint answers 404 (a client error): no fallback for that.
    with pytest.raises(tn.ClassifierError):
        judge.evaluate("x", QS)
    dead = tn.create_classifier(base_url="http://127.0.0.1:9/v1", fallback=stub.url, retries=0)
    assert dead.evaluate("x", QS) == down.evaluate("x", QS)


def test_a_token_cap_refuses_once_reached(stub):
    judge = tn.create_classifier(base_url=stub.url, max_tokens=1)
    judge.evaluate("first", QS)
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("second", QS)
    assert e.value.kind == "cap_reached"


def test_a_cost_cap_without_a_price_is_refused_naming_it(stub):
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(base_url=stub.url, model="no-such-model", max_cost=1.0)
    assert e.value.kind == "config" and "--max-cost" in str(e.value)


def test_limits_take_rpm_and_concurrency(stub):
    judge = tn.create_classifier(base_url=stub.url, rpm=6000, concurrency=2)
    assert judge.evaluate("x", QS).model == "stub-1"
    with pytest.raises(tn.ClassifierError):
        tn.create_classifier(base_url=stub.url, concurrency=0)


def test_llm_needs_its_base_url_and_model():
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="llm")
    assert e.value.kind == "config" and "base-url" in str(e.value)
    judge = tn.create_classifier(style="llm", base_url="http://127.0.0.1:9/v1", model="m", chat_style="openai")
    assert judge.style == "llm"


def test_tape_replays_a_recorded_call(repo):
    tape = repo / "crates/toolnexus/examples/tapes/demo.tape.json"
    data = json.loads(tape.read_text())
    entry = data["calls"]["triage"][0]
    judge = tn.create_classifier(style="tape", tape=str(tape), call="triage")
    d = judge.evaluate(entry["state"], entry["questions"])
    assert d.to_dict()["answers"] == entry["decision"]["answers"]


def test_static_over_a_tape_and_over_decisions(repo):
    tape = repo / "crates/toolnexus/examples/tapes/demo.tape.json"
    assert tn.create_classifier(style="static", tape=tape).style == "static"
    recorded = tn.RecordedDecision("x", QS, {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.1}}})
    judge = tn.create_classifier(style="static", decisions=[recorded], model="m", max_tokens=10)
    assert judge.style == "static" and judge.evaluate("x", QS).noul("refund").noul == 0.1


def test_a_python_bottom_takes_the_stacks_layers_and_refuses_style_options():
    calls = []

    def judge_fn(state, questions):
        calls.append(state)
        return {"model": "rules", "answers": {"refund": {"type": "noul", "noul": 0.9}}}

    judge = tn.create_classifier(style="custom", evaluate=judge_fn, cache=True)
    assert judge.evaluate("same", QS) == judge.evaluate("same", QS)
    assert calls == ["same"], "the second call is a cache hit"
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="custom", evaluate=judge_fn, base_url="http://127.0.0.1:9/v1")
    assert e.value.kind == "config" and "--base-url" in str(e.value)


def test_custom_runs_a_python_callable_and_its_exceptions_are_errors():
    seen = []

    def judge_fn(state, questions):
        seen.append((state, sorted(questions)))
        if state == "boom":
            raise RuntimeError("no answer today")
        return {"model": "rules", "answers": {"refund": {"type": "noul", "noul": 0.9}}, "calibrated": False}

    judge = tn.create_classifier(style="custom", evaluate=judge_fn)
    d = judge.evaluate({"text": "refund please"}, {"refund": QS["refund"]})
    assert d.noul("refund").noul == 0.9 and d.calibrated is False
    assert seen == [({"text": "refund please"}, ["refund"])]
    with pytest.raises(tn.ClassifierError) as e:
        judge.evaluate("boom", {"refund": QS["refund"]})
    assert e.value.kind == "custom" and "RuntimeError: no answer today" in str(e.value)


def test_custom_without_a_callable_is_the_librarys_error():
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="custom")
    assert str(e.value) == 'classifier: style "custom" requires Evaluate'


def test_options_are_refused_by_name():
    with pytest.raises(TypeError) as e:
        tn.create_classifier(stlye="local")
    assert "'stlye'" in str(e.value) or '"stlye"' in str(e.value)
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="nope")
    assert "no such style" in str(e.value)
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="laya")
    assert e.value.kind == "config" and "model-dir" in str(e.value)
    with pytest.raises(tn.ClassifierError):
        tn.create_classifier(style="decisiontune")
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="student")
    assert "student" in str(e.value)
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(evaluate=print)
    assert 'style="custom"' in str(e.value)


def test_local_judges_on_the_embedded_model(model_dir):
    judge = tn.create_classifier(style="local", model_dir=model_dir)
    d = judge.evaluate("I was charged twice, refund me", {"refund": QS["refund"], "desk": QS["desk"]})
    assert 0 <= d.noul("refund").noul <= 1 and d.choice("desk").choice in {"billing", "shipping"}
    assert d.calibrated is False


def test_precision_is_a_keyword_of_the_local_engines(model_dir):
    # auto: bf16 where it outruns f32 on this CPU, f32 elsewhere; same answer.
    plain = tn.create_classifier(style="local", model_dir=model_dir)
    auto = tn.create_classifier(style="local", model_dir=model_dir, precision="auto")
    state = "my parcel is late"
    assert auto.evaluate(state, QS).choice("desk").choice == plain.evaluate(state, QS).choice("desk").choice
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="local", model_dir=model_dir, precision="fp16")
    assert e.value.kind == "config" and "precision=" in str(e.value)
    with pytest.raises(tn.ClassifierError) as e:
        tn.create_classifier(style="systemone", precision="bf16")
    assert "--precision bf16" in str(e.value)


def test_student_and_cascade_on_the_embedded_model(model_dir, repo, stub):
    student = repo / "crates/toolnexus-guard/data/guard.student.json"
    questions = json.loads((repo / "crates/toolnexus-guard/data/guard.questions.json").read_text())
    questions = questions.get("questions", questions)
    judge = tn.create_classifier(style="student", student=student, model_dir=model_dir)
    assert judge.style == "student"
    d = judge.evaluate("rm -rf /", questions)
    assert set(d.answers) == set(questions)
    # The student in front of System One: what it is unsure of goes on to the stub.
    cascade = tn.create_classifier(base_url=stub.url, cascade=True, cascade_threshold=1.0,
                                   student=student, model_dir=model_dir)
    assert cascade.evaluate("rm -rf /", questions).model == "stub-1"
    assert stub.requests == 1
