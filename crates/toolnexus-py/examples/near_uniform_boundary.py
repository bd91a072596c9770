"""near_uniform at its boundary: the tolerance is inclusive.

The seed's `near_uniform_boundary` example in Python; it prints what the Rust one prints.
"""

import toolnexus as tn


def main() -> None:
    cases = [
        # Deviation of exactly 0.05 from 1/n = 0.25: INCLUSIVE, so this IS near-uniform.
        ("at the tolerance", {"a": 0.30, "b": 0.25, "c": 0.25, "d": 0.20}, True),
        # Past it.
        ("just outside", {"a": 0.56, "b": 0.44}, False),
        # A real answer: the model had something to rank on.
        ("decisive", {"a": 0.97, "b": 0.03}, False),
        # Never renormalised; a single option is trivially uniform.
        ("n == 1 is trivially uniform", {"only": 0.02}, True),
        # No distribution at all.
        ("empty", {}, False),
    ]

    for name, probs, want in cases:
        assert tn.near_uniform(probs) == want, name

    # The same rule is applied on decode, so ChoiceAnswer.near_uniform is already set.
    print(f"ok: tolerance {tn.NEAR_UNIFORM_TOLERANCE} inclusive, five cases agree")


if __name__ == "__main__":
    main()
