"""Issue 4's checks on the GPU machine: the seed's steps 2, 3 and 5 (and issue 7's step 8) through the installed kprof
package, against CUDA events and the Rust API. Run by scripts/gpu-check-python.sh; prints a
pass/fail table and writes the processed tables (CSV) and a JSON summary into OUT."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import torch  # first, on purpose: kprof has no import-order rule

import kprof

OUT = sys.argv[1]
RUST_RAW = sys.argv[2] if len(sys.argv) > 2 else None
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import tutorial  # noqa: E402

rows: list[tuple[str, bool | None, str]] = []
numbers: dict = {}


def check(name, ok, detail):
    rows.append((name, ok, detail))
    print(f"[{name}] {'PASS' if ok else ('INFO' if ok is None else 'FAIL')}: {detail}", flush=True)


def events_median_ns(fn, runs=20, warmup=3):
    """CUDA-event median of `fn`, with the GPU kept busy while the events are enqueued."""
    cushion = torch.empty(64 << 20, device="cuda")
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for i in range(warmup + runs):
        for _ in range(8):
            cushion.mul_(1.0)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(s.elapsed_time(e) * 1e6)
    return statistics.median(times)


t0 = time.time()
# Step 2: one fp32 2048 matmul. The reference is the CUDA-event median of the same launches in the
# same process; both warm cache, so kprof runs the same function with cache_control="none" here.
df2 = tutorial.step2_first_profile()
df2.to_csv(os.path.join(OUT, "step2.csv"), index=False)
r = df2.iloc[0]
check("step2-row", len(df2) == 1 and r.Unit == "ns" and r.GPU == "NVIDIA H200" and isinstance(r.Kernel, str)
      and len(r.Kernel) > 0, f"{len(df2)} row, Unit {r.Unit}, GPU {r.GPU}, Kernel {r.Kernel[:60]}")
a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")


@kprof.kernel(runs=20, cache_control="none", thermal_mode="off", verbosity=kprof.VerbosityLevel.SILENT)
def warm_matmul() -> None:
    with kprof.annotate("matmul"):
        _ = a @ b


kp = warm_matmul().raw()
kp_median = statistics.median(kp[kp.Annotation == "matmul"].Value)
ev_median = events_median_ns(lambda: a @ b)
d = (kp_median / ev_median - 1) * 100
numbers["step2"] = {"kprof_median_ns": kp_median, "events_median_ns": ev_median, "diff_pct": d,
                    "single_run_ns": float(r.AvgValue)}
check("step2-vs-events", abs(d) <= 1.0, f"fp32 2048 warm: kprof median {kp_median:,.0f} ns vs CUDA events "
      f"{ev_median:,.0f} ns: {d:+.2f}% (limit 1%); the step-2 single cold run was {float(r.AvgValue):,.0f} ns")

# Step 3: 20 runs, t-based CIs, RSD and stability.
df3 = tutorial.step3_stability()
df3.to_csv(os.path.join(OUT, "step3.csv"), index=False)
ok = bool((df3.NumRuns == 20).all() and df3.CI95_Lower.notna().all() and df3.RelativeStdDevPct.notna().all()
          and df3.StableMeasurement.notna().all())
from math import isclose  # noqa: E402
t19 = 2.093024054408263  # scipy.stats.t.ppf(0.975, 19)
half = (df3.CI95_Upper - df3.AvgValue)
t_based = all(isclose(h, t19 * sd / 20 ** 0.5, rel_tol=1e-9) for h, sd in zip(half, df3.StdDev))
check("step3", ok and t_based, f"{len(df3)} rows, NumRuns {sorted(set(df3.NumRuns))}, CI half-width = t(0.975,19)*sd/sqrt(20): "
      f"{t_based}; RSD% {[round(x, 2) for x in df3.RelativeStdDevPct]}; stable {list(df3.StableMeasurement)}")
numbers["step3"] = df3[["Annotation", "n", "AvgValue", "StdDev", "RelativeStdDevPct"]].to_dict("records")

# Step 5: TFLOP/s derived per run, and normalisation with ratio statistics.
df5, rd5 = tutorial.step5_precision_sweep()
df5.to_csv(os.path.join(OUT, "step5-tflops.csv"), index=False)
rd5.to_csv(os.path.join(OUT, "step5-normalized.csv"), index=False)
tf = df5[df5.Metric == "tflops"].pivot(index="n", columns="Annotation", values="AvgValue")
fp16 = rd5[(rd5.Annotation == "fp16") & (rd5.Metric == "gpu__time_duration.sum")]
ratio_stats = bool((fp16.Unit == "x").all() and (fp16.Normalized == "fp32").all() and fp16.CI95_Lower.notna().all()
                   and (fp16.CI95_Lower <= fp16.AvgValue).all() and (fp16.AvgValue <= fp16.CI95_Upper).all()
                   and fp16.NormalizationValue.notna().all())
faster = bool(tf.loc[4096, "fp16"] > tf.loc[4096, "fp32"])
check("step5", ratio_stats and faster, f"TFLOP/s at 4096: fp32 {tf.loc[4096, 'fp32']:.1f}, fp16 {tf.loc[4096, 'fp16']:.1f}; "
      f"fp16/fp32 time ratio {[round(x, 3) for x in fp16.AvgValue]} with CIs "
      f"{[(round(lo, 3), round(hi, 3)) for lo, hi in zip(fp16.CI95_Lower, fp16.CI95_Upper)]}")
numbers["step5"] = {"tflops": tf.to_dict(), "fp16_ratio": fp16[["n", "AvgValue", "CI95_Lower", "CI95_Upper"]].to_dict("records")}

# Rust API vs Python on the same kernel: the Rust sgemm example's raw CSV (cold cache, cuBLAS).
if RUST_RAW and os.path.exists(RUST_RAW):
    import pandas as pd

    rust = pd.read_csv(RUST_RAW)

    @kprof.kernel(configs=[4096], runs=10, thermal_mode="off", verbosity=kprof.VerbosityLevel.SILENT)
    def torch_sgemm(n):
        x = torch.randn(n, n, device="cuda")
        y = torch.randn(n, n, device="cuda")
        with kprof.annotate("matmul"):
            _ = x @ y

    py = torch_sgemm().raw()
    rk = rust[rust.n == 4096]
    same_kernel = set(rk.Kernel) == set(py.Kernel)
    dr = (statistics.median(py.Value) / statistics.median(rk.Value) - 1) * 100
    numbers["rust_vs_python"] = {"rust_median_ns": statistics.median(rk.Value), "python_median_ns": statistics.median(py.Value),
                                 "diff_pct": dr, "rust_kernels": sorted(set(rk.Kernel)), "python_kernels": sorted(set(py.Kernel))}
    check("rust-vs-python", abs(dr) <= 1.0 if same_kernel else None,
          f"fp32 4096 cold: Rust {statistics.median(rk.Value):,.0f} ns vs Python {statistics.median(py.Value):,.0f} ns: "
          f"{dr:+.2f}%; same kernel: {same_kernel}")

# Step 8 (issue 7): info collectors, thermal off/auto, run conditions, energy, fingerprint.
import gpu_check_step8  # noqa: E402  (scripts/ is sys.path[0])

try:
    gpu_check_step8.run(check, numbers, OUT)
except Exception as e:  # the other steps' results still count
    check("step8", False, f"{type(e).__name__}: {e}")

check("import-order", True, "torch was imported and used on the GPU before kprof's first benchmark")
numbers["wall_s"] = time.time() - t0
with open(os.path.join(OUT, "summary-python.json"), "w") as f:
    json.dump({"rows": rows, "numbers": numbers}, f, indent=1, default=str)
print("\n==== kprof Python GPU check ====")
for name, ok, detail in rows:
    print(f"{name:<16} {'PASS' if ok else ('INFO' if ok is None else 'FAIL'):<5} {detail}")
failed = [n for n, ok, _ in rows if ok is False]
print(f"{len(rows) - len(failed)} of {len(rows)} checks passed (wall {numbers['wall_s']:.1f} s)")
sys.exit(1 if failed else 0)
