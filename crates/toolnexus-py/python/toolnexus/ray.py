"""toolnexus on Ray Data: judge a dataset past one machine.

``Judge`` is a callable class for ``Dataset.map_batches``: each actor builds
its classifier once, from the picklable keyword arguments it is given, and
judges pyarrow batches with ``evaluate_table`` (a failed row has its message
in the ``error`` column; it never fails the batch)::

    import ray, toolnexus as tn
    from toolnexus.ray import Judge

    qs = {"refund": tn.Noul("Does the customer ask for money back?")}
    ds = ray.data.read_parquet("tickets.parquet")
    out = ds.map_batches(Judge, fn_constructor_kwargs={"style": "local", "questions": qs,
                         "state_column": "text"}, concurrency=2, batch_format="pyarrow")

``judge_dataset`` is the same in one call.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from . import create_classifier

__all__ = ["Judge", "judge_dataset"]


class Judge:
    """Judges a batch of rows: ``Judge(questions=…, state_column=… |
    state_columns=[…], concurrency=16, **options)``, where ``options`` are
    ``create_classifier``'s (``style``, ``model``, ``base_url``, …). Built
    once per actor; called once per batch."""

    def __init__(
        self,
        questions: Mapping[str, Any],
        state_column: Optional[str] = None,
        state_columns: Optional[Sequence[str]] = None,
        concurrency: int = 16,
        **options: Any,
    ) -> None:
        self._questions = dict(questions)
        self._state_column = state_column
        self._state_columns = None if state_columns is None else list(state_columns)
        self._concurrency = concurrency
        self._classifier = create_classifier(**options)

    def __call__(self, batch: Any) -> Any:
        return self._classifier.evaluate_table(
            batch,
            self._questions,
            state_column=self._state_column,
            state_columns=self._state_columns,
            concurrency=self._concurrency,
        )


def judge_dataset(
    dataset: Any,
    questions: Mapping[str, Any],
    *,
    state_column: Optional[str] = None,
    state_columns: Optional[Sequence[str]] = None,
    concurrency: int = 16,
    actors: int = 1,
    batch_size: Optional[int] = 1024,
    num_cpus: Optional[float] = None,
    **options: Any,
) -> Any:
    """``dataset`` judged by ``actors`` actors, each running ``Judge`` with
    ``concurrency`` calls in flight, in pyarrow batches of ``batch_size``
    rows. ``options`` are ``create_classifier``'s. Returns the lazy dataset
    with the result columns beside the input's."""
    kwargs = dict(
        questions=dict(questions),
        state_column=state_column,
        state_columns=state_columns,
        concurrency=concurrency,
        **options,
    )
    import ray.data

    extra = {} if num_cpus is None else {"num_cpus": num_cpus}
    return dataset.map_batches(
        Judge,
        fn_constructor_kwargs=kwargs,
        compute=ray.data.ActorPoolStrategy(size=actors),
        batch_size=batch_size,
        batch_format="pyarrow",
        **extra,
    )
