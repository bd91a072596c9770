"""The full surface: a custom callable answering as an llm-style backend would.

The seed's `full_surface` example in Python; it prints what the Rust one prints.
"""

import toolnexus as tn


def desk_judge(state, questions):
    # An llm-style backend self-reports: round numbers, uncalibrated.
    return {
        "model": "gpt-4o-mini",
        "answers": {
            "desk": {
                "type": "choice",
                "choice": "billing",
                "probabilities": {"billing": 0.34, "shipping": 0.33, "technical": 0.33},
                "confidence": 0.95,  # round self-reported numbers are an llm-style tell
            }
        },
        # No threshold tuned elsewhere transfers.
        "calibrated": False,
        "usage": {"input_tokens": 516, "output_tokens": 72},
    }


def main() -> None:
    judge = tn.create_classifier(style="custom", evaluate=desk_judge)

    qs = {
        "desk": tn.choice_over("Which desk owns this?", [
            ("billing", "own it here when money moved: a duplicate charge, a refund owed"),
            ("shipping", "own it here when a physical parcel is late or damaged"),
            ("technical", "own it here when the product itself errors"),
        ]),
    }

    d = judge.evaluate("charged twice", qs)
    desk = d.choice("desk")
    assert desk.near_uniform, "this distribution is flat within 0.05 of 1/3"
    assert not d.calibrated, "an llm-style decision reports calibrated: false"

    # Absent is NOT zero: printing $0.00 here would be a lie about money.
    cost = "not reported by this backend" if d.usage.cost is None else f"${d.usage.cost}"

    print(f"ok: choice={desk.choice} near_uniform={str(desk.near_uniform).lower()} "
          f"calibrated={str(d.calibrated).lower()} cost={cost}")


if __name__ == "__main__":
    main()
