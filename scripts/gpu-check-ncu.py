"""Issue 6's checks on the H200: backend="ncu" (relaunch mode) through the installed kprof package.
Run by scripts/gpu-check-ncu.sh (part `ncubackend` of scripts/gpu-check-all.sh):

    OUT=dir PYTHONPATH=/tmp/kprof-site /opt/torch/.venv/bin/python3 scripts/gpu-check-ncu.py OUT

Every backend="ncu" call re-runs this script under ncu; in that child only the selected function
runs, every other kprof function returns empty results, and the checks below run only in the
parent. Prints one line per check and writes OUT/ncu-backend-summary.json (small files only).

Checks:
  a  seed step 2 (fp32 2048 matmul) and a bandwidth kernel (y = x * 2, 256 MB): ncu (cache all,
     clock none) vs CUPTI (cold): medians within 2%
  b  seed step 4 under ncu: cache all/none x clock none on 1 MB and 64 MB x * 2: warm faster
     than cold at 1 MB, equal within noise (5%) at 64 MB
  c  the .ncu-rep of (a) is kept and `kprof import` of it reproduces the same values
  d  a 5-size cuBLAS sweep (512..8192) with varying kernel counts works
  e  wall time of the seed's matmul sweep (1024/2048/4096 x 10 runs) under ncu (INFO; vs
     nsight-python 0.9.6's 8.1 s on this machine)
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import kprof

OUT = os.path.abspath(sys.argv[1])
PARENT = not os.environ.get("KPROF_NCU_CHILD")
os.makedirs(OUT, exist_ok=True)
PREFIX = os.path.join(OUT, "ncu-")  # reports, logs and CSVs go here (the .ncu-rep stay on the machine)
summary: dict = {"checks": [], "numbers": {}}


def check(name, ok, detail):
    summary["checks"].append({"name": name, "ok": ok, "detail": detail})
    print(f"[{name}] {'PASS' if ok else ('INFO' if ok is None else 'FAIL')}: {detail}", flush=True)


def medians(results, key=("Annotation",)):
    """Median value per (annotation, param...) of the results' raw rows."""
    cols = results.raw_columns()
    groups: dict = {}
    for i in range(len(cols["Value"])):
        k = tuple(cols[c][i] for c in key)
        groups.setdefault(k, []).append(cols["Value"][i])
    return {k: statistics.median(v) for k, v in groups.items()}


_tensors: dict = {}


