"""The ncu backend's checks on the H200: backend="ncu" (relaunch mode) through the installed kprof package.
Run by gpu-checks/gpu-check-ncu.sh (part `ncubackend` of gpu-checks/run.sh):

    OUT=dir PYTHONPATH=/tmp/kprof-site /opt/torch/.venv/bin/python3 gpu-checks/gpu-check-ncu.py OUT

Every backend="ncu" call re-runs this script under ncu; in that child only the selected function
runs, every other kprof function returns empty results, and the checks below run only in the
parent. Prints one line per check and writes OUT/ncu-backend-summary.json (small files only).

Checks:
  a  seed step 2 (fp32 2048 matmul) and a bandwidth kernel (y = x * 2, 256 MB): ncu (cache all,
     clock none) vs CUPTI (cold): medians within 2%
  b  seed step 4 under ncu: warm (cache none) vs cold (cache all), clock control none, x * 2 on
     1 MB, 64 MB and 1 GiB (far above the 50 MiB L2), in two forms: "seed" (the seed's closure,
     x = torch.randn(n) then x * 2.0 inside the annotation) and "premade" (x and y made once,
     torch.mul(x, 2, out=y); the form of the 2026-11-30 run that measured warm slower than cold).
     Each run collects time, SM clock (gpc__cycles_elapsed.avg.per_second), cycles
     (gpc__cycles_elapsed.max) and DRAM read/write bytes, to decide two hypotheses for warm being
     slower: (i) without a flush L2 holds dirty lines the kernel must write back (warm
     dram__bytes_write above cold), (ii) the SM clock differs between the modes (ncu's flush wakes
     the GPU before the kernel). PASS: at 1 MB warm needs fewer cycles or less time than cold, or
     the measured clock/bytes explain why not (printed); at 1 GiB warm and cold within 3%. 64 MB
     is INFO with the DRAM write bytes and whether (i) holds there (warm writes exceed cold by
     more than 10% of the buffer).
  c  the .ncu-rep of (a) is kept and `kprof import` of it reproduces the same values
  d  a 5-size cuBLAS sweep (512..8192) with varying kernel counts works
  e  wall time of the seed's matmul sweep (1024/2048/4096 x 10 runs) under ncu (INFO; vs
     nsight-python 0.9.6's 8.1 s on this machine)
  f  seed step 6 (fp16 matmul 4096, x * 2 on 256 MB, softmax 8192x1024; inputs made once; medians
     of 10 runs) with time (gpu__time_duration.sum and .max; .max in kprof always from the counter
     pass), SM % and DRAM % of peak and DRAM bytes read, under ncu (kernel and application replay)
     vs CUPTI, both cold. Judged: CUPTI's application replay (per kernel, the function re-run per
     pass with the L2 flushed before every pass) with duration_source="counters" (.sum from the
     counters, as ncu) against ncu's application replay: durations within 2%, bytes read within
     0.5%, percentages within 1 point. INFO: the same with durations from CUPTI's kernel records
     ("application-records"), CUPTI's kernel replay (against ncu's kernel replay; it cannot flush
     between CUPTI's own passes) and range replay (rates over the range's elapsed time)
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


def x_times_2_seed(nbytes):
    """The seed's closure: a fresh randn input, then x * 2.0 (a fresh output) in the annotation."""
    x = torch.randn(nbytes // 4, device="cuda")
    with kprof.annotate("x2"):
        _ = x * 2.0


B_SIZES = [1 << 20, 64 << 20, 1 << 30]
B_METRICS = [
    "gpu__time_duration.sum",
    "gpc__cycles_elapsed.avg.per_second",  # the SM (GPC) clock the kernel ran at
    "gpc__cycles_elapsed.max",  # cycles
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
]
#: The 2026-11-30 run (premade form, time only, 10 runs): medians, ns.
B_PREVIOUS = {"1048576": {"cold_ns": 2688.0, "warm_ns": 2928.0}, "67108864": {"cold_ns": 31264.0, "warm_ns": 33792.0}}


def step4(func, cache):
    return kprof.analyze.kernel(
        configs=[(s,) for s in B_SIZES], runs=10, backend="ncu", cache_control=cache, clock_control="none",
        metrics=B_METRICS, output_prefix=PREFIX,
    )(func)


step4_runs = {
    ("seed", "cold"): step4(x_times_2_seed, "all"),
    ("seed", "warm"): step4(x_times_2_seed, "none"),
    ("premade", "cold"): step4(x_times_2, "all"),
    ("premade", "warm"): step4(x_times_2, "none"),
}


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

# (b) seed step 4 under ncu
def to_hz(value, unit):
    """A clock value in Hz from ncu's unit (base units print cycle/nsecond or similar)."""
    u = (unit or "").lower().replace(" ", "")
    for suffix, f in (("/nsecond", 1e9), ("/ns", 1e9), ("/usecond", 1e6), ("/us", 1e6), ("/msecond", 1e3), ("/ms", 1e3),
                      ("ghz", 1e9), ("mhz", 1e6), ("khz", 1e3)):
        if u.endswith(suffix):
            return value * f
    return value


def step4_numbers(results):
    """{size: {metric: median}} plus the SM clock in MHz, and {metric: unit}."""
    cols = results.raw_columns()
    units = {}
    for m, u in zip(cols["Metric"], cols["Unit"]):
        units.setdefault(m, u)
    med = medians(results, ("Metric", "nbytes"))
    out = {}
    for s in B_SIZES:
        d = {m: med.get((m, s)) for m in B_METRICS}
        hz = d["gpc__cycles_elapsed.avg.per_second"]
        d["sm_clock_mhz"] = None if hz is None else to_hz(hz, units.get("gpc__cycles_elapsed.avg.per_second")) / 1e6
        out[str(s)] = d
    return out, units


def step4_checks(form, nums):
    """The PASS/INFO lines of check b for one form; returns the hypothesis verdicts."""
    T, CYC, RD, WR = "gpu__time_duration.sum", "gpc__cycles_elapsed.max", "dram__bytes_read.sum", "dram__bytes_write.sum"

    def line(s):
        c, w = nums[str(s)]["cold"], nums[str(s)]["warm"]
        return c, w, (
            f"warm {w[T]:.0f} ns / {w[CYC]:.0f} cyc / {w['sm_clock_mhz']:.0f} MHz / DRAM rd {w[RD] / 1e6:.2f} wr {w[WR] / 1e6:.2f} MB; "
            f"cold {c[T]:.0f} ns / {c[CYC]:.0f} cyc / {c['sm_clock_mhz']:.0f} MHz / DRAM rd {c[RD] / 1e6:.2f} wr {c[WR] / 1e6:.2f} MB"
        )

    verdict = {}
    # 1 MB: warm needs fewer cycles or less time, or the clock/bytes explain why not.
    s = B_SIZES[0]
    c, w, text = line(s)
    reasons = []
    if w[T] < c[T]:
        reasons.append("warm takes less time")
    if w[CYC] < c[CYC]:
        reasons.append("warm needs fewer cycles")
    clock_explains = w["sm_clock_mhz"] < 0.99 * c["sm_clock_mhz"] and w[CYC] <= 1.02 * c[CYC]
    bytes_explains = w[WR] - c[WR] > 0.10 * s
    if clock_explains:
        reasons.append(f"(ii) proven: same cycles within 2%, warm SM clock {100 * (w['sm_clock_mhz'] / c['sm_clock_mhz'] - 1):+.1f}%")
    if bytes_explains:
        reasons.append(f"(i) proven: warm writes {(w[WR] - c[WR]) / s:.0%} of the buffer more to DRAM")
    verdict["1MB"] = {"reasons": reasons, "clock_explains": clock_explains, "bytes_explains": bytes_explains}
    check(f"b {form} 1MB warm<cold", bool(reasons), f"{text}; {'; '.join(reasons) or 'warm slower and in more cycles, and neither clock nor DRAM writes explain it'}")
    # 1 GiB (>16x L2): warm and cold equal within 3%.
    c, w, text = line(B_SIZES[2])
    check(f"b {form} 1GiB equal", abs(w[T] / c[T] - 1) < 0.03, f"{text} ({100 * (w[T] / c[T] - 1):+.2f}%)")
    # 64 MB: INFO, with hypothesis (i).
    s = B_SIZES[1]
    c, w, text = line(s)
    extra = w[WR] - c[WR]
    holds = extra > 0.10 * s
    verdict["64MB_hypothesis_i"] = holds
    check(f"b {form} 64MB", None, f"{text} ({100 * (w[T] / c[T] - 1):+.2f}%)")
    check(f"b {form} 64MB hypothesis (i)", None,
          f"{'holds' if holds else 'does not hold'}: warm writes {extra / 1e6:+.2f} MB to DRAM vs cold ({extra / s:+.1%} of the 64 MB buffer; holds above +10%)")
    # Hypothesis (ii) at every size: the SM clock of warm vs cold.
    verdict["sm_clock_warm_vs_cold_pct"] = {
        str(s): 100 * (nums[str(s)]["warm"]["sm_clock_mhz"] / nums[str(s)]["cold"]["sm_clock_mhz"] - 1) for s in B_SIZES
    }
    check(f"b {form} SM clock (ii)", None, ", ".join(
        f"{s >> 20} MiB: warm {nums[str(s)]['warm']['sm_clock_mhz']:.0f} vs cold {nums[str(s)]['cold']['sm_clock_mhz']:.0f} MHz" for s in B_SIZES))
    return verdict


step4_results = {}
for key, bench in step4_runs.items():
    try:
        step4_results[key] = bench()
    except Exception as e:  # noqa: BLE001 - an invalid metric or a failed child must not stop checks c-e
        if PARENT:
            check(f"b {key[0]} {key[1]} run", False, f"{type(e).__name__}: {str(e)[-800:]}")
if PARENT:
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", None)
    b = {"gpu": props.name, "l2_bytes": l2, "metrics": B_METRICS, "sizes": B_SIZES, "previous_premade_time_only": B_PREVIOUS}
    print(f"[b] {props.name}, L2 {l2 / 2**20 if l2 else float('nan'):.0f} MiB; sizes {[s >> 20 for s in B_SIZES]} MiB", flush=True)
    for form in ("seed", "premade"):
        if (form, "cold") not in step4_results or (form, "warm") not in step4_results:
            continue
        nums = {}
        for mode in ("cold", "warm"):
            per_size, units = step4_numbers(step4_results[(form, mode)])
            b["units"] = units
            for s, d in per_size.items():
                nums.setdefault(s, {})[mode] = d
        b[form] = nums
        try:
            b[f"{form}_verdict"] = step4_checks(form, nums)
        except (TypeError, KeyError, ZeroDivisionError) as e:  # a metric missing from the report
            check(f"b {form} numbers", False, f"{type(e).__name__}: {e}; numbers {json.dumps(nums, default=str)[:800]}")
    summary["numbers"]["b"] = b

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

# (f) seed step 6 under ncu vs CUPTI
# gpu__time_duration.max: under ncu the same duration as .sum; in kprof a counter (the duration
# the counter pass measures, without CUPTI's kernel records), next to .sum from the kernel records.
F_METRICS = ["gpu__time_duration.sum", "gpu__time_duration.max", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
             "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum"]
F_RUNS = 10


def step6_body():
    a = _tensors.setdefault("f16", torch.randn(4096, 4096, device="cuda").half())
    x, _ = tensors("bw", 256 << 20)
    s = _tensors.setdefault("softmax", torch.randn(8192, 1024, device="cuda"))
    with kprof.annotate("fp16 matmul 4096"):
        _ = a @ a
    with kprof.annotate("x * 2 (256 MB)"):
        _ = x * 2.0
    with kprof.annotate("softmax 8192x1024"):
        _ = torch.softmax(s, dim=-1)


# ncu's kernel replay (its default) and application replay (the script re-run once per pass);
# each CUPTI mode is compared with ncu's like-for-like replay: kernel with kernel, application and
# range (the function re-run per pass) with application.
step6_ncu = {replay: kprof.analyze.kernel(runs=F_RUNS, backend="ncu", cache_control="all", clock_control="none",
                                          metrics=F_METRICS, replay_mode=replay, output_prefix=PREFIX)(step6_body)
             for replay in ("kernel", "application")}
# "application" (judged) takes its durations from the counters as ncu does (duration_source
# "counters"); "application-records" and the others from CUPTI's kernel records.
F_CUPTI = {"application": ("application", "counters"), "application-records": ("application", "records"),
           "kernel": ("kernel", "records"), "range": ("range", "records")}
step6_cupti = {label: kprof.analyze.kernel(runs=F_RUNS, backend="cupti", cache_control="all", metrics=F_METRICS,
                                           replay_mode=mode, duration_source=duration, thermal_mode="off")(step6_body)
               for label, (mode, duration) in F_CUPTI.items()}
r6_ncu = {replay: bench() for replay, bench in step6_ncu.items()}
if PARENT:
    m6n = {replay: medians(r, ("Annotation", "Metric")) for replay, r in r6_ncu.items()}
    m6c = {mode: medians(bench(), ("Annotation", "Metric")) for mode, bench in step6_cupti.items()}
    summary["numbers"]["f"] = {f"{a} | {m}": {**{f"ncu_{r}": m6n[r].get((a, m)) for r in m6n},
                                              **{f"cupti_{mode}": m6c[mode].get((a, m)) for mode in m6c}}
                               for (a, m) in m6n["kernel"]}
    for (ann, m) in sorted(m6n["kernel"]):
        for mode, vals in m6c.items():
            replay = "kernel" if mode == "kernel" else "application"  # mode: a label of F_CUPTI
            n, c = m6n[replay].get((ann, m)), vals.get((ann, m))
            name = f"f {'apr' if mode == 'application-records' else mode[:3]} {ann[:16]} {m[:20]}"
            if c is None or n is None:
                check(name, False, f"no value (CUPTI {c}, ncu {replay} replay {n})")
                continue
            if "pct" in m:
                ok, detail = abs(c - n) <= 1.0, f"ncu {n:.2f} vs CUPTI {c:.2f} ({c - n:+.2f} pt, limit 1 pt)"
            else:
                lim = 2.0 if m.startswith("gpu__time_duration") else 0.5
                d = (c / n - 1) * 100
                ok, detail = abs(d) <= lim, f"ncu {n:,.0f} vs CUPTI {c:,.0f} ({d:+.2f}%, limit {lim}%)"
            check(name, ok if mode == "application" else None, f"CUPTI {mode} replay vs ncu {replay} replay: {detail}")

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
