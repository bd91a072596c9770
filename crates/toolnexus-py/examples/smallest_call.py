"""The smallest call: one score question answered by a recorded decision.

The seed's `smallest_call` example in Python; it prints what the Rust one prints.
"""

import json

import toolnexus as tn


def main() -> None:
    state = "rm -rf ./build"
    questions = {
        "risk": tn.Score("How destructive is this shell command?", ["harmless", "reversible", "destructive"]),
    }
    recorded = b"""{"model":"typesafe/jev-1.13-20260917","calibrated":true,
        "answers":{"risk":{"type":"score","score":1.21,
            "legend":{"0":"harmless","1":"reversible","2":"destructive"},
            "probabilities":{"0":0.10,"1":0.59,"2":0.31},"confidence":0.71}},
        "usage":{"input_tokens":210,"output_tokens":24}}"""

    judge = tn.create_classifier(
        style="static",
        model="typesafe/jev-1.13",
        decisions=[tn.RecordedDecision(state, questions, recorded)],
    )

    d = judge.evaluate(state, questions)
    risk = d.score("risk")

    # Wrong type: named, not a silent zero.
    try:
        d.noul("risk")
        raise AssertionError("expected a typed read failure")
    except tn.ClassifierError as e:
        assert "is a score answer, not noul" in str(e), e
    # Absent key: a different message, on purpose.
    try:
        d.score("urgency")
        raise AssertionError("expected an absent-key failure")
    except tn.ClassifierError as e:
        assert "no answer" in str(e), e

    # The AUTHORITY stays here, in code — the decision only informs it.
    if risk.score >= 1.5:
        print("would require approval")

    print(f"ok: score={risk.score} confidence={risk.confidence} levels={json.dumps(risk.levels())}")


if __name__ == "__main__":
    main()
