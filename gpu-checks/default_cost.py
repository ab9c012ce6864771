"""What kprof's default durations cost, by phase, and what a benchmark leaves behind in the process.

    python3 gpu-checks/default_cost.py split    # the seed sweep three times in one process
    python3 gpu-checks/default_cost.py trace    # a graph replay and an eager chain before/after benchmarks
    python3 gpu-checks/default_cost.py plain    # the seed sweep's work without a profiler (TRUTH row)

Prints one ``COST {json}`` line per measurement (the fixture format of benches/ recordings).
``split``: the first sweep (pays the counter set-up), a second one (the session kept), and a third
after ``kprof.release_counters()`` (what re-enabling costs), each with the counter cost's delta.
``trace``: CUDA events around 20 replays of a 60-kernel graph (one stream) and around a 60-kernel
eager chain, before any benchmark, after one with ``duration_source="records"``, after one in
default settings, and after ``kprof.release_counters()``.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import warnings

import torch

# The seed sweep's sizes and work, as the truth check runs them (gpu_check_truth_sweep.py, beside this file).
from gpu_check_truth_sweep import SWEEP, seed_matmul, sweep_plain  # noqa: E402


def emit(**kw: object) -> None:
    print("COST " + json.dumps(kw), flush=True)


def cost() -> dict[str, float]:
    import kprof

    return dict(kprof._core.counter_cost()) if hasattr(kprof._core, "counter_cost") else {}


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {k: round(v - before.get(k, 0.0), 4) for k, v in after.items()}


def split(source: str | None = None) -> None:
    import kprof

    extra = {"duration_source": source} if source else {}

    @kprof.analyze.kernel(configs=[(n,) for n in SWEEP], runs=10, thermal_mode="off", verbosity=0, **extra)
    def matmul(n: int) -> None:
        seed_matmul(n, kprof.annotate)

    rows = []
    for label in ("first", "second", "after_pause", "after_release"):
        if label == "after_pause":
            kprof._core.pause_counters()
        if label == "after_release":
            kprof.release_counters()
        c0 = cost()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = matmul().to_dataframe()
        wall = time.perf_counter() - t0
        rows.append({"sweep": label, "wall_s": round(wall, 4), "avg_ns": [float(v) for v in df["AvgValue"]],
                     "sources": sorted(set(map(str, df.get("DurationSource", [])))), "cost": delta(cost(), c0)})
    emit(part="split", source=source or "auto", one_pass=os.environ.get("KPROF_ONE_PASS", "on"), rows=rows)


def graph_and_chain() -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    x = torch.ones(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            for _ in range(60):
                x.mul_(1.0001)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(60):
            x.mul_(1.0001)
    return g, x


def events_us(fn, reps: int = 20, rounds: int = 7) -> float:
    """Median over rounds of the per-rep GPU time of ``fn`` by CUDA events."""
    vals = []
    for _ in range(rounds):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        e0.record()
        for _ in range(reps):
            fn()
        e1.record()
        e1.synchronize()
        vals.append(e0.elapsed_time(e1) * 1e3 / reps)
    return statistics.median(vals)


def trace() -> None:
    g, x = graph_and_chain()

    def chain() -> None:
        for _ in range(60):
            x.mul_(1.0001)

    def now() -> dict[str, float]:
        return {"graph_us": round(events_us(g.replay), 2), "chain_us": round(events_us(chain, reps=5), 2)}

    out = {"before": now()}
    import kprof

    def bench(**kw: object) -> float:
        @kprof.analyze.kernel(configs=[(1,)], runs=5, thermal_mode="off", verbosity=0, **kw)
        def b(n: int) -> None:
            with kprof.annotate("r"):
                x.mul_(1.0001)

        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b()
        return round(time.perf_counter() - t0, 4)

    out["records_bench_s"] = bench(duration_source="records")
    out["after_records"] = now()
    out["auto_bench_s"] = bench()
    out["after_auto"] = now()
    kprof._core.pause_counters()
    out["after_pause"] = now()
    out["auto_bench2_s"] = bench()
    out["after_auto2"] = now()
    kprof._core.pause_counters()
    out["after_pause2"] = now()
    kprof.release_counters()
    out["after_release"] = now()
    emit(part="trace", **out)


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "split"
    if what == "split":
        split(sys.argv[2] if len(sys.argv) > 2 else None)
    elif what == "plain":
        sweep_plain()
    elif what == "trace":
        trace()
    else:
        sys.exit(f"unknown part {what!r}: split, plain or trace")
