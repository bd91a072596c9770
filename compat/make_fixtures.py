"""Regenerates `fixtures/sdk.tape.json`: each case of `cases.py` is sent through
the official SDK to the stand-in upstream (to capture the exact wire the SDK
writes), then recorded with `toolnexus tape record` against the same upstream.

    python compat/make_fixtures.py --bin target/debug/toolnexus

Hermetic: the upstream listens on 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CALL, CASES, MODEL  # noqa: E402
from upstream import Upstream  # noqa: E402

from typesafe_sdk import RetryPolicy, TypeSafeClient  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(HERE.parent / "target" / "debug" / "toolnexus"))
    parser.add_argument("--out", default=str(HERE / "fixtures" / "sdk.tape.json"))
    args = parser.parse_args()
    out = Path(args.out)
    if out.exists():
        out.unlink()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TYPESAFE_")}
    with Upstream() as up, tempfile.TemporaryDirectory() as tmp, TypeSafeClient(
        api_key="sk-fixture", base_url=up.root, compression=False, retry=RetryPolicy(max_retries=0)
    ) as client:
        for c in CASES:
            client.system_one(state=c.state, questions=c.questions, model=MODEL, **c.extra)
            sent = up.seen[-1]["json"]
            qfile = Path(tmp) / f"{c.name}.questions.json"
            sfile = Path(tmp) / f"{c.name}.state.json"
            qfile.write_text(json.dumps(sent["questions"]))
            sfile.write_text(json.dumps(sent["state"]))
            subprocess.run(
                [
                    args.bin, "tape", "record", "--tape", str(out), "--call", CALL,
                    "--questions", str(qfile), "--state", str(sfile),
                    "--style", "systemone", "--base-url", f"{up.root}/v1", "--model", MODEL,
                    "--note", "the official SDK's requests for compat/cases.py, answered by compat/upstream.py",
                ],
                check=True,
                env=env,
                stdout=subprocess.DEVNULL,
            )
            print(f"recorded {c.name}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
