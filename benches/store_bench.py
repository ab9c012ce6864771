#!/usr/bin/env python3
"""Benchmark of the results store (the results store); not a test. Prints ratios, best of 3 each:

1. `kprof store add` of a 2,000,000-sample raw CSV into a new store, against `kprof summarize`
   of the same file (target: the insert takes at most 2x the summarize);
2. `kprof history` over a store of 10,000 runs (one commit each, 5 series of 10 samples),
   filled through the Rust API by `crates/kprof-store/examples/fill_store.rs` (target: < 1 s).

The CSV has the columns of the recorded H200 file
tests/fixtures/h200-python-tutorial-steps/sgemm-raw.csv (24 columns: nsight-python's, the run conditions, `n`, `Benchmark`, `Run`): 2,000 configurations
x 1,000 runs, its rows cycled with their values scaled.

    python3 benches/store_bench.py            # builds the release binaries first
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KPROF = os.path.join(ROOT, "target", "release", "kprof")
FILL = os.path.join(ROOT, "target", "release", "examples", "fill_store")
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "h200-python-tutorial-steps", "sgemm-raw.csv")
CONFIGS = 2_000
RUNS = 1_000
HISTORY_RUNS = 10_000


def build():
    for args in (["-p", "kprof-cli", "--bin", "kprof"], ["-p", "kprof-store", "--example", "fill_store"]):
        subprocess.run(["cargo", "build", "--release", "-q", *args], cwd=ROOT, check=True)


def make_csv(path):
    with open(FIXTURE, newline="") as f:
        rows = list(csv.DictReader(f))
        fields = list(rows[0].keys())
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(fields)
        vi, ni, ri, ei = fields.index("Value"), fields.index("n"), fields.index("Run"), fields.index("EnergyMilliJ")
        templates = [[r[k] for k in fields] for r in rows]
        for c in range(CONFIGS):
            for run in range(RUNS):
                t = list(templates[(c * 7 + run) % len(templates)])
                t[vi] = repr(float(t[vi]) * (1.0 + (run % 97) / 1000.0))
                t[ni] = str(c)
                t[ri] = str(run)
                t[ei] = repr(float(t[ei]) + run * 0.001)
                w.writerow(t)
    return CONFIGS * RUNS


def best_of(n, cmd, before=None):
    best = float("inf")
    for _ in range(n):
        if before:
            before()
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - t)
    return best


def bench_insert(work):
    big = os.path.join(work, "big.csv")
    t = time.perf_counter()
    n = make_csv(big)
    print("generated %s: %d samples, %.0f MB, in %.1f s" % (big, n, os.path.getsize(big) / 1e6, time.perf_counter() - t))
    db = os.path.join(work, "bench.db")

    def fresh():
        for ext in ("", "-wal", "-shm"):
            if os.path.exists(db + ext):
                os.remove(db + ext)

    summarize = best_of(3, [KPROF, "summarize", big, "-o", os.path.join(work, "processed.csv")])
    add = best_of(3, [KPROF, "store", "add", big, "--db", db, "--commit", "abcdef12"], before=fresh)
    print("kprof summarize: %.2f s; kprof store add: %.2f s (store %.0f MB)" % (summarize, add, os.path.getsize(db) / 1e6))
    print("RESULT insert_over_summarize=%.2f (target <= 2)" % (add / summarize), flush=True)


def bench_history(work):
    hdb = os.path.join(work, "history.db")
    t = time.perf_counter()
    subprocess.run([FILL, hdb, str(HISTORY_RUNS)], check=True)
    print("filled %d runs in %.1f s" % (HISTORY_RUNS, time.perf_counter() - t))
    history = best_of(3, [KPROF, "history", "--db", hdb])
    one = best_of(3, [KPROF, "history", "--db", hdb, "--series", "n=512,"])
    print("kprof history over %d runs: %.3f s (5 series); one series: %.3f s" % (HISTORY_RUNS, history, one))
    print("RESULT history_seconds=%.3f (target < 1)" % history, flush=True)


def main():
    """Options: --no-build (use the binaries in target/release), --history-only, --insert-only."""
    if "--no-build" not in sys.argv:
        build()
    work = tempfile.mkdtemp(prefix="kprof-store-bench-")
    try:
        if "--history-only" not in sys.argv:
            bench_insert(work)
        if "--insert-only" not in sys.argv:
            bench_history(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
