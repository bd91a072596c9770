"""Ray Data on a local cluster: every row judged exactly once, with the
answers the in-process evaluate_table gives."""

import os

import pyarrow as pa
import pytest

import toolnexus as tn

ray = pytest.importorskip("ray")
from toolnexus.ray import Judge, judge_dataset  # noqa: E402

ROWS = 5000
QS = {
    "refund": tn.Noul("Does the customer ask for money back?"),
    "desk": tn.Choice("Which desk owns this?", {"billing": "money moved", "shipping": "a parcel"}),
}


@pytest.fixture(scope="module")
def cluster():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        object_store_memory=300 * 1024 * 1024,
        ignore_reinit_error=True,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield
    ray.shutdown()


def tickets(n):
    # Short states keep the local engine's part of the suite small.
    return pa.table({"id": list(range(n)), "text": [f"ticket {i}: refund?" if i % 3 else f"parcel {i}" for i in range(n)]})


def collect(ds):
    out = pa.concat_tables(ray.get(ds.to_arrow_refs()))
    return out.sort_by("id")


def assert_same_rows(got, want):
    assert got.column("id").to_pylist() == list(range(ROWS)), "every row exactly once"
    assert got.column_names == want.column_names
    for name in want.column_names:
        assert got.column(name).to_pylist() == want.column(name).to_pylist(), name


def test_ray_judges_every_row_once_against_a_loopback_stub(cluster, stub):
    table = tickets(ROWS)
    want = tn.create_classifier(base_url=stub.url).evaluate_table(table, QS, state_column="text", concurrency=32)
    assert stub.requests == ROWS
    ds = ray.data.from_arrow(table).repartition(4)
    got = collect(judge_dataset(ds, QS, state_column="text", base_url=stub.url, actors=2,
                                concurrency=16, batch_size=500, num_cpus=0.5))
    assert stub.requests == 2 * ROWS, "each row asked once by Ray"
    assert got.column("error").null_count == ROWS
    assert_same_rows(got, want)


def test_ray_judges_every_row_once_with_the_local_style(cluster, model_dir):
    table = tickets(ROWS)
    want = tn.create_classifier(style="local", model_dir=model_dir).evaluate_table(
        table, QS, state_column="text", concurrency=4)
    ds = ray.data.from_arrow(table).repartition(4)
    got = collect(ds.map_batches(
        Judge,
        fn_constructor_kwargs={"style": "local", "model_dir": model_dir, "questions": QS,
                               "state_column": "text", "concurrency": 4},
        concurrency=2, batch_size=500, batch_format="pyarrow", num_cpus=0.5,
    ))
    assert got.column("error").null_count == ROWS
    assert_same_rows(got, want)


def test_a_failed_row_is_a_column_not_a_failed_job(cluster):
    def judge_fn(state, questions):
        if state.endswith("3"):
            raise ValueError("no")
        return {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.5}}}

    # In-process with a callable; on Ray with recorded decisions that miss
    # every row (a spec an actor rebuilds from pickled values).
    rows = tn.create_classifier(style="custom", evaluate=judge_fn).evaluate_table(
        pa.table({"text": ["1", "3"]}), {"refund": QS["refund"]}, state_column="text").to_pylist()
    assert rows[0]["error"] is None and "ValueError: no" in rows[1]["error"]
    ds = ray.data.from_arrow(pa.table({"id": [0, 1], "text": ["a", "b"]}))
    other = tn.RecordedDecision("another state", {"refund": QS["refund"]},
                                {"model": "m", "answers": {"refund": {"type": "noul", "noul": 0.5}}})
    out = collect(judge_dataset(ds, {"refund": QS["refund"]}, state_column="text", style="static",
                                decisions=[other], num_cpus=0.5))
    assert out.column("error").to_pylist() == [
        "classifier: static: no recorded decision for this request+state"] * 2
