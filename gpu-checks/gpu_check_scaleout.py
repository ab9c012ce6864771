"""The scale-out's check on the GPU machine (one GPU): scale-out workers against one process.

The seed's 5-size matmul sweep (fp32 ``a @ b``, n = 512..8192, inputs made in the function, 10
runs, cold L2) measured four ways through the installed kprof:

  single   in this process (no scale-out): the reference
  1w       devices=[0]: one worker process
  2w       devices=[0, 0]: two workers sharing GPU 0, configurations from one queue
  2w-split devices=[0, 0], runs_per_task=5: both workers measure every configuration (one row each)

then the same with a worker that kills itself (SIGKILL, inside a region, its CUDA context live) at
n = 2048 once: the configuration must be retried on the other worker and nothing lost.

Prints a table per size (medians, relative differences to ``single``, CI95 overlap), the schema
checks and a verdict; writes OUT/summary-scaleout.json and every result's CSVs under OUT/scaleout/.
Two workers on one GPU take turns on it (one piece at a time, counters given back between them):
the comparison says whether they then measure as one process does. The functions travel to the workers by name
(no cloudpickle on the GPU machine): they are at the top of this file, which the workers run again.

    python gpu-checks/gpu_check_scaleout.py OUT
"""

from __future__ import annotations

import os
import sys
import time

import torch  # noqa: F401  (first, on purpose: kprof has no import-order rule)

import kprof
import scaleout_work  # gpu-checks/ is sys.path[0]

SIZES = [512, 1024, 2048, 4096, 8192]
RUNS = 10
SILENT = kprof.VerbosityLevel.SILENT
NOISE_PCT = 3.0  # medians closer than this, or overlapping CI95s, are "within noise"


def matmul(n: int) -> None:
    scaleout_work.matmul(n)


def matmul_dies_once(n: int) -> None:
    scaleout_work.matmul(n, kill_at=2048)


def _options(name: str, **extra) -> dict:
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "scaleout", name) + os.sep
    return dict(configs=SIZES, runs=RUNS, verbosity=SILENT, output_csv=True, output_prefix=out, **extra)


single = kprof.kernel(**_options("single"))(matmul)
one_worker = kprof.kernel(**_options("1w", devices=[0]))(matmul)
two_workers = kprof.kernel(**_options("2w", devices=[0, 0]))(matmul)
two_workers_split = kprof.kernel(**_options("2w-split", devices=[0, 0], runs_per_task=5))(matmul)
faulty = kprof.kernel(**_options("2w-kill", devices=[0, 0]))(matmul_dies_once)


def timed(bench):
    t0 = time.monotonic()
    results = bench()
    return results, time.monotonic() - t0


def main() -> int:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    checks: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        checks.append((name, bool(ok), detail))

    runs = {}
    for name, bench in (("single", single), ("1w", one_worker), ("2w", two_workers), ("2w-split", two_workers_split)):
        results, wall = timed(bench)
        runs[name] = (results.to_dataframe(), wall)
        print(f"{name:9s} {wall:6.1f} s wall", flush=True)
    os.environ["KILL_MARKER"] = os.path.join(out_dir, "killed-once")
    results, wall = timed(faulty)
    runs["2w-kill"] = (results.to_dataframe(), wall)
    print(f"{'2w-kill':9s} {wall:6.1f} s wall (a worker SIGKILLed itself at n=2048)", flush=True)

    ref = runs["single"][0]
    worker_cols = list(kprof.results.WORKER_COLUMNS)
    uuid = None  # the workers' fingerprints give it
    for name in ("1w", "2w", "2w-split", "2w-kill"):
        df = runs[name][0]
        check(f"{name}: schema = single's + {worker_cols}", list(df.columns) == [*ref.columns, *worker_cols],
              f"{list(df.columns)[-6:]}")
        check(f"{name}: every size, {RUNS} runs, no failure",
              df["n"].tolist() == SIZES and (df["NumRuns"] == RUNS).all() and (df["Failure"] == "").all(),
              f"n {df['n'].tolist()}, NumRuns {df['NumRuns'].tolist()}")
        uuids = set(df["DeviceUUID"])
        uuid = uuid or next(iter(uuids))
        check(f"{name}: Device 0, one GPU UUID ({uuid})", (df["Device"] == 0).all() and uuids == {uuid} and uuid.startswith("GPU-"),
              f"{sorted(uuids)}")
        other_kernels = [n for n, a, b in zip(SIZES, df["Kernel"], ref["Kernel"]) if a != b]
        check(f"{name}: GPU as single", df["GPU"].tolist() == ref["GPU"].tolist(),
              f"{df['GPU'].iloc[0]}; other kernels than single at n = {other_kernels or 'none'}")
    check("2w-kill: the worker really died once", os.path.exists(os.environ["KILL_MARKER"]))

    print()
    header = f"{'n':>5} | {'single median ns':>16} | " + " | ".join(f"{k:>8} ns  diff%  CI" for k in ("1w", "2w", "2w-split", "2w-kill"))
    print(header)
    print("-" * len(header))
    table = {}
    within = {k: True for k in ("1w", "2w", "2w-split", "2w-kill")}
    for i, n in enumerate(SIZES):
        r = ref.iloc[i]
        row = {"single": {"median": float(r.Median), "mean": float(r.AvgValue), "ci": [float(r.CI95_Lower), float(r.CI95_Upper)],
                          "rsd_pct": float(r.RelativeStdDevPct)}}
        cells = []
        for k in within:
            x = runs[k][0].iloc[i]
            diff = 100.0 * (float(x.Median) - float(r.Median)) / float(r.Median)
            overlap = float(x.CI95_Lower) <= float(r.CI95_Upper) and float(r.CI95_Lower) <= float(x.CI95_Upper)
            ok = abs(diff) <= NOISE_PCT or overlap
            within[k] &= ok
            row[k] = {"median": float(x.Median), "mean": float(x.AvgValue), "ci": [float(x.CI95_Lower), float(x.CI95_Upper)],
                      "rsd_pct": float(x.RelativeStdDevPct), "diff_pct": diff, "ci_overlap": overlap, "within_noise": ok}
            cells.append(f"{x.Median:>11,.0f} {diff:+6.2f} {'ov' if overlap else '--'}")
        table[n] = row
        print(f"{n:>5} | {r.Median:>16,.0f} | " + " | ".join(cells))
    print(f"\n(diff%: median vs single; ov: the CI95s overlap; within noise: |diff| <= {NOISE_PCT} % or ov)")
    for k, ok in within.items():
        check(f"{k}: values within noise of single at every size", ok)
    walls = {k: round(v[1], 2) for k, v in runs.items()}
    print(f"wall seconds: {walls}")

    summary = {"table": table, "walls": walls}
    return scaleout_work.finish("scaleout", checks, os.path.join(out_dir, "summary-scaleout.json"), summary)


if __name__ == "__main__":
    sys.exit(main())
