"""Does a power cap slow long kernels in kprof's back-to-back runs, where ncu (which idles between
the kernels it profiles) does not? Session 21 saw a bf16 matmul 16384 read 10.93 ms in kprof's
first two runs and 12.1-12.3 ms in the rest, against ncu's 10.93. One part per call, reading NVML
only (nothing is set):

    python3 gpu_check_power.py kprof     # the matmul through kprof, one and eight per region, cold and warm; 16 cold
    python3 gpu_check_power.py burst     # 40 matmuls back to back by events; NVML every 2 ms, then 1 ms after
    python3 gpu_check_power.py paced     # pairs of matmuls, with and without waiting for NVML's reasons to clear
    python3 gpu_check_power.py rest      # runs of 2 (or 8) matmuls with 0-88 ms of idle between them
    python3 gpu_check_power.py ncu-target  # ten matmuls back to back in the NVTX range "ten", for ncu
    python3 gpu_check_power.py kprof-mlp   # ten bf16 MLP layers (two 8192x8192x16384 GEMMs and a GELU each,
                                           # ~70 ms) in one region through kprof, warm and cold
    python3 gpu_check_power.py ncu-mlp     # the same region once in the NVTX range "mlp", for ncu
    python3 gpu_check_power.py kprof-fp32  # twelve fp32 matmuls 8192 (~258 ms, at the 700 W cap) per region
                                           # through kprof: per-kernel values, energy, reasons
    python3 gpu_check_power.py ncu-fp32    # ten of them in the NVTX range "fp32", for ncu

Call 3 of session 21 recorded an earlier form of the ``kprof`` part: one matmul per region, with
the thermal guard on and off, and the SM clock, reasons, power and guard wait of every run.
"""

import ctypes
import json
import statistics
import sys
import time
import warnings

import torch

POWER_BITS = 0x4 | 0x8 | 0x20 | 0x40 | 0x80  # SW power cap, HW slowdown, SW/HW thermal, power brake


def emit(**kw):
    print("POWER " + json.dumps(kw), flush=True)


