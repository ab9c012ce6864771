"""The seed tutorial (nsight-python on a GPU, step by step), with kprof.

Each step is a function returning the processed DataFrame, so `gpu-checks/gpu_check_python.py` can
check the numbers; run this file to print every step. Steps 6 and 7 read hardware counters in-process
(CUPTI Range Profiler, no Nsight Compute); step 8 records run conditions and info collectors; step 9
times the same matmul sweep under Nsight Compute (`backend="ncu"`) and under kprof's CUPTI backend,
and step 10 lists what the ncu run kept (its `.ncu-rep`, ncu's log and CSV export, the result CSVs)
and reads the report's export. Steps 9 and 10 need `ncu` on the PATH (or `KPROF_NCU`); without it
they say so. Clock control (step 4 of the seed with `backend="ncu"`) is listed at the end.

    python examples/tutorial.py

Differences from the seed (nsight-python): no import-order rule (torch may touch the GPU first),
no `combine_kernel_metrics` needed when cuBLAS launches several kernels (kprof sums them by
default and keeps the per-kernel breakdown), Student-t confidence intervals, and normalised rows
that carry the ratio's own statistics.
"""

from __future__ import annotations

import csv
import ctypes
import inspect
import os
import shutil
import sys
import textwrap
import time

try:
    import torch  # before kprof on purpose: kprof has no import-order rule
except ModuleNotFoundError:  # main() says what to install; steps 9 and 10 also run with other bodies
    torch = None

import kprof

SILENT = kprof.VerbosityLevel.SILENT


# -- Step 2: profile one kernel ----------------------------------------------------------------


@kprof.kernel(thermal_mode="off", verbosity=SILENT)
def first_matmul(n: int) -> None:
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with kprof.annotate("matmul"):
        _ = a @ b


def step2_first_profile():
    """One fp32 2048 matmul: one row with the kernel, its time in ns and the GPU."""
    df = first_matmul(2048).to_dataframe()
    r = df.iloc[0]
    t = float(r["AvgValue"])
    print(f"  annotation {r['Annotation']!r}, n = {r['n']}, kernel {r['Kernel']}")
    print(f"  {r['Metric']} = {t:,.0f} {r['Unit']}  (runs {r['NumRuns']}, stable: {r['StableMeasurement']})")
    print(f"  GPU {r['GPU']}; {2 * 2048 ** 3 / (t * 1e-9) / 1e12:.2f} TFLOP/s")
    return df


# -- Step 3: how many runs? ----------------------------------------------------------------------


@kprof.kernel(configs=[1 << 14, 1 << 24], runs=20, thermal_mode="off", verbosity=SILENT)
def noisy_or_not(n: int) -> None:
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    a = torch.randn(2048, 2048, device="cuda")
    with kprof.annotate("vector add"):
        _ = x + y
    with kprof.annotate("matmul 2048"):
        _ = a @ a


def step3_stability():
    """20 runs per configuration: spread, Student-t CIs and the stability flag."""
    df = noisy_or_not().to_dataframe()
    cols = ["Annotation", "n", "AvgValue", "StdDev", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct",
            "StableMeasurement", "NumRuns"]
    print(textwrap.indent(df[cols].to_string(index=False), "  "))
    return df


# -- Step 4: cache control (the CUPTI backend; clock locking needs backend="ncu") ----------------

def make_scale_bench(cache_control):
    # The seed's function: the input is made inside it, outside the annotation. With a cold cache
    # kprof empties the L2 before the annotated region (after torch.randn), as ncu does before the
    # kernel; with a warm one x is still in the L2 from torch.randn.
    # Sizes: 1 MB (fits the L2), 64 MB (about the H200's 60 MB L2) and 1 GB (17x the L2).
    def scale(n: int) -> None:
        x = torch.randn(n, device="cuda")
        with kprof.annotate("x * 2"):
            _ = x * 2.0
    # Range replay: the counters of each pass see the same L2 state as the timed run (kernel
    # replay cannot flush the L2 between its passes).
    return kprof.kernel(configs=[1 << 18, 1 << 24, 1 << 28], runs=10, cache_control=cache_control, thermal_mode="off",
                        verbosity=SILENT, replay_mode="range",
                        metrics=["gpu__time_duration.sum", "gpc__cycles_elapsed.avg.per_second",
                                 "dram__bytes_write.sum"])(scale)


