"""toolnexus: typed judgments from System One models, local engines and tapes.

A classifier takes a state (any JSON value) and typed questions under your own
keys, and returns a ``Decision``: one typed answer per key, with probabilities,
a confidence, the model that answered, token usage, an optional cost and a
``calibrated`` flag. A classifier interprets; it never authorises: a
schema-valid decision can be confidently wrong, so limits and permissions stay
in your code.

>>> import toolnexus as tn
>>> tn.near_uniform({"a": 0.30, "b": 0.25, "c": 0.25, "d": 0.20})
True
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._native import (
    NEAR_UNIFORM_TOLERANCE,
    ChoiceAnswer,
    ClassifierError,
    Decision,
    NoulAnswer,
    ScoreAnswer,
    Usage,
    canonical_json,
    near_uniform,
)

__all__ = [
    "NEAR_UNIFORM_TOLERANCE",
    "Choice",
    "ChoiceAnswer",
    "Classifier",
    "ClassifierError",
    "Decision",
    "Noul",
    "NoulAnswer",
    "RecordedDecision",
    "Score",
    "ScoreAnswer",
    "Usage",
    "canonical_json",
    "choice_over",
    "create_classifier",
    "near_uniform",
]

# The exception's attributes when Python code raises it without them.
ClassifierError.kind = "custom"
ClassifierError.status = None
ClassifierError.is_retryable = False
ClassifierError.is_timeout = False
ClassifierError.is_cancelled = False


@dataclasses.dataclass(frozen=True)
class Noul:
    """A yes/no question: the answer is P(the statement holds).

    ``when_true`` and ``when_false`` say what each side means; leave both out
    for no criteria (absent on the wire, which is not the same as empty).
    """

    instructions: Any
    when_true: Optional[Any] = None
    when_false: Optional[Any] = None

    def to_wire(self) -> dict:
        """The question's wire form."""
        wire: dict = {"type": "noul", "instructions": self.instructions}
        if self.when_true is not None or self.when_false is not None:
            wire["criteria"] = {
                "false": "" if self.when_false is None else self.when_false,
                "true": "" if self.when_true is None else self.when_true,
            }
        return wire


@dataclasses.dataclass(frozen=True)
class Choice:
    """Pick one option: ``criteria`` maps each option id to what picking it
    would MEAN (the descriptions are all that tells the options apart), in the
    order the model should read them."""

    instructions: Any
    criteria: Mapping[str, Optional[Any]]

    def __post_init__(self) -> None:
        # A plain dict keeps the caller's order and pickles anywhere.
        object.__setattr__(self, "criteria", dict(self.criteria))

    def to_wire(self) -> dict:
        """The question's wire form."""
        return {"type": "choice", "instructions": self.instructions, "criteria": dict(self.criteria)}


@dataclasses.dataclass(frozen=True)
class Score:
    """A level on an ordered rubric: ``criteria`` lists the levels, lowest
    first (never sorted). The answer's ``score`` is an expected level and may
    fall between levels."""

    instructions: Any
    criteria: Sequence[Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "criteria", list(self.criteria))

    def to_wire(self) -> dict:
        """The question's wire form."""
        return {"type": "score", "instructions": self.instructions, "criteria": list(self.criteria)}


Question = Union[Noul, Choice, Score]


def choice_over(instructions: Any, pairs: Iterable[Tuple[str, Optional[Any]]]) -> Choice:
    """A ``Choice`` from ``(option id, meaning)`` pairs, in their order.

    >>> choice_over("Which desk?", [("billing", "money moved")]).criteria
    {'billing': 'money moved'}
    """
    return Choice(instructions, dict(pairs))


@dataclasses.dataclass(frozen=True)
class RecordedDecision:
    """A recorded answer for ``style="static"``: the state and questions it
    answers and the wire response (bytes, str or a dict)."""

    state: Any
    questions: Mapping[str, Question]
    response: Union[bytes, str, dict]


def _as_arrow(table: Any) -> Tuple[Any, Callable[[Any], Any]]:
    """A table as a ``pyarrow.Table``, and how to turn the result back into
    the caller's kind (a record batch, a pandas or Polars frame)."""
    import pyarrow as pa

    if isinstance(table, pa.Table):
        return table, lambda t: t
    if isinstance(table, pa.RecordBatch):
        def back(t: Any) -> Any:
            batches = t.combine_chunks().to_batches()
            return batches[0] if batches else pa.RecordBatch.from_pylist([], schema=t.schema)
        return pa.Table.from_batches([table]), back
    module = type(table).__module__
    if module.startswith("pandas"):
        return pa.Table.from_pandas(table, preserve_index=False), lambda t: t.to_pandas()
    if module.startswith("polars"):
        import polars as pl

        return table.to_arrow(), pl.from_arrow
    if hasattr(table, "__arrow_c_stream__"):
        return pa.table(table), lambda t: t
    raise TypeError(
        f"evaluate_table: want a pyarrow Table or RecordBatch, a pandas or Polars DataFrame, got {type(table).__name__}"
    )


