#!/usr/bin/env bash
# Builds and runs every fuzz target for a fixed number of iterations and fails
# on the first crash, panic, leak report or timeout.
#
#   fuzz/run.sh              # RUNS iterations per target (default 200000)
#   RUNS=1000000 fuzz/run.sh
#   fuzz/run.sh decision tape   # only these targets
#
# Toolchain: only stable Rust is needed. cargo-fuzz passes nightly-only flags,
# so the script sets RUSTC_BOOTSTRAP=1 (lets stable rustc accept them) and uses
# `--sanitizer none` (AddressSanitizer needs a nightly standard library; the
# code under test is `forbid(unsafe_code)`, so the fuzzer looks for panics,
# failed assertions, hangs and runaway memory, which need no sanitizer).
# Builds are cargo-fuzz's default: optimised, with debug assertions and
# overflow checks on.
#
# The checked-in seeds under fuzz/corpus/<target>/ are read but never written:
# new inputs go to a scratch corpus under fuzz/work/ (git-ignored). A crash
# leaves its input in fuzz/artifacts/<target>/ and the script exits non-zero.
set -euo pipefail

cd "$(dirname "$0")"
RUNS="${RUNS:-200000}"
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
    TARGETS=(decision question tape llm_reply canonical_json)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi

export RUSTC_BOOTSTRAP=1
FLAGS=(--sanitizer none)

for t in "${TARGETS[@]}"; do
    cargo fuzz build "${FLAGS[@]}" "$t"
done

mkdir -p work
for t in "${TARGETS[@]}"; do
    scratch="work/$t"
    rm -rf "$scratch"
    mkdir -p "$scratch"
    echo "== $t: $RUNS runs"
    # -runs: fixed iteration count; -timeout: a single input over 10 s is a hang;
    # -rss_limit_mb: memory cap; -max_len: inputs up to 64 KiB;
    # -print_final_stats: the executed-units count recorded in RELIABILITY.md.
    status=0
    cargo fuzz run "${FLAGS[@]}" "$t" "$scratch" "corpus/$t" -- \
        -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 >"work/$t.log" 2>&1 || status=$?
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb|Done |==[0-9]+== ERROR|thread .* panicked|SUMMARY)" \
        "work/$t.log" || true
    if [ "$status" -ne 0 ]; then
        echo "!! $t: crashed (exit $status; see fuzz/work/$t.log and fuzz/artifacts/$t/)" >&2
        exit 1
    fi
done
echo "all targets ran $RUNS iterations with no crash"
