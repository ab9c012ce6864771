"""Clock and cache-state probes of gpu_check_truth.py: matmuls and small adds after a flush, after
idle or busy time, paced as ncu paces them, with the GPU's clocks beside the durations (parts
``mmcond``, ``mm-clock``, ``cold-idle`` and the ``clock-state`` family)."""

import json
import os
import statistics
import time
import warnings

import torch

from gpu_check_truth_cases import Cases, emit


def mm_conditions():
    """What makes an fp32 matmul 1024/2048 slower under ncu than in a benchmark loop: CUDA events
    around one matmul after an L2 flush (read or write), with and without the GPU idle before it."""
    c = Cases()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for n in (1024, 2048):
        a, b = c.mats[n]
        for how in ("read", "write", "none"):
            for idle_ms in (0, 2, 20):
                v = []
                for i in range(23):
                    if how == "read":
                        flush.sum(dtype=torch.int32)
                    elif how == "write":
                        flush.zero_()
                    if idle_ms:
                        torch.cuda.synchronize()
                        time.sleep(idle_ms / 1e3)
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    a @ b
                    e1.record()
                    e1.synchronize()
                    if i >= 3:
                        v.append(e0.elapsed_time(e1) * 1e6)
                emit(part="mmcond", case=f"mm{n}", flush=how, idle_ms=idle_ms, ns=statistics.median(v))


CLOCK_METRICS = ["gpu__time_duration.sum", "sm__cycles_elapsed.max", "sm__cycles_elapsed.avg.per_second",
                 "gpc__cycles_elapsed.max", "dram__bytes_read.sum", "dram__bytes_write.sum"]


def mm_clock():
    """fp32 matmul 1024/2048 and a one-block kernel in kprof (cold L2, default replay) with the
    elapsed cycles, SM clock and DRAM bytes beside gpu__time_duration: is ncu's longer duration
    more cycles or a lower clock?
    ``MMCLOCK_OPTS`` (a JSON object of `kprof.analyze.kernel` keywords, e.g.
    ``{"l2_flush": "discard"}``, or ``{"metrics": ["gpu__time_duration.sum"]}`` for durations
    alone) runs a variant; rows carry it. ``MMCLOCK_CASES``: the cases (names of `Cases.eager`)."""
    import kprof

    c = Cases()
    opts = json.loads(os.environ.get("MMCLOCK_OPTS") or "{}")
    kw = {"metrics": CLOCK_METRICS, **opts}
    for name in (os.environ.get("MMCLOCK_CASES") or "mm1024 mm2048 tiny1").split():
        c.eager(name)

        @kprof.analyze.kernel(runs=10, thermal_mode="off", verbosity=0, **kw)
        def mm():
            with kprof.annotate("r"):
                c.eager(name)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = mm().raw()
        for m in kw["metrics"]:
            v = [float(x) for x in df[df["Metric"] == m]["Value"]]
            emit(part="mmclock", case=name, metric=m, median=statistics.median(v) if v else None, values=v,
                 opts=opts)


def cold_idle():
    """Does the GPU's idle time between the cold flush and a short kernel change its
    gpu__time_duration? kprof flushes right before each kernel of its counter pass (a context
    synchronization, then the launch); ncu idles for its own host work between its flush and the
    kernel. Here kprof runs warm (`cache_control="none"`) and the benchmark itself empties the L2
    (a read of 256 MB) outside the region, synchronizes and sleeps IDLE ms before the region's
    kernel; one ``coldidle`` row per case and idle time, and kprof's own cold run beside them.
    Cases: ``MMCLOCK_CASES`` (default: adds on 1 and 256K floats, ``y * 1.0001``, the matmul 1024)."""
    import kprof

    c = Cases()
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    cases = (os.environ.get("MMCLOCK_CASES") or "tiny1 tiny262144 k2us mm1024").split()
    for name in cases:
        c.eager(name)
        for idle_ms in (None, 0.0, 0.5, 2.0, 10.0):

            @kprof.analyze.kernel(runs=10, thermal_mode="off", verbosity=0,
                                  cache_control="all" if idle_ms is None else "none")
            def bench():
                if idle_ms is not None:
                    flush.sum(dtype=torch.int32)
                    torch.cuda.synchronize()
                    if idle_ms:
                        time.sleep(idle_ms / 1e3)
                with kprof.annotate("r"):
                    c.eager(name)

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                df = bench().raw()
            v = [float(x) for x in df["Value"]]
            emit(part="coldidle", case=name, idle_ms=idle_ms, median=statistics.median(v), values=v,
                 how="kprof cold" if idle_ms is None else "flush in the benchmark, then idle")


CLOCK_STATE_METRICS = ["gpu__time_duration.sum", "gpc__cycles_elapsed.max", "gpc__cycles_elapsed.avg.per_second",
                       "sys__cycles_elapsed.avg.per_second", "lts__cycles_elapsed.avg.per_second",
                       "dram__cycles_elapsed.avg.per_second"]


