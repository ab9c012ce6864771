"""Issue 5 follow-ups on the GPU machine (run by scripts/gpu-check-extra.sh through the installed
wheel): (1) the per-kernel cost of a 3-metric set in application replay, next to kernel and range
replay and ncu, on the same 20 small kernels as scripts/gpu_check_python.py; (2) the fp16 matmul
4096's DRAM bytes over 10 runs in kprof's application replay against 10 repetitions under ncu's
application replay, with the spread of each, to tell a difference from run-to-run variation.

`python3 gpu_check_extra.py --ncu-child {cost|matmul} REPS` is the program ncu profiles."""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
import subprocess
import sys
import time

import torch

COST_KERNELS = 20
M3 = ["dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
      "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
MB2 = ["dram__bytes_read.sum", "dram__bytes_write.sum"]


def child(what: str, reps: int) -> None:
    if what == "cost":
        xs = torch.randn(1 << 20, device="cuda")
        body = [lambda: xs * 2.0] * COST_KERNELS
    else:
        a = torch.randn(4096, 4096, device="cuda").half()
        body = [lambda: a @ a]
    for fn in body:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(reps):
        for fn in body:
            torch.cuda.nvtx.range_push(what)
            fn()
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if len(sys.argv) > 1 and sys.argv[1] == "--ncu-child":
    child(sys.argv[2], int(sys.argv[3]))
    sys.exit(0)

import kprof  # noqa: E402

OUT = sys.argv[1]
NCU = os.environ.get("NCU", "/usr/local/cuda/bin/ncu")
SILENT = kprof.VerbosityLevel.SILENT
out: dict = {}


def run_ncu(args, what, reps):
    cmd = [NCU, "--profile-from-start", "off", "--clock-control", "none", "--cache-control", "all", *args,
           sys.executable, os.path.abspath(__file__), "--ncu-child", what, str(reps)]
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p, time.time() - t


def ncu_values(text, metric):
    lines = [l for l in text.splitlines() if l.startswith('"')]
    rows = [r for r in csv.DictReader(io.StringIO("\n".join(lines))) if r["Metric Name"] == metric]
    return [float(r["Metric Value"].replace(",", "")) for r in rows]


# (1) cost per profiled kernel
xs = torch.randn(1 << 20, device="cuda")


def cost_body():
    with kprof.annotate("cost"):
        for _ in range(COST_KERNELS):
            _ = xs * 2.0


RUNS = 5
timing = kprof.kernel(runs=RUNS, thermal_mode="off", verbosity=SILENT)(cost_body)
timing()
t = time.time(); timing(); t_timing = time.time() - t
p3, t3 = run_ncu(["--metrics", ",".join(M3), "--csv", "--page", "details"], "cost", RUNS)
p0, t0 = run_ncu(["--metrics", ",".join(M3), "--launch-skip", "1000000"], "cost", RUNS)
n3 = len(ncu_values(p3.stdout, M3[0]))
ncu_ms = (t3 - t0) / max(n3, 1) * 1e3
out["cost"] = {"ncu_ms_per_kernel": ncu_ms, "ncu_kernels": n3}
for mode in ("application", "range", "kernel"):
    bench = kprof.kernel(runs=RUNS, metrics=M3, replay_mode=mode, thermal_mode="off", verbosity=SILENT)(cost_body)
    t = time.time(); bench(); t_mode = time.time() - t
    ms = (t_mode - t_timing) / (RUNS * COST_KERNELS) * 1e3
    out["cost"][mode] = {"kprof_ms_per_kernel": ms, "ratio": ncu_ms / ms if ms > 0 else None}
    print(f"cost {mode:<12} kprof {ms:8.2f} ms per kernel vs ncu {ncu_ms:.1f} ms: {ncu_ms / ms:.1f}x cheaper", flush=True)

# (2) fp16 matmul DRAM bytes, 10 runs each
N = 10
A = torch.randn(4096, 4096, device="cuda").half()


def matmul():
    with kprof.annotate("matmul"):
        _ = A @ A


df = kprof.kernel(runs=N, metrics=MB2, replay_mode="application", thermal_mode="off",
                  verbosity=SILENT)(matmul)().raw()
pn, _ = run_ncu(["--replay-mode", "application", "--metrics", ",".join(MB2), "--csv", "--page", "details",
                 "--print-units", "base"], "matmul", N)
out["matmul"] = {}
for m in MB2:
    k = [float(v) for v, mm in zip(df.Value, df.Metric) if mm == m]
    n = ncu_values(pn.stdout, m)
    km, nm = statistics.mean(k), statistics.mean(n)
    ks, ns = statistics.stdev(k), statistics.stdev(n)
    # Welch's t statistic of the difference of the means.
    tstat = (km - nm) / (ks ** 2 / len(k) + ns ** 2 / len(n)) ** 0.5
    out["matmul"][m] = {"kprof": k, "ncu": n}
    print(f"matmul {m}: kprof {km / 1e6:.2f} MB (sd {ks / km * 100:.2f}%, n={len(k)}) vs ncu application "
          f"{nm / 1e6:.2f} MB (sd {ns / nm * 100:.2f}%, n={len(n)}): {(km / nm - 1) * 100:+.2f}%, Welch t {tstat:+.2f}",
          flush=True)
with open(os.path.join(OUT, "extra.json"), "w") as f:
    json.dump(out, f, indent=1)
