"""evaluate_table against the official SDK's async client, same stub, same
sitting.

Starts `toolnexus serve` on 127.0.0.1 replaying the demo tape, then judges the
same N states with `AsyncTypeSafeClient.system_one` (asyncio, a semaphore of
`--concurrency` calls in flight: the way a Python user spreads calls) and
with `evaluate_table` at the same concurrency, alternating, and prints rows/s.

    python benches/table_vs_sdk.py --bin target/release/toolnexus --rows 5000 --runs 3
"""

import argparse
import asyncio
import time

import pyarrow as pa
from typesafe_sdk import AsyncTypeSafeClient, Choice, Noul, Score

import toolnexus as tn

import stub


def sdk_question(q: dict):
    """A wire question as the SDK's own type."""
    kind = {"noul": Noul, "choice": Choice, "score": Score}[q["type"]]
    return kind(**{k: v for k, v in q.items() if k != "type"})


async def with_sdk(root: str, states: list, questions: dict, concurrency: int) -> int:
    gate = asyncio.Semaphore(concurrency)
    typed = {k: sdk_question(q) for k, q in questions.items()}
    async with AsyncTypeSafeClient(base_url=root, api_key="bench", model="jev-1.13") as client:

        async def one(state: str) -> None:
            async with gate:
                await client.system_one(state=state, questions=typed)

        await asyncio.gather(*(one(s) for s in states))
    return len(states)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=5_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()

    questions = stub.questions()
    with stub.serve(args.bin) as root:
        states = [f"ticket {i}: my parcel is late and I was charged twice" for i in range(args.rows)]
        table = pa.table({"text": states})
        judge = tn.create_classifier(base_url=f"{root}/v1", model="jev-1.13")
        for run in range(args.runs):
            t0 = time.perf_counter()
            asyncio.run(with_sdk(root, states, questions, args.concurrency))
            sdk = args.rows / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            result = judge.evaluate_table(table, questions, state_column="text", concurrency=args.concurrency)
            ours = args.rows / (time.perf_counter() - t0)
            assert result.column("error").null_count == args.rows, result.column("error")[0]
            print(f"run {run}: SDK async {sdk:.0f} rows/s, evaluate_table {ours:.0f} rows/s, ratio {ours / sdk:.2f}")


if __name__ == "__main__":
    main()
