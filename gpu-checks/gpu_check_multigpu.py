"""The multi-GPU sweep on a machine with two or more GPUs: the sharded sweep's throughput and values.

    python gpu-checks/gpu_check_multigpu.py OUT

The seed's sweep extended to 64 configurations (fp32 matmul, n = 512..8192 in 64 linear steps,
10 runs each, the default cold L2 and durations), measured
  * ``one``: on one worker (``devices=[0]``), the single-GPU reference;
  * ``all``: on every visible GPU (``devices="all"``);
  * ``kill``: on every GPU, one worker SIGKILLing itself inside a region at n = 5388 once (its
    configurations must be retried on another GPU, nothing finished lost, the table complete).
Checks: the speed-up ``one`` / ``all`` (>= 1.8x on 2 GPUs, >= 3.5x on 4; other counts printed);
every row labelled with its GPU (``Device``, ``DeviceUUID``), one UUID per device; per
configuration the median on its GPU within 1 % of ``one`` (same chip model); ``kill``: 64 rows of
10 runs, no failure, the worker really died. Prints a table and writes OUT/summary-multigpu.json
and every result's CSVs under OUT/multigpu/. On one GPU it is a dry run (``all`` = one worker):
the speed-up is not judged. The functions travel to the workers by name (they are at the top of
this file, which the workers run again); nothing here changes a GPU setting.
"""

from __future__ import annotations

import os
import sys
import time

import torch  # first, on purpose: kprof has no import-order rule

import kprof
import scaleout_work  # gpu-checks/ is sys.path[0]

SIZES = [round(512 + i * (8192 - 512) / 63) for i in range(64)]
RUNS = 10
SILENT = kprof.VerbosityLevel.SILENT
MEDIAN_PCT = 1.0
TARGET = {2: 1.8, 4: 3.5}


# The workers' functions are defined here (their body is scaleout_work's): without cloudpickle
# they travel by name, and the workers look for their kprof wrappers (these settings) at the top
# of the function's own module.
def matmul(n: int) -> None:
    scaleout_work.matmul(n)


def matmul_dies_once(n: int) -> None:
    scaleout_work.matmul(n, kill_at=SIZES[40])


def _options(name: str, **extra) -> dict:
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "multigpu", name) + os.sep
    return dict(configs=SIZES, runs=RUNS, verbosity=SILENT, output_csv=True, output_prefix=out, **extra)


one = kprof.kernel(**_options("one", devices=[0]))(matmul)
every = kprof.kernel(**_options("all", devices="all"))(matmul)
faulty = kprof.kernel(**_options("kill", devices="all"))(matmul_dies_once)


def main() -> int:
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    gpus = torch.cuda.device_count()
    checks: list[tuple[str, bool, str]] = []

    def check(name: str, ok: bool, detail: str = "") -> None:
        checks.append((name, bool(ok), detail))

    walls, frames = {}, {}
    for name, bench in (("one", one), ("all", every)):
        t0 = time.monotonic()
        frames[name] = bench().to_dataframe()
        walls[name] = time.monotonic() - t0
        print(f"{name:5s} {walls[name]:7.1f} s wall", flush=True)
    os.environ["KILL_MARKER"] = os.path.join(out_dir, "killed-once")
    t0 = time.monotonic()
    frames["kill"] = faulty().to_dataframe()
    walls["kill"] = time.monotonic() - t0
    print(f"kill  {walls['kill']:7.1f} s wall (a worker SIGKILLed itself at n={SIZES[40]})", flush=True)

    speedup = walls["one"] / walls["all"]
    target = TARGET.get(gpus)
    detail = f"{gpus} GPU(s): {walls['one']:.1f} s / {walls['all']:.1f} s = {speedup:.2f}x"
    if target is not None:
        check(f"speed-up on {gpus} GPUs >= {target}x", speedup >= target, detail)
    else:
        print(f"INFO: speed-up {detail} (no target for {gpus} GPU(s){'; a dry run' if gpus == 1 else ''})")

    ref, alldf = frames["one"], frames["all"]
    for name in ("one", "all", "kill"):
        df = frames[name]
        check(f"{name}: 64 configurations, {RUNS} runs each, no failure",
              df["n"].tolist() == SIZES and (df["NumRuns"] == RUNS).all() and (df["Failure"] == "").all(),
              f"{len(df)} rows")
        pairs = set(zip(df["Device"], df["DeviceUUID"]))
        check(f"{name}: every row labelled with its GPU, one UUID per device",
              all(str(u).startswith("GPU-") for _, u in pairs) and len({d for d, _ in pairs}) == len(pairs),
              f"{sorted(pairs)}")
    check("all: the sweep ran on every GPU", set(alldf["Device"]) == set(range(gpus)), f"{sorted(set(alldf['Device']))}")
    check("kill: the worker really died once", os.path.exists(os.environ["KILL_MARKER"]))

    worst, table = 0.0, []
    for i, n in enumerate(SIZES):
        r, x = ref.iloc[i], alldf.iloc[i]
        same_chip = r["GPU"] == x["GPU"]
        diff = 100.0 * (float(x.Median) / float(r.Median) - 1.0)
        if same_chip:
            worst = max(worst, abs(diff))
        table.append({"n": n, "one_ns": float(r.Median), "all_ns": float(x.Median), "device": int(x.Device),
                      "diff_pct": diff, "same_chip": bool(same_chip)})
        print(f"{n:>5}  one {float(r.Median):>14,.0f} ns  all {float(x.Median):>14,.0f} ns on GPU {int(x.Device)}  {diff:+6.2f} %")
    check(f"all: per-configuration medians within {MEDIAN_PCT} % of one GPU (same chip)", worst <= MEDIAN_PCT,
          f"largest |diff| {worst:.2f} %")

    summary = {"gpus": gpus, "walls": walls, "speedup": speedup, "target": target, "table": table}
    return scaleout_work.finish("multigpu", checks, os.path.join(out_dir, "summary-multigpu.json"), summary)


if __name__ == "__main__":
    sys.exit(main())