def step4_cache():
    """1 MB, 64 MB and 1 GB `x * 2` with a cold (cache_control="all") and a warm ("none") L2."""
    rows = []
    for cache in ("all", "none"):
        df = make_scale_bench(cache)().to_dataframe()
        by = {m: df[df.Metric == m].set_index("n").AvgValue for m in set(df.Metric)}
        t, hz, wr = by["gpu__time_duration.sum"], by["gpc__cycles_elapsed.avg.per_second"], by["dram__bytes_write.sum"]
        for n in t.index:
            rows.append({"cache_control": cache, "MB": 4 * n / 2 ** 20, "time_us": t[n] / 1e3,
                         "GB/s": 2 * 4 * n / t[n], "SM_MHz": hz[n] / 1e6, "MB_written": wr[n] / 2 ** 20})
    import pandas as pd

    tab = pd.DataFrame(rows)
    print(textwrap.indent(tab.to_string(index=False, float_format=lambda v: f"{v:,.1f}"), "  "))
    l2_mb = torch.cuda.get_device_properties(0).L2_cache_size / 2 ** 20
    print(f"\n  This GPU's L2 is {l2_mb:.0f} MB: a 1 MB input stays in it between runs unless it is flushed.")
    print("  At 64 MB a warm run starts with torch.randn's output still dirty in the L2 and pays to write it")
    print("  back (MB_written above a cold run's); a cold run starts from an emptied, clean L2.")
    print("  At 1 GB the L2 no longer matters. SM_MHz is measured per kernel (gpc__cycles_elapsed.avg.per_second);")
    print("  ComputeClock is the rated clock.")
    return tab


# -- Step 5: a size sweep, a derived TFLOP/s metric, normalisation -------------------------------

SIZES = [512, 1024, 2048, 4096]


def tflops(time_ns: float, n: int) -> tuple[float, str]:
    return 2 * n ** 3 / (time_ns * 1e-9) / 1e12, "TFLOP/s"


def make_precision_body():
    def precision(n: int) -> None:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        a16, b16 = a.half(), b.half()
        with kprof.annotate("fp32"):
            _ = a @ b
        with kprof.annotate("fp16"):
            _ = a16 @ b16
    return precision


precision_tflops = kprof.kernel(configs=SIZES, runs=5, derive_metric=tflops, thermal_mode="off",
                                verbosity=SILENT)(make_precision_body())
precision_ratio = kprof.kernel(configs=SIZES, runs=5, normalize_against="fp32", thermal_mode="off",
                               verbosity=SILENT)(make_precision_body())


def step5_precision_sweep():
    """fp32 vs fp16 over 512..4096: TFLOP/s derived per run, and fp16 time as a ratio of fp32."""
    df = precision_tflops().to_dataframe()
    tf = df[df.Metric == "tflops"].pivot(index="n", columns="Annotation", values="AvgValue")
    print(textwrap.indent(tf[["fp32", "fp16"]].to_string(float_format=lambda v: f"{v:,.2f}"), "  "))
    rd = precision_ratio().to_dataframe()
    fp16 = rd[rd.Annotation == "fp16"][["n", "AvgValue", "StdDev", "CI95_Lower", "CI95_Upper", "Unit", "Normalized"]]
    print("\n  fp16 time / fp32 time, with the ratio's own statistics (unit x):\n")
    print(textwrap.indent(fp16.to_string(index=False, float_format=lambda v: f"{v:,.4f}"), "  "))
    return df, rd


# -- Step 6: compute-bound or memory-bound? Three metrics, hardware counters in-process -----------