class Nvml:
    """NVML through ctypes: the SM clock, the clock-event reasons and the power draw of GPU 0."""

    def __init__(self):
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        assert self.lib.nvmlInit_v2() == 0
        self.dev = ctypes.c_void_p()
        assert self.lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(self.dev)) == 0
        self.reasons_fn = getattr(self.lib, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            self.lib.nvmlDeviceGetCurrentClocksThrottleReasons

    def read(self):
        clk, mw, r = ctypes.c_uint(), ctypes.c_uint(), ctypes.c_ulonglong()
        self.lib.nvmlDeviceGetClockInfo(self.dev, 1, ctypes.byref(clk))  # NVML_CLOCK_SM
        self.lib.nvmlDeviceGetPowerUsage(self.dev, ctypes.byref(mw))
        self.reasons_fn(self.dev, ctypes.byref(r))
        return clk.value, mw.value / 1000.0, r.value


def matmul():
    a = torch.randn(16384, 16384, device="cuda", dtype=torch.bfloat16)
    return lambda: a @ a


def durations(bench):
    """`bench().raw()` with every warning recorded: its `gpu__time_duration.sum` rows and the
    warnings' texts."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = bench().raw()
    return df[df["Metric"] == "gpu__time_duration.sum"], [str(m.message) for m in caught]


def columns(d, names):
    """The condition columns `names` that the rows `d` have, as lists (numbers as floats)."""
    return {c: [x if isinstance(x, str) else float(x) for x in d[c]] for c in names if c in d}


def nvtx_target(name, f, n):
    """For ncu: `f` once, a second of idle, then `n` calls of `f` in the NVTX range `name`."""
    f()
    torch.cuda.synchronize()
    time.sleep(1.0)
    torch.cuda.nvtx.range_push(name)
    for _ in range(n):
        f()
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()


def kprof_part(runs="10"):
    """The matmul through kprof in default settings (cold), then warm, one matmul per region and
    eight in a row per region: per run value, SM clock, reasons; and the process's total rest."""
    import kprof

    f = matmul()
    f()
    torch.cuda.synchronize()
    cases = (("one", 1, "all"), ("eight", 8, "all"), ("one_warm", 1, "none"), ("eight_warm", 8, "none"),
             # Since session 22: 16 per region (~180 ms: rested, runs under 200 ms rest), 24 (~265 ms:
             # a run that long by itself goes back to back once judged long).
             ("sixteen", 16, "all"), ("twentyfour", 24, "all"))
    for case, n, cache in cases:
        @kprof.analyze.kernel(runs=int(runs), verbosity=0, cache_control=cache)
        def bench():
            with kprof.annotate("r"):
                for _ in range(n):
                    f()

        t0 = time.perf_counter()
        d, caught = durations(bench)
        wall = time.perf_counter() - t0
        vals = [float(v) / n for v in d["Value"]]
        cost = kprof._core.counter_cost()
        emit(part="kprof", case=case, per_kernel_ns=vals, median=statistics.median(vals), wall_s=round(wall, 3),
             gpu_rest_s=cost.get("gpu_rest_s"), source=sorted(set(d["DurationSource"])),
             **columns(d, ("SMClockMHz", "ThrottleReasons", "Throttled")),
             warnings=[m[:200] for m in caught if "energy" not in m][:3])
        time.sleep(1.0)


def burst_part():
    nv = Nvml()
    f = matmul()
    f()
    torch.cuda.synchronize()
    time.sleep(2.0)
    emit(part="burst", what="idle before", nvml=nv.read())
    pairs = []
    t0 = time.perf_counter()
    for _ in range(40):  # ~0.45 s of matmuls back to back
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        pairs.append((a, b))
    polls = []
    while not pairs[-1][1].query():
        polls.append((round(time.perf_counter() - t0, 4),) + nv.read())
        time.sleep(0.002)
    t_end = time.perf_counter()
    after = []
    while time.perf_counter() - t_end < 0.4:
        after.append((round(time.perf_counter() - t_end, 4),) + nv.read())
        time.sleep(0.001)
    emit(part="burst", ms=[round(a.elapsed_time(b), 3) for a, b in pairs])
    emit(part="burst", during=polls[::5])
    emit(part="burst", after=after[::5])
    first_clear = next((t for t, _, _, r in after if not r & POWER_BITS), None)
    emit(part="burst", first_clear_s=first_clear)


def paced_part():
    nv = Nvml()
    f = matmul()
    f()
    torch.cuda.synchronize()
    for wait_for_clear in (False, True, False, True):
        vals, waits = [], []
        for _ in range(12):
            t0 = time.perf_counter()
            while wait_for_clear and nv.read()[2] & POWER_BITS and time.perf_counter() - t0 < 1.0:
                time.sleep(0.002)
            waits.append(round(time.perf_counter() - t0, 4))
            # What one kprof run does: a timing pass, then a counter pass of the same work.
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            f()
            a.record()
            f()
            b.record()
            b.synchronize()
            vals.append(round(a.elapsed_time(b), 3))
        emit(part="paced", wait_for_clear=wait_for_clear, ms=vals, median=statistics.median(vals), waits_s=waits)


def rest_part():
    """Runs of K matmuls back to back (K=2: a timing pass and a counter pass of one; K=8) with S ms
    of idle GPU after each: which idle keeps every run at the unthrottled time?"""
    f = matmul()
    f()
    torch.cuda.synchronize()
    for k in (2, 8):
        for rest_ms in (0, 5, 11, 22, 44, 88):
            time.sleep(1.0)
            runs = []
            for _ in range(15 if k == 2 else 6):
                evs = [torch.cuda.Event(enable_timing=True) for _ in range(k + 1)]
                evs[0].record()
                for i in range(k):
                    f()
                    evs[i + 1].record()
                evs[-1].synchronize()
                runs.append([round(evs[i].elapsed_time(evs[i + 1]), 3) for i in range(k)])
                time.sleep(rest_ms / 1000.0)
            last = [r[-1] for r in runs]
            emit(part="rest", k=k, rest_ms=rest_ms, last_of_run=last, median_last=statistics.median(last[3:]),
                 max_all=max(max(r) for r in runs[3:]))


def ncu_target():
    nvtx_target("ten", matmul(), 10)


def mlp():
    """Ten layers of a bf16 MLP (8192 tokens, 8192 -> 16384 -> 8192, GELU between): 30 kernels, about
    70 ms of tensor-core work back to back, a region long enough to reach the power cap."""
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    w1 = torch.randn(8192, 16384, device="cuda", dtype=torch.bfloat16) / 90.0
    w2 = torch.randn(16384, 8192, device="cuda", dtype=torch.bfloat16) / 128.0

    def region():
        h = x
        for _ in range(10):
            h = torch.nn.functional.gelu(h @ w1) @ w2
        return h
    return region


def kprof_mlp_part(runs="6"):
    """The MLP region through kprof in default settings, warm then cold: the region's value per run
    (the sum of its kernels), the SM clock and reasons per run, the process's rests."""
    import kprof

    f = mlp()
    f()
    torch.cuda.synchronize()
    for case, cache in (("mlp_warm", "none"), ("mlp_cold", "all")):
        @kprof.analyze.kernel(runs=int(runs), verbosity=0, cache_control=cache)
        def bench():
            with kprof.annotate("mlp"):
                f()

        d, caught = durations(bench)
        vals = [float(v) for v in d["Value"]]
        emit(part="kprof", case=case, ns=vals, median=statistics.median(vals),
             gpu_rest_s=kprof._core.counter_cost().get("gpu_rest_s"), source=sorted(set(d["DurationSource"])),
             **columns(d, ("SMClockMHz", "Throttled")),
             warnings=[m[:200] for m in caught if "energy" not in m][:3])
        time.sleep(1.0)


def fp32_matmul():
    a = torch.randn(8192, 8192, device="cuda")
    return lambda: a @ a


def kprof_fp32_part(runs="10"):
    """Twelve fp32 matmuls 8192 per region through kprof in default settings (the energy row's
    work): each run's value per kernel, EnergyMilliJ, PowerW, the reasons, the process's rests."""
    import kprof

    f = fp32_matmul()
    f()
    torch.cuda.synchronize()

    @kprof.analyze.kernel(runs=int(runs), verbosity=0)
    def bench():
        with kprof.annotate("r"):
            for _ in range(12):
                f()

    d, caught = durations(bench)
    vals = [float(v) / 12 for v in d["Value"]]
    emit(part="kprof", case="fp32_twelve", per_kernel_ns=vals, median=statistics.median(vals),
         gpu_rest_s=kprof._core.counter_cost().get("gpu_rest_s"), source=sorted(set(d["DurationSource"])),
         **columns(d, ("EnergyMilliJ", "PowerW", "Throttled", "ThrottleReasons")),
         warnings=[m[:300] for m in caught][:3])


def ncu_fp32():
    nvtx_target("fp32", fp32_matmul(), 10)


def ncu_mlp():
    nvtx_target("mlp", mlp(), 1)


if __name__ == "__main__":
    {"kprof": lambda: kprof_part(*sys.argv[2:]), "burst": burst_part, "paced": paced_part, "rest": rest_part,
     "ncu-target": ncu_target, "kprof-mlp": lambda: kprof_mlp_part(*sys.argv[2:]), "ncu-mlp": ncu_mlp,
     "kprof-fp32": lambda: kprof_fp32_part(*sys.argv[2:]), "ncu-fp32": ncu_fp32}[sys.argv[1]]()
