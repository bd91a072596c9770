"""Spark's `mapInArrow` with toolnexus against in-process evaluate_table, same
stub, same sitting: the README's Spark code, run on a local session.

Starts `toolnexus serve` on 127.0.0.1 replaying the demo tape, writes N rows to
a Parquet file, then judges them in-process and with
`df.mapInArrow(judge_batches, schema)` on `local[--cores]`, alternating, and
prints rows/s. Needs `pyspark` (4.0 or later) and a Java runtime; not run by CI.

    python benches/spark_map_in_arrow.py --bin target/release/toolnexus --rows 20000 --runs 2
"""

import argparse
import os
import pathlib
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import SparkSession

import toolnexus as tn

import stub


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rows", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    # Spark's Python workers run this interpreter, the one with toolnexus installed.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    questions = stub.questions()
    with stub.serve(args.bin) as root, tempfile.TemporaryDirectory() as d:
        base = f"{root}/v1"
        table = pa.table({"id": list(range(args.rows)),
                          "text": [f"ticket {i}: my parcel is late" for i in range(args.rows)]})
        src = pathlib.Path(d) / "tickets.parquet"
        pq.write_table(table, src)
        spark = (SparkSession.builder.master(f"local[{args.cores}]")
                 .config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        concurrency = args.concurrency

        def judge_batches(batches):
            judge = tn.create_classifier(base_url=base, model="jev-1.13")  # once per task
            for batch in batches:
                yield judge.evaluate_table(batch, questions, state_column="text", concurrency=concurrency)

        df = spark.read.parquet(str(src)).repartition(args.cores * 2)
        sample = judge_batches(iter(df.limit(1).toArrow().to_batches()))
        schema = spark.createDataFrame(next(sample).to_pandas()).schema
        judge = tn.create_classifier(base_url=base, model="jev-1.13")
        for run in range(args.runs):
            t0 = time.perf_counter()
            judge.evaluate_table(table, questions, state_column="text", concurrency=args.concurrency)
            local = args.rows / (time.perf_counter() - t0)
            out = pathlib.Path(d) / f"judged{run}.parquet"
            t0 = time.perf_counter()
            df.mapInArrow(judge_batches, schema).write.parquet(str(out))
            on_spark = args.rows / (time.perf_counter() - t0)
            n = pq.read_table(out).num_rows
            assert n == args.rows, n
            print(f"run {run}: in-process {local:.0f} rows/s, Spark mapInArrow {on_spark:.0f} rows/s, "
                  f"ratio {on_spark / local:.2f}")
        spark.stop()


if __name__ == "__main__":
    main()