BOUND_METRICS = ["gpu__time_duration.sum",
                 "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                 "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
BOUND_REGIONS = ["fp16 matmul 4096", "x * 2 (256 MB)", "softmax 8192x1024"]


def make_what_limits():
    def what_limits(n: int) -> None:
        # As in the seed: inputs are made inside the function, outside the annotations. Kernel
        # replay profiles them too and kprof leaves them out of every region.
        a = torch.randn(n, n, device="cuda").half()
        x = torch.randn(64 * 2 ** 20, device="cuda")
        s = torch.randn(8192, 1024, device="cuda")
        with kprof.annotate(BOUND_REGIONS[0]):
            _ = a @ a
        with kprof.annotate(BOUND_REGIONS[1]):
            _ = x * 2.0
        with kprof.annotate(BOUND_REGIONS[2]):
            _ = torch.softmax(s, dim=-1)
    return what_limits


what_limits = kprof.kernel(metrics=BOUND_METRICS, runs=3, thermal_mode="off", verbosity=SILENT)(make_what_limits())


def step6_bound():
    """SM vs DRAM throughput (% of peak) per region: the larger one names what limits the kernel."""
    df = what_limits(4096).to_dataframe()
    tab = df.pivot(index="Annotation", columns="Metric", values="AvgValue")
    tab = tab.rename(columns={"gpu__time_duration.sum": "ms",
                              "sm__throughput.avg.pct_of_peak_sustained_elapsed": "SM % of peak",
                              "dram__throughput.avg.pct_of_peak_sustained_elapsed": "DRAM % of peak"})
    tab["ms"] = tab["ms"] / 1e6
    tab["limited by"] = ["compute" if sm > dram else "memory" for sm, dram in zip(tab["SM % of peak"], tab["DRAM % of peak"])]
    print(textwrap.indent(tab.to_string(float_format=lambda v: f"{v:,.2f}"), "  "))
    x2 = tab.loc["x * 2 (256 MB)"]
    gbs = 2 * 4 * 64 * 2 ** 20 / (x2["ms"] * 1e6)
    print(f"\n  Cross-check: x * 2 moves 2 x 256 MB in {x2['ms']:.3f} ms = {gbs:,.0f} GB/s; the counters say "
          f"{x2['DRAM % of peak']:.0f}% of DRAM peak.")
    return df, tab


# -- Step 7: kernel fusion, measured in bytes ------------------------------------------------------

BYTES = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
FUSION_REGIONS = ["a + b * c (unfused)", "torch.addcmul (fused)"]


def make_fusion():
    def fusion(n: int) -> None:
        a, b, c = (torch.randn(n, device="cuda") for _ in range(3))
        with kprof.annotate(FUSION_REGIONS[0]):
            _ = a + b * c
        with kprof.annotate(FUSION_REGIONS[1]):
            _ = torch.addcmul(a, b, c)
    return fusion


# kprof sums a region's kernels by default (the seed needs combine_kernel_metrics here).
fusion = kprof.kernel(metrics=BYTES, runs=5, thermal_mode="off", verbosity=SILENT)(make_fusion())


def step7_fusion():
    """a + b * c (2 kernels, b * c goes through memory) vs torch.addcmul (1 kernel): DRAM bytes."""
    n = 32 * 2 ** 20
    df = fusion(n).to_dataframe()
    tab = df.pivot(index="Annotation", columns="Metric", values="AvgValue")
    import pandas as pd
    tab = pd.DataFrame({"ms": tab["gpu__time_duration.sum"] / 1e6,
                        "MB read": tab["dram__bytes_read.sum"] / 2 ** 20,
                        "MB written": tab["dram__bytes_write.sum"] / 2 ** 20})
    print(f"  {n:,} float32 elements per tensor (128 MB each); metrics summed over the kernels in each region:\n")
    print(textwrap.indent(tab.to_string(float_format=lambda v: f"{v:,.1f}"), "  "))
    u, f = tab.loc[FUSION_REGIONS[0]], tab.loc[FUSION_REGIONS[1]]
    print(f"\n  The unfused version writes b * c to memory and reads it back: {u['MB read'] + u['MB written']:,.0f} MB of")
    print(f"  traffic against {f['MB read'] + f['MB written']:,.0f} MB, and {u['ms'] / f['ms']:.2f}x the time.")
    return df, tab


# -- Step 8: info collectors and thermal control --------------------------------------------------
#
# The seed's collectors read NVML through pynvml; this reads the same three values through NVML's C
# API with ctypes, so the step needs no extra package. NVML device 0 is the benchmark's GPU on a
# one-GPU machine (kprof's own condition columns map the device by UUID).


class _Nvml:
    def __init__(self):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != 0:
            raise RuntimeError("nvmlInit failed")
        self.dev = ctypes.c_void_p()
        if self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.dev)) != 0:
            raise RuntimeError("nvmlDeviceGetHandleByIndex(0) failed")

    def driver_version(self) -> str:
        buf = ctypes.create_string_buffer(96)
        self.lib.nvmlSystemGetDriverVersion(buf, 96)
        return buf.value.decode()

    def sm_clock_mhz(self) -> int:
        v = ctypes.c_uint()
        self.lib.nvmlDeviceGetClockInfo(self.dev, 1, ctypes.byref(v))  # NVML_CLOCK_SM
        return v.value

    def temperature_c(self) -> int:
        v = ctypes.c_uint()
        self.lib.nvmlDeviceGetTemperature(self.dev, 0, ctypes.byref(v))  # NVML_TEMPERATURE_GPU
        return v.value


