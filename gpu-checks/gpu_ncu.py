"""Shared by the GPU-machine scripts that compare kprof with Nsight Compute
(gpu-checks/gpu_check_python.py, gpu-checks/gpu_check_extra.py): running ncu on a child program,
parsing its `--csv --page details` output, and the per-kernel cost of a 3-metric set.

`python3 gpu_ncu.py --ncu-child cost REPS` is the program ncu profiles for the cost measurement:
20 small kernels per repetition inside cudaProfilerStart/Stop, one NVTX range each."""

from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess
import sys
import time

NCU = os.environ.get("NCU") or shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
COST_KERNELS = 20
COST_RUNS = 5
M3 = ["dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed"]


def run_ncu(child, args, what, reps, cache="all"):
    """Runs `python3 CHILD --ncu-child WHAT REPS` under ncu (profiling from cudaProfilerStart,
    clocks untouched, caches flushed before every kernel unless `cache` is "none"); returns the
    process and its wall time."""
    if "kprof" in sys.modules:
        # ncu cannot read the counters while this process's Range Profiler session is open.
        sys.modules["kprof"].release_counters()
    cmd = [NCU, "--profile-from-start", "off", "--clock-control", "none", "--cache-control", cache, *args,
           sys.executable, os.path.abspath(child), "--ncu-child", what, str(reps)]
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, time.time() - t


def ncu_rows(text):
    """{ID: {"name": kernel name (the NVTX range first with --print-nvtx-rename kernel), metric: value}}
    from ncu's `--csv --page details` output (lines that are not CSV rows are ncu's own log)."""
    out: dict = {}
    lines = [line for line in text.splitlines() if line.startswith('"')]
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        v = r["Metric Value"].replace(",", "")
        if v in ("", "n/a"):
            continue
        d = out.setdefault(int(r["ID"]), {"name": r["Kernel Name"]})
        d[r["Metric Name"]] = float(v)
    return out


def cost_child(reps):
    import torch

    xs = torch.randn(1 << 20, device="cuda")
    _ = xs * 2.0
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(reps):
        for i in range(COST_KERNELS):
            torch.cuda.nvtx.range_push(f"cost{i}")
            _ = xs * 2.0
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def measure_cost(kprof, modes=("range", "application", "kernel")):
    """Per profiled kernel, the cost of the 3-metric set M3: kprof in each replay mode (wall time
    of a benchmark with the metrics minus the same benchmark timing only, per kernel; the Range
    Profiler's set-up at every benchmark is part of it) against ncu (wall time with the metrics
    minus ncu on the same program profiling nothing, per kernel: ncu's start-up excluded)."""
    import torch

    xs = torch.randn(1 << 20, device="cuda")
    silent = kprof.VerbosityLevel.SILENT

    def cost_body():
        with kprof.annotate("cost"):
            for _ in range(COST_KERNELS):
                _ = xs * 2.0

    timing = kprof.kernel(runs=COST_RUNS, thermal_mode="off", verbosity=silent)(cost_body)
    timing()  # warm: libraries
    t = time.time()
    timing()
    t_timing = time.time() - t
    p3, t3 = run_ncu(__file__, ["--metrics", ",".join(M3), "--csv", "--page", "details"], "cost", COST_RUNS)
    p0, t0 = run_ncu(__file__, ["--metrics", ",".join(M3), "--launch-skip", "1000000"], "cost", COST_RUNS)
    n3 = len(ncu_rows(p3.stdout))
    ncu_ms = (t3 - t0) / max(n3, 1) * 1e3
    out = {"ncu_ms_per_kernel": ncu_ms, "ncu_kernels": n3, "ncu_wall_s": t3, "ncu_nothing_wall_s": t0,
           "kprof_wall_timing_s": t_timing}
    for mode in modes:
        bench = kprof.kernel(runs=COST_RUNS, metrics=M3, replay_mode=mode, thermal_mode="off", verbosity=silent)(cost_body)
        t = time.time()
        bench()
        t_mode = time.time() - t
        ms = (t_mode - t_timing) / (COST_RUNS * COST_KERNELS) * 1e3
        out[mode] = {"kprof_ms_per_kernel": ms, "ratio": ncu_ms / ms if ms > 0 else None, "kprof_wall_counters_s": t_mode}
    return out


if __name__ == "__main__" and len(sys.argv) > 3 and sys.argv[1] == "--ncu-child":
    cost_child(int(sys.argv[3]))
