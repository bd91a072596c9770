#!/usr/bin/env python3
"""Writes crates/toolnexus/tests/fixtures/assess/mcnemar-exact.tsv, SciPy's exact
two-sided McNemar p-values that `assess compare` is held to (the unit test
`mcnemar_matches_scipy` in crates/toolnexus/src/assess/compare.rs).

For b (rows only A got right) and c (rows only B got right) from 0 to 40 each,
the p-value is scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue (1 when
b + c = 0). The file is checked in, so the tests and CI need no Python. To
regenerate it:

    python3 -m venv /tmp/mcn && /tmp/mcn/bin/pip install scipy && /tmp/mcn/bin/python scripts/mcnemar-fixture.py
"""

import pathlib

import scipy
from scipy.stats import binomtest

OUT = pathlib.Path(__file__).resolve().parent.parent / "crates/toolnexus/tests/fixtures/assess/mcnemar-exact.tsv"

lines = [
    "# Exact two-sided McNemar p-values: scipy.stats.binomtest(min(b, c), b + c, 0.5).pvalue",
    f"# (1 when b + c = 0), SciPy {scipy.__version__}, written by scripts/mcnemar-fixture.py.",
    "# b\tc\tp",
]
for b in range(41):
    for c in range(41):
        p = 1.0 if b + c == 0 else binomtest(min(b, c), b + c, 0.5).pvalue
        lines.append(f"{b}\t{c}\t{float(p)!r}")
OUT.write_text("\n".join(lines) + "\n")
print(f"wrote {OUT} ({len(lines) - 3} rows)")
