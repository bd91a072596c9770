"""Ray Data on one machine against in-process evaluate_table, same stub.

Starts `toolnexus serve` on 127.0.0.1 replaying the demo tape (`--match
questions`), then judges N rows in-process and through `toolnexus.ray` on a
local cluster (`ray.init(num_cpus=…)`), alternating, and prints rows/s.

    python benches/ray_vs_inprocess.py --bin target/release/toolnexus --rows 20000 --runs 2
"""

import argparse
import subprocess
import time

import pyarrow as pa
import ray

import toolnexus as tn
from toolnexus.ray import judge_dataset

import stub


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()

    questions = stub.questions()
    with stub.serve(args.bin) as root:
        base = f"{root}/v1"
        table = pa.table({"id": list(range(args.rows)),
                          "text": [f"ticket {i}: my parcel is late" for i in range(args.rows)]})
        ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False)
        ray.data.DataContext.get_current().enable_progress_bars = False
        judge = tn.create_classifier(base_url=base, model="jev-1.13")
        for run in range(args.runs):
            t0 = time.perf_counter()
            judge.evaluate_table(table, questions, state_column="text", concurrency=args.concurrency)
            local = args.rows / (time.perf_counter() - t0)
            t0 = time.perf_counter()
            ds = ray.data.from_arrow(table).repartition(args.cpus * 4)
            out = judge_dataset(ds, questions, state_column="text", base_url=base, model="jev-1.13",
                                actors=args.cpus, concurrency=args.concurrency, batch_size=1000,
                                num_cpus=0.5)
            n = sum(t.num_rows for t in ray.get(out.to_arrow_refs()))
            on_ray = n / (time.perf_counter() - t0)
            assert n == args.rows
            print(f"run {run}: in-process {local:.0f} rows/s, Ray {on_ray:.0f} rows/s, ratio {on_ray / local:.2f}")
        ray.shutdown()


if __name__ == "__main__":
    main()
