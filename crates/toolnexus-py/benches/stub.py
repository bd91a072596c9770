"""What every Python bench here shares: `toolnexus serve` on 127.0.0.1
replaying the library's demo tape (`--match questions`: every state is
answered from the recording), and the tape's questions."""

import contextlib
import json
import pathlib
import re
import subprocess
import threading
from collections.abc import Iterator

ROOT = pathlib.Path(__file__).resolve().parents[3]
TAPE = ROOT / "crates/toolnexus/examples/tapes/demo.tape.json"


def questions() -> dict:
    """The demo tape's `triage` questions, as wire JSON."""
    return json.loads(TAPE.read_text())["calls"]["triage"][0]["questions"]


@contextlib.contextmanager
def serve(binary: str) -> Iterator[str]:
    """Runs serve on a free loopback port and yields its root URL
    (`http://127.0.0.1:PORT`); the library's base URL is that plus `/v1`."""
    proc = subprocess.Popen(
        [binary, "serve", "--style", "tape", "--tape", str(TAPE), "--call", "triage",
         "--match", "questions", "--addr", "127.0.0.1:0"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        port = None
        for line in proc.stdout:
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
                break
        assert port, "serve printed no address"
        # serve logs a line per request: keep its pipe drained.
        threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait()
