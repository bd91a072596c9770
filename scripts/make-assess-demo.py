#!/usr/bin/env python3
"""Writes crates/toolnexus/examples/assess/demo.tape.json, the recorded decisions
behind the offline `toolnexus assess` demo.

The decisions are written by this script, not by a model: for every ticket of
demo.labels.jsonl it answers each question of demo.questions.json plausibly and
somewhat over-confidently, and gets a share of them wrong (a seeded generator,
so the file is the same on every run). The tape's note says so.

    python3 scripts/make-assess-demo.py

Then check it still loads and replays: cargo test -p toolnexus-cli assess
"""

import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "crates" / "toolnexus" / "examples" / "assess"
CALL = "assess_demo"
MODEL = "toolnexus-demo-judge"
ANSWERED_BY = "toolnexus-demo-judge-2026-01"
NOTE = (
    "toolnexus assess demo: decisions written by the toolnexus project with "
    "scripts/make-assess-demo.py (seeded) for the offline `toolnexus assess` demo. "
    "Plausible, somewhat over-confident answers, some of them wrong; not a real "
    "model's output, and not a benchmark."
)


def r2(x):
    return round(x + 0.0, 2)


def distribution(ids, top_id, top, rng):
    """A distribution over ids with `top` on top_id and the rest spread unevenly,
    every figure rounded to 0.01 and the whole summing to 1."""
    rest = [i for i in ids if i != top_id]
    weights = [rng.uniform(0.2, 1.0) for _ in rest]
    left = 1.0 - top
    probs = {top_id: r2(top)}
    for i, w in zip(rest, weights):
        probs[i] = max(0.01, r2(left * w / sum(weights)))
    probs[top_id] = r2(1.0 - sum(v for k, v in probs.items() if k != top_id))
    return probs


def noul(gold, rng):
    u = rng.random()
    if u < 0.10:  # unsure
        p = rng.uniform(0.42, 0.62)
    elif u < 0.24:  # wrong, and sure of it
        p = rng.uniform(0.74, 0.96)
        p = p if not gold else 1.0 - p
    else:
        p = rng.uniform(0.84, 0.99)
        p = p if gold else 1.0 - p
    return {"type": "noul", "noul": r2(p)}


def choice(gold, ids, rng):
    said = gold if rng.random() >= 0.2 else rng.choice([i for i in ids if i != gold])
    top = rng.uniform(0.72, 0.96)
    probs = distribution(ids, said, top, rng)
    return {
        "type": "choice",
        "choice": said,
        "confidence": probs[said],
        "probabilities": dict(sorted(probs.items())),
    }


def score(gold, levels, rng):
    n = len(levels)
    u = rng.random()
    if u < 0.05:
        said = gold + rng.choice([-2, 2])
    elif u < 0.35:
        said = gold + rng.choice([-1, 1])
    else:
        said = gold
    said = min(max(said, 0), n - 1)
    keys = [str(i) for i in range(n)]
    probs = distribution(keys, str(said), rng.uniform(0.62, 0.88), rng)
    expected = r2(sum(int(k) * p for k, p in probs.items()))
    return {
        "type": "score",
        "score": expected,
        "confidence": probs[str(said)],
        "legend": {str(i): text for i, text in enumerate(levels)},
        "probabilities": probs,
    }


def canonical(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def main():
    questions = json.loads((DEMO / "demo.questions.json").read_text())
    rng = random.Random(2026)
    entries = []
    for line in (DEMO / "demo.labels.jsonl").read_text().splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        ex = json.loads(line)
        # A question the ticket is not labelled on is still answered.
        gold = {
            "desk": rng.choice(sorted(questions["desk"]["criteria"])),
            "refund_requested": rng.random() < 0.3,
            "urgency": rng.randrange(len(questions["urgency"]["criteria"])),
        }
        gold.update(ex["labels"])
        answers = {}
        for key in sorted(questions):
            q = questions[key]
            if q["type"] == "noul":
                answers[key] = noul(gold[key], rng)
            elif q["type"] == "choice":
                answers[key] = choice(gold[key], sorted(q["criteria"]), rng)
            else:
                answers[key] = score(gold[key], q["criteria"], rng)
        body = ex["state"]["data"]["body"]
        tokens_in = 380 + len(body) // 4
        decision = {
            "model": ANSWERED_BY,
            "calibrated": False,
            "answers": answers,
            "usage": {
                "input_tokens": tokens_in,
                "output_tokens": 44,
                "cost": r2(tokens_in * 0.0004 + 44 * 0.0016) / 10000,
            },
        }
        entries.append(
            {
                "decision": decision,
                "model": MODEL,
                "questions": questions,
                "state": ex["state"],
            }
        )
    entries.sort(key=lambda e: canonical(e["state"]))
    tape = {"calls": {CALL: entries}, "format": "toolnexus.tape", "note": NOTE, "version": 1}
    text = json.dumps(tape, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    (DEMO / "demo.tape.json").write_text(text)
    print(f"wrote {len(entries)} decisions to {DEMO / 'demo.tape.json'}")


if __name__ == "__main__":
    main()