_NVML: _Nvml | None = None


def _nvml() -> _Nvml:
    global _NVML
    if _NVML is None:
        _NVML = _Nvml()
    return _NVML


@kprof.experimental.collect(scope=kprof.CollectionScope.ONCE)
def driver_version(*args):
    return _nvml().driver_version()


@kprof.experimental.collect(scope=kprof.CollectionScope.RUN)
def sm_clock_mhz(*args):
    return _nvml().sm_clock_mhz()


@kprof.experimental.collect(scope=kprof.CollectionScope.RUN)
def gpu_temp_c(*args):
    return _nvml().temperature_c()


def make_heat_body(repeat: int = 1):
    """The seed's fp16 matmul; ``repeat`` > 1 loops it inside the annotation (a run of ~1 s or more)."""

    def heat(n: int) -> None:
        a = torch.randn(n, n, device="cuda").half()
        with kprof.annotate("fp16 matmul"):
            for _ in range(repeat):
                _ = a @ a

    return heat


def step8_conditions(output_prefix: str = "kprof_step8/"):
    """30 runs of a 4096 fp16 matmul with thermal_mode off and auto: the driver version once, the SM
    clock and temperature before every run (user collectors), and kprof's own per-run conditions
    (SMClockMHz, TemperatureC, PowerW, EnergyMilliJ, Throttled, ThermalWaitS). Returns
    ``{mode: ProfileResults}``."""
    out = {}
    for mode in ("off", "auto"):
        bench = kprof.kernel(configs=[4096], runs=30, thermal_mode=mode, thermal_timeout=60,
                             info_collectors=[driver_version, sm_clock_mhz, gpu_temp_c], verbosity=SILENT,
                             output_prefix=f"{output_prefix}{mode}/", output_csv=True)(make_heat_body())
        res = bench()
        out[mode] = res
        r = res.to_dataframe().iloc[0]
        print(f"  thermal_mode={mode!r}: {r['AvgValue'] / 1e3:,.1f} us +/- {r['RelativeStdDevPct']:.1f}%  "
              f"driver {r['driver_version']}; SM clock {r['SMClockMHz_Min']:.0f}-{r['SMClockMHz_Max']:.0f} MHz, "
              f"{r['TemperatureC_Min']:.0f}-{r['TemperatureC_Max']:.0f} C, throttled runs {r['ThrottledRuns']:.0f}, "
              f"waited {r['ThermalWaitS_Max']:.1f} s at most before a run")
    raw = out["off"].raw()
    corr = raw[["Value", "SMClockMHz", "sm_clock_mhz", "gpu_temp_c"]].astype(float).corr().iloc[0]
    print(f"  over 30 runs (thermal off): correlation of kernel time with the SM clock after the run "
          f"{corr['SMClockMHz']:+.2f}, before it (collector) {corr['sm_clock_mhz']:+.2f}, with temperature "
          f"{corr['gpu_temp_c']:+.2f}")
    fp = getattr(out["off"], "fingerprint", None) or {}
    print(f"  environment: {fp.get('gpu_name')} | driver {fp.get('driver_version')} | CUDA "
          f"{fp.get('cuda_driver_version')} | CUPTI {fp.get('cupti_version')} (also in {out['off'].files[0][:-4]}.env.json)")
    return out


