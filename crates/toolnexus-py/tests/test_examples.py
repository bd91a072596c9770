"""The seed's three examples in Python print what the Rust ones print."""

import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"

# What the Rust examples print (crates/toolnexus/examples/), checked against
# the built Rust binaries themselves when TOOLNEXUS_RUST_EXAMPLES names their
# directory (CI: target/debug/examples after `cargo test --all-targets`).
RUST_PRINTS = {
    "smallest_call": 'ok: score=1.21 confidence=0.71 levels=["harmless", "reversible", "destructive"]\n',
    "full_surface": "ok: choice=billing near_uniform=true calibrated=false cost=not reported by this backend\n",
    "near_uniform_boundary": "ok: tolerance 0.05 inclusive, five cases agree\n",
}


@pytest.mark.parametrize("name", sorted(RUST_PRINTS))
def test_each_example_prints_what_the_rust_one_prints(name):
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / f"{name}.py")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    want = RUST_PRINTS[name]
    rust_dir = os.environ.get("TOOLNEXUS_RUST_EXAMPLES")
    if rust_dir:
        rust = subprocess.run([str(pathlib.Path(rust_dir) / name)], capture_output=True, text=True, timeout=60)
        assert rust.returncode == 0, rust.stderr
        want = rust.stdout
    assert out.stdout == want
