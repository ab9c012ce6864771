"""A sweep of many small kernels: 2,000 configurations x 5 runs x 2 regions (an in-place multiply and
an add on 64K floats) under kprof in default settings, against the same loop without a profiler
in the same process, on a GPU machine. The target: at least 10,000 samples per second.

    python3 benches/small_kernels.py [--configs N] [--source SOURCE]...

Prints one ``BENCH {json}`` line per measurement (the plain loop; kprof's default; each
``duration_source`` named) with its wall time and samples per second, and for kprof where each
timing run's host time went (``kprof._core.counter_cost()``: cache flush, run conditions, the
closure, the synchronisation, the records' flushes), then a table.
``--from-log LOG`` reports on a recorded log instead of running anything.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import bench_log

TARGET = 10_000.0  # samples per second


def run(n_configs: int, sources: list[str], option_sets: list[str]) -> list[dict]:
    import torch

    x = torch.ones(1 << 16, device="cuda")
    y = torch.ones(1 << 16, device="cuda")

    def plain() -> float:
        t0 = time.perf_counter()
        for _ in range(n_configs):
            for _ in range(6):  # kprof's warm-up run and its 5 recorded runs
                x.mul_(1.0001)
                y.add_(1.0)
                torch.cuda.synchronize()
        return time.perf_counter() - t0

    plain()
    rows: list[dict] = [{"tool": "plain", "wall_s": plain()}]
    import kprof

    for tool, extra in bench_log.kprof_variants(sources, option_sets):

        @kprof.analyze.kernel(configs=[(i,) for i in range(n_configs)], runs=5, thermal_mode="off", verbosity=0,
                              **extra)
        def many(i: int) -> None:
            with kprof.annotate("mul"):
                x.mul_(1.0001)
            with kprof.annotate("add"):
                y.add_(1.0)

        before = dict(kprof._core.counter_cost())
        wall, _ = bench_log.quiet_wall(many)
        after = dict(kprof._core.counter_cost())
        rows.append({"tool": tool, "wall_s": wall, "cost": {k: v - before.get(k, 0.0) for k, v in after.items()}})
    samples = n_configs * 5 * 2
    for r in rows:
        r.update(samples=samples, samples_per_s=samples / r["wall_s"], gpu=torch.cuda.get_device_name(),
                 one_pass=os.environ.get("KPROF_ONE_PASS", "on"))
        bench_log.emit(r)
    return rows


def report(rows: list[dict]) -> str:
    out = [f"{'tool':<16} {'wall s':>8} {'samples/s':>10}"]
    out += [f"{r['tool']:<16} {r['wall_s']:>8.3f} {r['samples_per_s']:>10,.0f}" for r in rows]
    for r in rows:
        c = r.get("cost") or {}
        if c.get("timing_runs"):
            per_run_us = {k: 1e6 * c.get(k, 0.0) / c["timing_runs"]
                          for k in ("run_l2_flush_s", "run_conditions_s", "run_closure_s", "run_sync_s")}
            out.append(f"{r['tool']}: {c['timing_runs']:.0f} timing runs, per run: cache flush "
                       f"{per_run_us['run_l2_flush_s']:.0f} us, conditions {per_run_us['run_conditions_s']:.0f} us, "
                       f"closure {per_run_us['run_closure_s']:.0f} us, sync {per_run_us['run_sync_s']:.0f} us; "
                       f"{c.get('records_flushes', 0):.0f} records flushes {c.get('records_flush_s', 0.0):.3f} s; "
                       + bench_log.counter_passes(c))
    default = next((r for r in rows if r["tool"] == "kprof"), None)
    if default:
        met = "met" if default["samples_per_s"] >= TARGET else "not met"
        out.append(f"kprof (default): {default['samples_per_s']:,.0f} samples/s (target {TARGET:,.0f}: {met})")
        out.append(f"GPU: {default.get('gpu', '?')}")
    return "\n".join(out)


def add_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--configs", type=int, default=2000)
    bench_log.add_source_option(ap)


if __name__ == "__main__":
    sys.exit(bench_log.main(__doc__, lambda a: run(a.configs, a.source, a.options), report, add_args))