class Classifier:
    """A classifier stack, built by ``create_classifier``. Cheap to share
    across threads and tasks; every call runs on the library's runtime."""

    __slots__ = ("_native",)

    def __init__(self, native: "_native.Classifier") -> None:
        self._native = native

    @property
    def style(self) -> str:
        """The style at the bottom of the stack."""
        return self._native.style

    @property
    def model(self) -> str:
        """The model the stack asks for."""
        return self._native.model

    @property
    def call(self) -> str:
        """The call name evaluations run under."""
        return self._native.call

    def evaluate(self, state: Any, questions: Mapping[str, Any], *, call_name: Optional[str] = None) -> Decision:
        """Evaluates one state. The GIL is released while the call runs;
        Ctrl-C cancels it. Raises ``ClassifierError`` on failure."""
        return self._native.evaluate(state, questions, call_name=call_name)

    async def evaluate_async(
        self, state: Any, questions: Mapping[str, Any], *, call_name: Optional[str] = None
    ) -> Decision:
        """Evaluates one state from asyncio; cancelling the task cancels the call."""
        return await self._native.evaluate_async(state, questions, call_name=call_name)

    def evaluate_table(
        self,
        table: Any,
        questions: Mapping[str, Any],
        *,
        state_column: Optional[str] = None,
        state_columns: Optional[Sequence[str]] = None,
        concurrency: int = 16,
        progress: Optional[Callable[[int, int], Any]] = None,
        call_name: Optional[str] = None,
    ) -> Any:
        """Evaluates every row and returns the table with the result columns
        (SPEC §24): per question ``k.noul``; ``k.choice``, ``k.confidence``,
        ``k.near_uniform``, ``k.p.<option>``; ``k.score``, ``k.level``,
        ``k.confidence``, ``k.p.<level>``; then ``model``, ``calibrated``,
        ``input_tokens``, ``output_tokens``, ``cost`` and ``error``. A failed
        row has its message in ``error`` and never fails the table.

        ``state_column`` names the column that is the state; ``state_columns``
        builds an object state from several. At most ``concurrency`` calls
        are in flight. ``progress(done, total)`` is called now and then. The
        GIL is released while the rows run. A pandas or Polars frame goes
        through Arrow and comes back as its own kind.
        """
        arrow, back = _as_arrow(table)
        out = self._native.evaluate_table(
            arrow,
            questions,
            state_column=state_column,
            state_columns=None if state_columns is None else list(state_columns),
            concurrency=concurrency,
            progress=progress,
            call_name=call_name,
        )
        return back(out)

    def __repr__(self) -> str:
        return repr(self._native)


def create_classifier(style: Optional[str] = None, model: Optional[str] = None, **options: Any) -> Classifier:
    """Builds a classifier stack.

    ``style``: ``systemone`` (default), ``llm``, ``tape``, ``static``,
    ``local``, ``student``, ``laya``, ``decisiontune`` or ``custom``. Options
    mirror the library's (snake case): ``base_url``, ``backend``,
    ``api_key_env``, ``chat_style``, ``logprobs``, ``timeout_ms``,
    ``retries``, ``ca_cert``, ``tape``, ``tape_match``, ``call``,
    ``model_dir``, ``precision`` (``"f32"``, ``"bf16"`` or ``"auto"``: what a
    local engine's encoder multiplies in), ``student``, ``cascade``,
    ``cascade_threshold``,
    ``calibration``, ``fallback`` (base URLs), ``cache`` (True for memory, or
    a SQLite file), ``alias_ttl_s``, ``max_cost``, ``max_tokens``,
    ``max_time_s``, ``rpm``, ``tpm``, ``concurrency``, ``decisions`` (static:
    ``RecordedDecision`` values) and ``evaluate`` (custom: a callable
    ``(state, questions) -> dict`` of wire JSON, or a ``Decision``).

    A bad option raises ``ClassifierError`` (kind ``config``) naming it; an
    unknown keyword raises ``TypeError``.
    """
    return Classifier(_native.create_classifier(style=style, model=model, **options))