def tensors(kind, n):
    """Inputs made once per process, outside any timed region."""
    if (kind, n) not in _tensors:
        if kind == "mm":
            _tensors[(kind, n)] = (torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda"))
        else:  # n bytes of fp32 for x * 2
            x = torch.randn(n // 4, device="cuda")
            _tensors[(kind, n)] = (x, torch.empty_like(x))
    return _tensors[(kind, n)]


def step2_body():
    a, b = tensors("mm", 2048)
    with kprof.annotate("matmul"):
        torch.matmul(a, b)
    x, y = tensors("bw", 256 << 20)
    with kprof.annotate("bandwidth"):
        torch.mul(x, 2, out=y)


step2_ncu = kprof.analyze.kernel(runs=10, backend="ncu", cache_control="all", clock_control="none", output_prefix=PREFIX)(
    step2_body
)
step2_cupti = kprof.analyze.kernel(runs=10, backend="cupti", cache_control="all")(step2_body)


def x_times_2(nbytes):
    x, y = tensors("bw", nbytes)
    with kprof.annotate("x2"):
        torch.mul(x, 2, out=y)


SIZES = [1 << 20, 64 << 20]
step4_cold = kprof.analyze.kernel(configs=[(s,) for s in SIZES], runs=10, backend="ncu", cache_control="all", output_prefix=PREFIX)(x_times_2)
step4_warm = kprof.analyze.kernel(configs=[(s,) for s in SIZES], runs=10, backend="ncu", cache_control="none", output_prefix=PREFIX)(x_times_2)


def matmul(n):
    a, b = tensors("mm", n)
    with kprof.annotate("matmul"):
        torch.matmul(a, b)


sweep5 = kprof.analyze.kernel(configs=[(n,) for n in (512, 1024, 2048, 4096, 8192)], runs=5, backend="ncu", output_prefix=PREFIX)(matmul)
seed_sweep = kprof.analyze.kernel(configs=[(n,) for n in (1024, 2048, 4096)], runs=10, backend="ncu", output_prefix=PREFIX)(matmul)

t0 = time.time()
# (a) step 2 and a bandwidth kernel: ncu vs CUPTI (both cold)
r_ncu = step2_ncu()
if PARENT:
    r_cupti = step2_cupti()
    m_ncu, m_cupti = medians(r_ncu), medians(r_cupti)
    for region in ("matmul", "bandwidth"):
        a, b = m_ncu[(region,)], m_cupti[(region,)]
        summary["numbers"][f"a_{region}"] = {"ncu_ns": a, "cupti_ns": b}
        check(f"a {region}", abs(a / b - 1) < 0.02, f"ncu {a:.0f} ns vs CUPTI {b:.0f} ns ({100 * (a / b - 1):+.2f}%)")

# (b) step 4 under ncu
r_cold = step4_cold()
r_warm = step4_warm()
if PARENT:
    cold, warm = medians(r_cold, ("nbytes",)), medians(r_warm, ("nbytes",))
    summary["numbers"]["b"] = {str(s): {"cold_ns": cold[(s,)], "warm_ns": warm[(s,)]} for s in SIZES}
    c1, w1 = cold[(SIZES[0],)], warm[(SIZES[0],)]
    c64, w64 = cold[(SIZES[1],)], warm[(SIZES[1],)]
    check("b 1MB warm<cold", w1 < 0.9 * c1, f"warm {w1:.0f} ns, cold {c1:.0f} ns")
    check("b 64MB equal", abs(w64 / c64 - 1) < 0.05, f"warm {w64:.0f} ns, cold {c64:.0f} ns ({100 * (w64 / c64 - 1):+.2f}%)")

# (c) the .ncu-rep of (a) is kept; `kprof import` reproduces its values
if PARENT:
    reps = sorted(f for f in os.listdir(OUT) if f.endswith(".ncu-rep") and "step2_body" in f)
    check("c report kept", len(reps) == 1, f"{reps}")
    if reps:
        rep = os.path.join(OUT, reps[0])
        raw_csv = os.path.join(OUT, "import-step2-raw.csv")
        p = subprocess.run(
            [sys.executable, "-c", "import sys, kprof.cli; sys.exit(kprof.cli.main(sys.argv))", "import", rep,
             "--raw", raw_csv, "-o", os.path.join(OUT, "import-step2-processed.csv"), "--metrics", "gpu__time_duration.sum"],
            capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "KPROF_NCU_CHILD"},
        )
        ok = p.returncode == 0
        if ok:
            with open(raw_csv) as f:
                imported = sorted(float(r["Value"]) for r in csv.DictReader(f))
            ours = sorted(float(v) for v in r_ncu.raw_columns()["Value"])
            same = len(imported) == len(ours) and all(abs(a - b) <= 1e-9 * max(1, abs(b)) for a, b in zip(imported, ours))
            check("c import reproduces", same, f"{len(imported)} imported values vs {len(ours)} from the backend")
        else:
            check("c import reproduces", False, f"kprof import exit {p.returncode}: {(p.stdout + p.stderr)[-800:]}")

# (d) 5-size cuBLAS sweep
t = time.time()
r5 = sweep5()
if PARENT:
    cols = r5.raw_columns()
    per = {}
    for n, v, k in zip(cols["n"], cols["Value"], cols["Kernel"]):
        per.setdefault(n, {"values": [], "kernels": set()})
        per[n]["values"].append(v)
        per[n]["kernels"].add(k.count("|") + 1 if k else 0)
    ok = sorted(per) == [512, 1024, 2048, 4096, 8192] and all(
        len(p["values"]) == 5 and all(v == v and v > 0 for v in p["values"]) for p in per.values()
    )
    detail = ", ".join(f"{n}: {statistics.median(p['values']) / 1e3:.1f} us, kernels/run {sorted(p['kernels'])}" for n, p in sorted(per.items()))
    summary["numbers"]["d"] = {str(n): {"median_ns": statistics.median(p["values"]), "kernels": sorted(p["kernels"])} for n, p in per.items()}
    check("d 5-size sweep", ok, f"{detail} ({time.time() - t:.1f} s)")

# (e) wall time of the seed's matmul sweep under ncu
t = time.time()
r_seed = seed_sweep()
if PARENT:
    wall = time.time() - t
    summary["numbers"]["e_wall_s"] = wall
    n_rows = len(r_seed.raw_columns()["Value"])
    check("e seed sweep wall", None, f"{wall:.1f} s for {n_rows} samples (nsight-python 0.9.6: 8.1 s on this machine)")

if PARENT:
    summary["total_s"] = time.time() - t0
    with open(os.path.join(OUT, "ncu-backend-summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    failed = [c["name"] for c in summary["checks"] if c["ok"] is False]
    print(f"ncu backend checks: {'FAIL ' + str(failed) if failed else 'PASS'} in {summary['total_s']:.0f} s", flush=True)
    sys.exit(1 if failed else 0)
