"""Does a power cap slow long kernels in kprof's back-to-back runs, where ncu (which idles between
the kernels it profiles) does not? 2026-12-03 saw a bf16 matmul 16384 read 10.93 ms in kprof's
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
    python3 gpu_check_power.py instant     # NVML's instantaneous power (field 186) polled every 0.5 ms
                                           # under back-to-back work of six kinds, a lone 11 ms
                                           # matmul and the seed sweep's pace: how often it moves,
                                           # how fast it follows the work, which work nears the cap

The 2026-12-03 recording `2026-12-03-burst-waits-and-kprof-before-rests.log` holds an earlier form of the ``kprof`` part: one matmul per region, with
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
             # Since 2026-12-03: 16 per region (~180 ms: rested, runs under 200 ms rest), 24 (~265 ms:
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


class _FieldValue(ctypes.Structure):
    _fields_ = [("fieldId", ctypes.c_uint), ("scopeId", ctypes.c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", ctypes.c_int), ("nvmlReturn", ctypes.c_int),
                ("value", ctypes.c_ulonglong)]


class InstantPower(Nvml):
    """`Nvml` plus the instantaneous power field (NVML_FI_DEV_POWER_INSTANT = 186) with NVML's
    timestamp of its sample, and the enforced power limit."""

    def instant(self):
        fv = _FieldValue(fieldId=186)
        rc = self.lib.nvmlDeviceGetFieldValues(self.dev, 1, ctypes.byref(fv))
        if rc != 0 or fv.nvmlReturn != 0:
            return None, None
        raw = fv.value
        if fv.valueType == 0:  # double
            v = ctypes.cast(ctypes.pointer(ctypes.c_ulonglong(raw)), ctypes.POINTER(ctypes.c_double)).contents.value
        else:
            v = float(raw & 0xFFFFFFFF) if fv.valueType in (1, 5) else float(raw)
        return v / 1000.0, fv.timestamp

    def limit_w(self):
        mw = ctypes.c_uint()
        self.lib.nvmlDeviceGetEnforcedPowerLimit(self.dev, ctypes.byref(mw))
        return mw.value / 1000.0


def _poll(nv, stop, out):
    t0 = time.perf_counter()
    while not stop.is_set():
        w, ts = nv.instant()
        clk, avg_w, reasons = nv.read()
        out.append((time.perf_counter() - t0, w, ts, avg_w, reasons, clk))
        time.sleep(0.0005)


def instant_part():
    import threading

    nv = InstantPower()
    emit(part="instant", limit_w=nv.limit_w(), first=nv.instant())
    bf = matmul()
    m8 = torch.randn(8192, 8192, device="cuda")
    m4 = torch.randn(4096, 4096, device="cuda")
    m1 = torch.randn(1024, 1024, device="cuda")
    big = torch.randn(64 * 1024 * 1024, device="cuda")
    small = torch.randn(1 << 20, device="cuda")
    works = {"bf16_mm16384": bf, "fp32_mm8192": lambda: m8 @ m8, "fp32_mm4096": lambda: m4 @ m4,
             "fp32_mm1024": lambda: m1 @ m1, "x2_64M": lambda: big * 2, "mul_1M": lambda: small * 1.0001}
    for f in works.values():
        f()
    torch.cuda.synchronize()
    samples, stop = [], threading.Event()
    th = threading.Thread(target=_poll, args=(nv, stop, samples), daemon=True)
    th.start()
    t0 = time.perf_counter()
    marks = []

    def mark(name):
        torch.cuda.synchronize()
        marks.append((name, time.perf_counter() - t0))

    time.sleep(1.0)
    for name, f in works.items():
        mark("idle")
        time.sleep(1.0)
        mark(name)
        evs, t_start = [], time.perf_counter()
        while time.perf_counter() - t_start < 1.5:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            f()
            b.record()
            evs.append((a, b))
            if len(evs) % 8 == 0:
                b.synchronize()  # keep the queue short: the host's time follows the GPU's
        torch.cuda.synchronize()
        ms = [a.elapsed_time(b) for a, b in evs]
        k = max(1, len(ms) // 10)
        emit(part="instant", work=name, kernels=len(ms), ms_by_tenth=[round(statistics.median(ms[i:i + k]), 4)
                                                                      for i in range(0, len(ms), k)][:10])
    mark("idle")
    time.sleep(1.0)
    # One 11 ms matmul on an idle GPU, then five, then the seed sweep's pace: 4 fp32 matmuls 4096
    # (about 10 ms), a rest as long, 30 times.
    for n in (1, 5):
        mark(f"lone_bf16_x{n}")
        for _ in range(n):
            bf()
        mark("idle")
        time.sleep(0.5)
    mark("seed_pace")
    after_sync = []
    for _ in range(30):
        for _ in range(4):
            m4 @ m4
        torch.cuda.synchronize()
        after_sync.append(nv.instant()[0])
        time.sleep(0.01)
    mark("idle")
    time.sleep(0.5)
    mark("end")
    stop.set()
    th.join()
    emit(part="instant", seed_pace_read_after_sync_w=[round(w, 1) for w in after_sync if w is not None])
    # Per phase: samples, distinct NVML timestamps and their spacing, instant power's median / max.
    for (name, t_a), (_, t_b) in zip(marks, marks[1:]):
        ph = [s for s in samples if t_a <= s[0] < t_b and s[1] is not None]
        if not ph:
            continue
        stamps = sorted({s[2] for s in ph})
        gaps = [(b - a) / 1000.0 for a, b in zip(stamps, stamps[1:])]
        ws = [s[1] for s in ph]
        emit(part="instant", phase=name, t0_s=round(t_a, 4), len_s=round(t_b - t_a, 4), samples=len(ph),
             stamps=len(stamps), stamp_gap_ms_median=round(statistics.median(gaps), 3) if gaps else None,
             w_median=round(statistics.median(ws), 1), w_max=round(max(ws), 1),
             avg_w_last=ph[-1][3], reasons=sorted({s[4] for s in ph}), sm_mhz=sorted({s[5] for s in ph})[:6])
    # The trace itself where the value changed (time s, W, NVML's stamp relative, 1 s average W,
    # reasons), for the lone matmuls and the first 0.3 s of each back-to-back phase.
    keep = []
    for name, t_a in marks:
        if name in ("idle", "end"):
            continue
        last = None
        for s in samples:
            if t_a - 0.02 <= s[0] < t_a + (0.3 if name != "seed_pace" else 0.15) and s[1] != last:
                keep.append((name, round(s[0] - t_a, 4), round(s[1] or 0, 1), s[3], s[4]))
                last = s[1]
    emit(part="instant", trace=keep)


def ncu_fp32():
    nvtx_target("fp32", fp32_matmul(), 10)


def ncu_mlp():
    nvtx_target("mlp", mlp(), 1)


if __name__ == "__main__":
    {"kprof": lambda: kprof_part(*sys.argv[2:]), "burst": burst_part, "paced": paced_part, "rest": rest_part,
     "ncu-target": ncu_target, "kprof-mlp": lambda: kprof_mlp_part(*sys.argv[2:]), "ncu-mlp": ncu_mlp,
     "kprof-fp32": lambda: kprof_fp32_part(*sys.argv[2:]), "ncu-fp32": ncu_fp32,
     "instant": instant_part}[sys.argv[1]]()
