"""The SDK calls the compatibility suite replays from `fixtures/sdk.tape.json`.

`make_fixtures.py` sends each case to the stand-in upstream through the SDK and
records what it answered with `toolnexus tape record`; `run_compat.py` sends the
same calls to `toolnexus serve --style tape` and expects the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from typesafe_sdk import Box, Choice, Noul, Score

CALL = "compat"
"""The tape call name the cases are recorded under."""

MODEL = "jev-compat-1"
"""The model name the tape serves (the SDK's `jev-latest` is its alias)."""

LONG_TRANSCRIPT = " ".join(
    f"Line {i}: the customer explains again that the charge of 42.00 appeared twice on the statement."
    for i in range(40)
)


@dataclass
class Case:
    name: str
    state: Any
    questions: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


CASES = [
    # The SDK's quickstart, null choice descriptions included.
    Case(
        "quickstart",
        "I was charged twice. Please help.",
        {
            "billing": Noul(instructions="Is this about billing?"),
            "tone": Choice(instructions="What is the tone?", criteria={"calm": None, "angry": None}),
        },
    ),
    # The same questions as plain dictionaries, over an object state.
    Case(
        "dict-questions",
        {"message": "I was charged twice. Please help."},
        {
            "billing": {"type": "noul", "instructions": "Is this about billing?"},
            "tone": {"type": "choice", "instructions": "What is the tone?", "criteria": {"calm": None, "angry": None}},
        },
    ),
    Case(
        "object-state",
        {"subject": "Duplicate charge", "message": "Please help.", "account": {"plan": "pro", "months": 14}},
        {
            "urgency": Score(
                instructions="How urgent is this message?",
                criteria=["Can wait", "Needs attention this week", "Needs attention today"],
            ),
            "refund": Noul(
                instructions="Does the customer ask for money back?",
                criteria={"true": "They ask for a refund or a reversal.", "false": "They ask for something else."},
            ),
        },
    ),
    # An array state; object and array content in instructions, descriptions and levels.
    Case(
        "array-state",
        [{"role": "user", "content": "My parcel never came."}, {"role": "agent", "content": "Sorry to hear that."}],
        {
            "desk": Choice(
                instructions={"task": "Route the conversation", "audience": "support"},
                criteria={"billing": "Charges, refunds, invoices", "shipping": {"about": "Parcels and delivery"}, "other": None},
            ),
            "severity": Score(instructions="How severe?", criteria=[{"level": "minor"}, ["major", "needs a human"], "critical"]),
        },
    ),
    # The fourth question type: its answer comes from the recording.
    Case(
        "box",
        "A photo of a car door with a dent near the handle.",
        {"dent": Box(instructions="Where is the dent?"), "damaged": Noul(instructions="Is the car damaged?")},
    ),
    # A body well over 1 KiB: the SDK sends it zstd-compressed.
    Case(
        "large-state",
        {"transcript": LONG_TRANSCRIPT},
        {"repeat": Noul(instructions="Does the customer repeat the same complaint?")},
    ),
]


def case(name: str) -> Case:
    return next(c for c in CASES if c.name == name)