# The clock-state parts' add: 64K floats (64 blocks) unless SMALL_ADD_FLOATS says otherwise (1: one block).
SMALL_ADD_FLOATS = int(os.environ.get("SMALL_ADD_FLOATS", "65536"))


def small_add_means(small, launches, metrics=("gpu__time_duration.sum",), paced=False):
    """kprof's means per kernel of `launches` warm launches of the 64-block add on `small` in one
    region, 10 runs: {metric: [value of each run]}. `paced`: a synchronization and 5 ms of idle
    GPU before each launch (ncu's pace: its host work between profiled kernels)."""
    import kprof

    @kprof.analyze.kernel(runs=10, thermal_mode="off", verbosity=0, cache_control="none",
                          metrics=list(metrics), combine_kernel_metrics="mean")
    def bench():
        with kprof.annotate("r"):
            for _ in range(launches):
                if paced:
                    torch.cuda.synchronize()
                    time.sleep(0.005)
                small.add_(1.0)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = bench().raw()
    return {m: [float(x) for x in df[df["Metric"] == m]["Value"]] for m in metrics}


def clock_state():
    """Why does a kernel of fewer blocks than SMs read shorter in kprof than in ncu? The 2026-12-03
    ncu run of 500 adds on 64K floats (64 blocks) read the first ~50 at kprof's value and the rest
    7 % longer. Here kprof times that add warm (means per kernel): 100 launches back to back
    (kprof's counter pass), and 50 launches paced as ncu paces them, with durations alone and
    with the clocks of the GPC, SYS, L2 and DRAM domains. One ``clockstate`` row per variant and
    metric."""
    small = torch.zeros(SMALL_ADD_FLOATS, device="cuda")
    small.add_(1.0)
    torch.cuda.synchronize()
    for paced in (False, True):
        for metrics in (["gpu__time_duration.sum"], CLOCK_STATE_METRICS):
            try:
                values = small_add_means(small, 50 if paced else 100, metrics, paced)
            except Exception as e:  # noqa: BLE001  (an unknown metric is a row, not the end)
                emit(part="clockstate", paced=paced, metrics=len(metrics), error=str(e)[:400])
                continue
            for m, v in values.items():
                emit(part="clockstate", paced=paced, metrics=len(metrics), metric=m,
                     median=statistics.median(v) if v else None, values=v)


def clock_state_work():
    """The 64-block add (100 launches back to back, warm, durations and clocks, means per kernel)
    in one process: on its own tensor at the start; on the tensor of gpu_check_unseen's set 2 once
    that set's inputs are allocated; right after 2 s of bf16 matmuls 8192; after 3 s idle. Does
    the add's duration move with the process's state (set 2's ``many500`` read 1.90 and 1.97 us
    per kernel in two processes, ncu 1.86-2.08 within one), and with which clock?"""
    from gpu_check_unseen_workloads import Work

    def measure(state, small):
        values = small_add_means(small, 100, CLOCK_STATE_METRICS)
        emit(part="clockwork", state=state, **{m: statistics.median(v) for m, v in values.items()})

    own = torch.zeros(SMALL_ADD_FLOATS, device="cuda")
    measure("start", own)
    w = Work("2")
    measure("set2-allocated, own tensor", own)
    measure("set2-allocated, set2 tensor", w.small)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 2.0:
        w.bf @ w.bf
        torch.cuda.synchronize()
    measure("after 2 s of bf16 matmuls", w.small)
    time.sleep(3.0)
    measure("after 3 s idle", w.small)
    measure("after 3 s idle, own tensor", own)


def clock_state_counts(*counts):
    """The 64-block add warm, durations alone, in regions of COUNTS launches (default 50 100 500)
    back to back, one process: does the per-kernel value depend on the region's size (the counter
    pass's number of ranges)? One ``clockcount`` row per count (mean per kernel)."""
    small = torch.zeros(SMALL_ADD_FLOATS, device="cuda")
    for n in [int(c) for c in counts] or [50, 100, 500]:
        v = small_add_means(small, n)["gpu__time_duration.sum"]
        emit(part="clockcount", launches=n, median=statistics.median(v), values=v)


def clock_state_target(launches="100"):
    """For ncu (``--nvtx-include busy.*/ --nvtx-include idle.*/``): LAUNCHES (100) launches of the
    64-block add right after 0.3 s of matmuls (``busy.i``), then after 2 s of idle GPU
    (``idle.i``), twice."""
    small = torch.zeros(SMALL_ADD_FLOATS, device="cuda")
    a = torch.randn(4096, 4096, device="cuda")
    small.add_(1.0)
    torch.cuda.synchronize()
    for i in range(2):
        for what in ("busy", "idle"):
            if what == "busy":
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < 0.3:
                    a @ a
                    torch.cuda.synchronize()
            else:
                time.sleep(2.0)
            torch.cuda.nvtx.range_push(f"{what}.{i}")
            for _ in range(int(launches)):
                small.add_(1.0)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()
