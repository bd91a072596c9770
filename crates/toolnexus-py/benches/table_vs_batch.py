"""evaluate_table against the command line's batch, same stub, same sitting.

Starts `toolnexus serve` on 127.0.0.1 replaying the library's demo tape
(`--match questions`: every state answered from the recording), then judges
the same N states with the CLI's `batch` and with Python's `evaluate_table`,
alternating, at the same concurrency, and prints rows/s for each run.

    python benches/table_vs_batch.py --bin target/release/toolnexus --rows 10000 --runs 3
"""

import argparse
import json
import pathlib
import subprocess
import tempfile
import time

import pyarrow as pa

import toolnexus as tn

import stub


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()

    questions = stub.questions()
    with stub.serve(args.bin) as root:
        base = f"{root}/v1"
        states = [f"ticket {i}: my parcel is late and I was charged twice" for i in range(args.rows)]
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            (d / "states.jsonl").write_text("".join(json.dumps(s) + "\n" for s in states))
            (d / "questions.json").write_text(json.dumps(questions))
            table = pa.table({"text": states})
            judge = tn.create_classifier(base_url=base, model="jev-1.13")
            for run in range(args.runs):
                out = d / f"out{run}.jsonl"
                t0 = time.perf_counter()
                subprocess.run(
                    [args.bin, "batch", "--style", "systemone", "--base-url", base, "--model", "jev-1.13",
                     "--questions", str(d / "questions.json"), "--states", str(d / "states.jsonl"),
                     "--out", str(out), "--concurrency", str(args.concurrency), "--no-progress", "-q"],
                    check=True,
                )
                rust = args.rows / (time.perf_counter() - t0)
                t0 = time.perf_counter()
                result = judge.evaluate_table(table, questions, state_column="text", concurrency=args.concurrency)
                python = args.rows / (time.perf_counter() - t0)
                assert result.column("error").null_count == args.rows, result.column("error")[0]
                print(f"run {run}: batch {rust:.0f} rows/s, evaluate_table {python:.0f} rows/s, "
                      f"ratio {python / rust:.2f}")


if __name__ == "__main__":
    main()
