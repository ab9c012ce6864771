"""The run conditions' checks on the GPU machine: the seed's step 8 (info collectors, thermal off/auto) through
the installed kprof, kprof's per-run condition columns, energy vs power x time on >= 1 s runs, the
kernel-time/SM-clock correlation, and the environment fingerprint.

Part of gpu-checks/gpu_check_python.py; standalone: ``python gpu-checks/gpu_check_step8.py OUT``
(prints a pass/fail table, writes OUT/summary-step8.json and the step's CSVs under OUT/step8/).
"""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys

import torch  # first, on purpose: kprof has no import-order rule

import kprof

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples"))
import tutorial  # noqa: E402

IDLE_MIN_MHZ = 300.0  # the H200 idles at ~345 MHz


def _pearson(xs, ys):
    pairs = [(float(x), float(y)) for x, y in zip(xs, ys) if x is not None and y is not None
             and math.isfinite(float(x)) and math.isfinite(float(y))]
    if len(pairs) < 3:
        return None
    mx = sum(p[0] for p in pairs) / len(pairs)
    my = sum(p[1] for p in pairs) / len(pairs)
    sxy = sum((x - mx) * (y - my) for x, y in pairs)
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    syy = sum((y - my) ** 2 for _, y in pairs)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None


def _matmul_ns(n: int) -> float:
    a = torch.randn(n, n, device="cuda").half()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(3):
        _ = a @ a
    torch.cuda.synchronize()
    s.record()
    for _ in range(20):
        _ = a @ a
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) * 1e6 / 20


