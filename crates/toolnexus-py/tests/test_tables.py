"""evaluate_table: Arrow in, Arrow out, SPEC §24's columns, per-row errors."""

import threading

import pyarrow as pa
import pytest

import toolnexus as tn
from stub import answer

QS = {
    "refund": tn.Noul("Does the customer ask for money back?"),
    "desk": tn.Choice("Which desk owns this?", {"shipping": "a parcel", "billing": "money moved"}),
    "risk": tn.Score("How urgent?", ["low", "normal", "high"]),
}
WIRE = {k: q.to_wire() for k, q in QS.items()}


def test_the_result_columns_follow_spec_24(stub):
    judge = tn.create_classifier(base_url=stub.url)
    table = pa.table({"id": [1, 2, 3], "text": ["a", "b", "c"]})
    out = judge.evaluate_table(table, QS, state_column="text")
    assert out.column_names == [
        "id", "text",
        "desk.choice", "desk.confidence", "desk.near_uniform", "desk.p.shipping", "desk.p.billing",
        "refund.noul",
        "risk.score", "risk.level", "risk.confidence", "risk.p.0", "risk.p.1", "risk.p.2",
        "model", "calibrated", "input_tokens", "output_tokens", "cost", "error",
    ]
    for row, text in zip(out.to_pylist(), ["a", "b", "c"]):
        want = answer(text, WIRE)["answers"]
        assert row["refund.noul"] == want["refund"]["noul"]
        assert row["desk.choice"] == want["desk"]["choice"]
        assert row["desk.p.billing"] == want["desk"]["probabilities"]["billing"]
        assert row["risk.score"] == pytest.approx(want["risk"]["score"])
        assert row["risk.level"] == want["risk"]["legend"][str(round(want["risk"]["score"]))]
        assert row["model"] == "stub-1" and row["error"] is None and row["cost"] is None
        assert row["input_tokens"] == len(f'"{text}"')


def test_one_failed_row_never_fails_the_table():
    def judge_fn(state, questions):
        if state == "bad":
            raise ValueError("this row cannot be judged")
        return {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.25}}}

    judge = tn.create_classifier(style="custom", evaluate=judge_fn)
    table = pa.table({"text": ["good", "bad", None, "good"]})
    rows = judge.evaluate_table(table, {"refund": QS["refund"]}, state_column="text").to_pylist()
    assert [r["refund.noul"] for r in rows] == [0.25, None, None, 0.25]
    assert rows[0]["error"] is None and rows[3]["error"] is None
    assert "ValueError: this row cannot be judged" in rows[1]["error"]
    assert rows[2]["error"] == 'row 3: column "text" is null in this row: no state'


def test_state_columns_build_an_object_and_types_cross_as_json():
    seen = []

    def judge_fn(state, questions):
        seen.append(state)
        return {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.5}}}

    judge = tn.create_classifier(style="custom", evaluate=judge_fn)
    table = pa.table({
        "subject": ["refund?"], "n": [3], "x": [0.5], "ok": [True],
        "tags": [["a", "b"]], "meta": [{"lang": "en"}], "empty": pa.array([None], pa.string()),
    })
    judge.evaluate_table(table, {"refund": QS["refund"]},
                         state_columns=["subject", "n", "x", "ok", "tags", "meta", "empty"])
    assert seen == [{"subject": "refund?", "n": 3, "x": 0.5, "ok": True, "tags": ["a", "b"],
                     "meta": {"lang": "en"}, "empty": None}]


def test_a_struct_column_is_an_object_state():
    seen = []
    judge = tn.create_classifier(style="custom", evaluate=lambda s, q: seen.append(s) or {
        "model": "m", "answers": {"refund": {"type": "noul", "noul": 0.5}}})
    judge.evaluate_table(pa.table({"s": [{"a": 1, "b": "x"}]}), {"refund": QS["refund"]}, state_column="s")
    assert seen == [{"a": 1, "b": "x"}]


def test_bad_arguments_name_the_column():
    judge = tn.create_classifier(style="custom", evaluate=lambda s, q: {})
    table = pa.table({"text": ["a"], "error": ["x"]})
    with pytest.raises(ValueError, match='no column "body" in the table'):
        judge.evaluate_table(pa.table({"text": ["a"]}), QS, state_column="body")
    with pytest.raises(ValueError, match='already has a column "error"'):
        judge.evaluate_table(table, QS, state_column="text")
    with pytest.raises(ValueError, match="state_column= .* or state_columns="):
        judge.evaluate_table(table, QS)
    with pytest.raises(ValueError, match='column "b" is of type'):
        judge.evaluate_table(pa.table({"b": pa.array([b"x"], pa.binary())}), QS, state_column="b")


def test_a_record_batch_comes_back_a_record_batch(stub):
    judge = tn.create_classifier(base_url=stub.url)
    batch = pa.record_batch({"text": ["a", "b"]})
    out = judge.evaluate_table(batch, QS, state_column="text")
    assert isinstance(out, pa.RecordBatch) and out.num_rows == 2


def test_pandas_frames_go_through_arrow(stub):
    pd = pytest.importorskip("pandas")
    judge = tn.create_classifier(base_url=stub.url)
    frame = pd.DataFrame({"text": ["a", "b"], "n": [1, 2]})
    out = judge.evaluate_table(frame, QS, state_column="text")
    assert isinstance(out, pd.DataFrame)
    arrow = judge.evaluate_table(pa.Table.from_pandas(frame), QS, state_column="text")
    assert out["desk.choice"].tolist() == arrow.column("desk.choice").to_pylist()


def test_polars_frames_go_through_arrow(stub):
    pl = pytest.importorskip("polars")
    judge = tn.create_classifier(base_url=stub.url)
    out = judge.evaluate_table(pl.DataFrame({"text": ["a", "b"]}), QS, state_column="text")
    assert isinstance(out, pl.DataFrame) and out["error"].null_count() == 2


def test_the_gil_is_released_while_rows_run():
    # Each row runs a Python callable on the runtime's threads: they can only
    # take the GIL if evaluate_table released it.
    threads = set()

    def judge_fn(state, questions):
        threads.add(threading.get_ident())
        return {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.5}}}

    judge = tn.create_classifier(style="custom", evaluate=judge_fn)
    table = pa.table({"text": [str(i) for i in range(200)]})
    out = judge.evaluate_table(table, {"refund": QS["refund"]}, state_column="text", concurrency=8)
    assert out.column("error").null_count == 200
    assert threading.get_ident() not in threads


def test_progress_is_reported_and_ends_at_the_total(stub):
    judge = tn.create_classifier(base_url=stub.url)
    calls = []
    table = pa.table({"text": [str(i) for i in range(50)]})
    judge.evaluate_table(table, QS, state_column="text", progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (50, 50)
    assert all(total == 50 and 0 <= done <= 50 for done, total in calls)


def test_many_batches_keep_their_rows_in_order(stub):
    judge = tn.create_classifier(base_url=stub.url)
    texts = [f"t{i}" for i in range(1000)]
    table = pa.Table.from_batches(pa.table({"text": texts}).to_batches(max_chunksize=64))
    out = judge.evaluate_table(table, QS, state_column="text", concurrency=32)
    assert out.column("text").to_pylist() == texts
    assert out.column("desk.choice").to_pylist() == [answer(t, WIRE)["answers"]["desk"]["choice"] for t in texts]
    assert stub.requests == 1000