# -- Step 9: the CUPTI backend against Nsight Compute ---------------------------------------------
# The seed runs nsight-python's CUPTI backend in a child process, because Nsight Compute and CUPTI
# exclude each other in one process. kprof's ncu backend runs the *script* again under ncu (that
# child runs only the ncu benchmark, see main()), so both sides run from this one process: the same
# matmul sweep under Nsight Compute (each launch profiled with the caches flushed; kprof passes
# clock_control="none" to it, its own default) and under kprof's default backend (CUPTI in-process,
# durations from the counters, cold caches).

STEP9 = dict(configs=[512, 1024, 2048, 4096], runs=10, thermal_mode="off", verbosity=SILENT)


def make_matmul():
    """The seed's fp32 matmul (cuBLAS may launch more than one kernel: kprof sums them)."""

    def matmul(n: int) -> None:
        a = torch.randn(n, n, device="cuda")
        b = torch.randn(n, n, device="cuda")
        with kprof.annotate("matmul"):
            _ = a @ b

    return matmul


def step9_ncu_vs_cupti(body=None, output_prefix: str = "kprof_step9/", **options):
    """The sweep under ``backend="ncu"`` and under the default CUPTI backend, with each one's wall time.
    Returns ``(rows, ncu_results)``: per size the two mean durations (ms), their ratio and RSDs, and the
    ncu run's results (step 10 reads what it kept). ``body`` defaults to the matmul; ``options`` go to
    both decorators (over ``STEP9``)."""
    body = body or make_matmul()
    opts = {**STEP9, **options}
    under_ncu = kprof.kernel(backend="ncu", output_prefix=output_prefix, output_csv=True, **opts)(body)
    in_process = kprof.kernel(**opts)(body)
    t0 = time.perf_counter()
    ncu_res = under_ncu()
    ncu_wall = time.perf_counter() - t0
    t0 = time.perf_counter()
    cupti_res = in_process()
    cupti_wall = time.perf_counter() - t0
    param = next(iter(inspect.signature(body).parameters))
    ncu_df, cu_df = (r.to_dataframe().set_index(param) for r in (ncu_res, cupti_res))
    rows = []
    print(f"  {param:>5s} {'ncu ms':>9s} {'cupti ms':>9s} {'ratio':>6s} {'ncu RSD%':>9s} {'cupti RSD%':>11s}")
    for n in ncu_df.index:
        a, b = ncu_df.loc[n, "AvgValue"] / 1e6, cu_df.loc[n, "AvgValue"] / 1e6
        row = {param: n, "ncu_ms": a, "cupti_ms": b, "ratio": b / a,
               "ncu_rsd": ncu_df.loc[n, "RelativeStdDevPct"], "cupti_rsd": cu_df.loc[n, "RelativeStdDevPct"]}
        rows.append(row)
        print(f"  {n:5d} {a:9.3f} {b:9.3f} {b / a:6.2f} {row['ncu_rsd']:9.1f} {row['cupti_rsd']:11.1f}")
    runs = len(ncu_df.index) * opts["runs"]
    print(f"\n  wall time for {runs} runs: Nsight Compute {ncu_wall:.1f} s, kprof's CUPTI backend {cupti_wall:.1f} s "
          f"({ncu_wall / max(cupti_wall, 1e-9):.1f}x)")
    print("  ncu runs the script again and replays every kernel; kprof measures in this process, with the same")
    print("  duration metric (gpu__time_duration.sum) from its counter pass and the L2 flushed before each run.")
    return rows, ncu_res