def run(check, numbers: dict, out_dir: str) -> None:
    prefix = os.path.join(out_dir, "step8") + os.sep
    res = tutorial.step8_conditions(prefix)
    fp = res["off"].fingerprint or {}
    max_boost = float(fp.get("max_sm_clock_mhz") or 1980)
    info: dict = {"fingerprint": fp}
    for mode, r in res.items():
        raw = r.raw_columns()
        n = len(raw["Value"])
        cols = [c for c in ("SMClockMHz", "MemClockMHz", "TemperatureC", "PowerW", "EnergyMilliJ", "Throttled",
                            "ThermalWaitS", "driver_version", "sm_clock_mhz", "gpu_temp_c") if c in raw]
        check(f"step8-{mode}-runs", n == 30 and len(cols) == 10,
              f"thermal_mode={mode}: {n} runs; columns {cols}; files {[os.path.basename(f) for f in r.files]}")
        clocks = [float(v) for v in raw["SMClockMHz"]] + [float(v) for v in raw["sm_clock_mhz"]]
        temps = [float(v) for v in raw["TemperatureC"]] + [float(v) for v in raw["gpu_temp_c"]]
        check(f"step8-{mode}-clocks", all(IDLE_MIN_MHZ <= c <= max_boost + 1 for c in clocks),
              f"SM clock after runs {min(raw['SMClockMHz']):.0f}-{max(raw['SMClockMHz']):.0f} MHz, before runs "
              f"(collector) {min(raw['sm_clock_mhz'])}-{max(raw['sm_clock_mhz'])} MHz; limits {IDLE_MIN_MHZ:.0f}-{max_boost:.0f}")
        check(f"step8-{mode}-temperature", all(20 <= t <= 95 for t in temps),
              f"temperature {min(temps):.0f}-{max(temps):.0f} C (first run {raw['TemperatureC'][0]:.0f}, last "
              f"{raw['TemperatureC'][-1]:.0f}); power after runs {min(raw['PowerW']):.0f}-{max(raw['PowerW']):.0f} W")
        drivers = set(raw["driver_version"])
        check(f"step8-{mode}-driver", len(drivers) == 1 and str(next(iter(drivers))).startswith("580")
              and next(iter(drivers)) == fp.get("driver_version"),
              f"ONCE collector {drivers}, fingerprint {fp.get('driver_version')}")
        d = r.to_dict()
        info[mode] = {
            "avg_ns": d["AvgValue"][0], "rsd_pct": d["RelativeStdDevPct"][0], "throttled_runs": d["ThrottledRuns"][0],
            "thermal_wait_s_total": sum(float(v) for v in raw["ThermalWaitS"]),
            "sm_clock": [d["SMClockMHz_Min"][0], d["SMClockMHz_Avg"][0], d["SMClockMHz_Max"][0]],
            "temperature": [d["TemperatureC_Min"][0], d["TemperatureC_Avg"][0], d["TemperatureC_Max"][0]],
            "energy_mj_avg": d.get("EnergyMilliJ_Avg", [None])[0],  # runs shorter than the NVML poll interval have no energy
            "corr_time_sm_after": _pearson(raw["Value"], raw["SMClockMHz"]),
            "corr_time_sm_before": _pearson(raw["Value"], raw["sm_clock_mhz"]),
            "corr_time_temperature": _pearson(raw["Value"], raw["TemperatureC"]),
        }
    off = info["off"]
    check("step8-correlation", None,
          f"over 30 runs (thermal off): r(kernel time, SM clock after run) = {off['corr_time_sm_after']}, "
          f"r(kernel time, SM clock before run) = {off['corr_time_sm_before']}, r(time, temperature) = "
          f"{off['corr_time_temperature']}; throttled runs off/auto {off['throttled_runs']}/{info['auto']['throttled_runs']}; "
          f"thermal wait in auto {info['auto']['thermal_wait_s_total']:.1f} s")

    # Energy on runs of >= 1 s of GPU work: a loop of 8192 fp16 matmuls inside the annotation.
    t1 = _matmul_ns(8192)
    repeat = max(1, math.ceil(1.5e9 / t1))
    long_bench = kprof.kernel(configs=[8192], runs=5, warmup=1, thermal_mode="off",
                              verbosity=kprof.VerbosityLevel.SILENT)(tutorial.make_heat_body(repeat))
    lr = long_bench().raw_columns()
    ratios = []
    for v, e, p in zip(lr["Value"], lr["EnergyMilliJ"], lr["PowerW"]):
        secs = float(v) / 1e9
        if secs >= 1.0 and float(e) > 0:
            ratios.append((float(e) / 1000.0) / (float(p) * secs))
    info["energy"] = {"matmul_ns": t1, "repeat": repeat, "run_s": [float(v) / 1e9 for v in lr["Value"]],
                      "energy_j": [float(e) / 1000 for e in lr["EnergyMilliJ"]], "power_w": list(lr["PowerW"]),
                      "ratios": ratios}
    check("step8-energy", len(ratios) >= 3 and all(abs(x - 1) <= 0.10 for x in ratios),
          f"{repeat} x 8192 fp16 matmul per run ({statistics.median(info['energy']['run_s']):.2f} s of kernels): "
          f"energy / (power after run x kernel time) = {[round(x, 3) for x in ratios]} (limit 1 +/- 0.10); "
          f"energy {[round(x, 1) for x in info['energy']['energy_j']]} J, power {[round(float(p)) for p in lr['PowerW']]} W")

    # The fingerprint: returned, written as sidecars, printed by `kprof show`.
    ok = ("H200" in str(fp.get("gpu_name")) and str(fp.get("driver_version", "")).startswith("580")
          and fp.get("cuda_driver_version") == "13.0" and str(fp.get("cupti_version", "")).startswith("13.0"))
    side = os.path.splitext(res["off"].files[0])[0] + ".env.json"
    show = subprocess.run([sys.executable, "-m", "kprof.cli", "show", res["off"].files[0]], capture_output=True, text=True)
    shown = show.returncode == 0 and show.stdout.startswith("Environment") and "H200" in show.stdout
    check("step8-fingerprint", ok and os.path.exists(side) and shown,
          f"{fp.get('gpu_name')} | driver {fp.get('driver_version')} | CUDA {fp.get('cuda_driver_version')} | "
          f"CUPTI {fp.get('cupti_version')} | ECC {fp.get('ecc_enabled')} | MIG {fp.get('mig_enabled')} | persistence "
          f"{fp.get('persistence_mode')} | power limit {fp.get('power_limit_w')} W | max SM {fp.get('max_sm_clock_mhz')} "
          f"MHz | other processes {fp.get('other_processes')}; sidecar {os.path.exists(side)}; kprof show prints it: {shown}")
    info["kprof_show"] = show.stdout[:3000] + show.stderr[-2000:]
    numbers["step8"] = info


if __name__ == "__main__":
    OUT = sys.argv[1]
    os.makedirs(OUT, exist_ok=True)
    rows: list = []
    numbers: dict = {}

    def check(name, ok, detail):
        rows.append((name, ok, detail))
        print(f"[{name}] {'PASS' if ok else ('INFO' if ok is None else 'FAIL')}: {detail}", flush=True)

    try:
        run(check, numbers, OUT)
    except Exception as e:  # report what ran before the failure
        import traceback

        traceback.print_exc()
        check("step8-exception", False, f"{type(e).__name__}: {e}")
    with open(os.path.join(OUT, "summary-step8.json"), "w") as f:
        json.dump({"rows": rows, "numbers": numbers}, f, indent=1, default=str)
    failed = [n for n, ok, _ in rows if ok is False]
    print(f"\n{len(rows) - len(failed)} of {len(rows)} step-8 checks passed")
    sys.exit(1 if failed else 0)