# -- Step 10: keep the evidence: the CSVs and the full Nsight Compute report -------------------------


def step10_keep_report(ncu_res):
    """What the ncu run of step 9 left on disk: the ``.ncu-rep`` (opens in the Nsight Compute GUI;
    ``kprof import REPORT`` turns it into kprof's tables), ncu's log, its CSV export and the result
    CSVs of ``output_csv=True``. Reads the export: one row per profiled kernel launch. Returns
    ``{"files": [...], "launches": int, "first": (kernel, ns)}``."""
    ncu = (ncu_res.fingerprint or {})["ncu"]
    files = [ncu["report"], ncu["log"], ncu["csv"], *ncu_res.files]
    for f in files:
        print(f"  {os.path.basename(f):64s} {os.path.getsize(f) / 1024:9.1f} KB")
    with open(ncu["csv"], newline="") as fh:
        # ncu's raw page: a header row (after ncu's own "==PROF==" lines), a row of units, a row per launch.
        lines = [line for line in fh if not line.startswith("==")]
    rows = list(csv.DictReader(lines))[1:]
    first = (rows[0]["Kernel Name"], float(rows[0]["gpu__time_duration.sum"])) if rows else None
    print(f"\n  the report holds {len(rows)} profiled kernel launches (ncu {ncu['version']}, {ncu['mode']} mode)")
    if first:
        print(f"  the first: {first[0][:70]}, gpu__time_duration.sum = {first[1]:,.0f} ns")
    print("  output_csv=True wrote profiled_data (one row per run) and processed_data (the aggregated table);")
    print("  kprof.load(profiled_data) reads the runs back, and the .ncu-rep opens in the Nsight Compute GUI.")
    return {"files": files, "launches": len(rows), "first": first}


def steps9_and_10():
    if shutil.which(os.environ.get("KPROF_NCU") or "ncu") is None:
        print("  ncu is not on the PATH (nor KPROF_NCU): steps 9 and 10 need Nsight Compute")
        return None
    print("\n" + "=" * 78 + "\n9. The CUPTI backend against Nsight Compute\n" + "=" * 78)
    rows, ncu_res = step9_ncu_vs_cupti()
    print("\n" + "=" * 78 + "\n10. Keep the evidence: CSVs and the full Nsight Compute report\n" + "=" * 78)
    return rows, step10_keep_report(ncu_res)


LATER = {
    "4. clock control": "backend='ncu' (clock_control='base'); checked as argv only (never lock clocks on a shared machine)",
}


def main():
    if torch is None:
        sys.exit("tutorial: this example profiles PyTorch kernels; install PyTorch with CUDA (pip install torch)")
    if os.environ.get("KPROF_NCU_CHILD"):
        # Step 9's ncu run: this script again under ncu, where only that benchmark runs (the others
        # would return empty results: docs/backends.md).
        step9_ncu_vs_cupti()
        return
    for title, step in [("2. Profile one kernel", step2_first_profile),
                        ("3. How many runs?", step3_stability),
                        ("4. Cache control", step4_cache),
                        ("5. A size sweep, TFLOP/s and normalisation", step5_precision_sweep),
                        ("6. Compute-bound or memory-bound? Hardware counters", step6_bound),
                        ("7. Kernel fusion, measured in bytes", step7_fusion),
                        ("8. Info collectors and thermal control", step8_conditions)]:
        print("\n" + "=" * 78 + f"\n{title}\n" + "=" * 78)
        step()
    steps9_and_10()
    print("\nNot in this version yet:")
    for step, why in LATER.items():
        print(f"  {step}: {why}")


if __name__ == "__main__":
    main()
