"""GPU check of the short-kernel and graph durations through the Python door (the wheel), on the H200. One part per call:

    python3 gpu_check_truth.py refs          # CUDA events, no profiler loaded in this process
    python3 gpu_check_truth.py kprof         # kprof in default settings, every case
    python3 gpu_check_truth.py case CASE [SOURCE]  # one case in this process (LATE_CAPTURE: after a first
                                             # benchmark; CAPTURE_AFTER_DECORATION: graphs captured after decorating)
    python3 gpu_check_truth.py step6         # seed step 6 alone (SM and DRAM %, default replay)
    python3 gpu_check_truth.py ncu-target    # the eager cases in NVTX ranges, for ncu
    python3 gpu_check_truth.py sweep-kprof   # the seed's matmul sweep (3 configs x 10 runs), wall time
    python3 gpu_check_truth.py sweep-nsight  # the same sweep with nsight-python 0.9.6 (relaunches under ncu)
    python3 gpu_check_truth.py sweep-plain   # the same work without a profiler
    python3 gpu_check_truth.py chains        # regions of 40, 200 and 300 kernels, durations from the counters
    python3 gpu_check_truth.py graph-probe [CASE] [late]  # events inside kprof's benchmark of a graph
    python3 gpu_check_truth.py mm-clock      # matmul 1024/2048, a one-block kernel: cycles, SM clock, DRAM bytes (MMCLOCK_OPTS)
    python3 gpu_check_truth.py cold-idle     # short kernels after a flush and an idle GPU (MMCLOCK_CASES)
    python3 gpu_check_truth.py clock-state   # a 64-block add in kprof: back to back, paced as ncu paces it; clocks
    python3 gpu_check_truth.py clock-state-target [N]  # the same add (N launches a range) after busy and idle seconds, for ncu
    python3 gpu_check_truth.py clock-state-counts [N...]  # the same add in regions of N launches (50 100 500)
    python3 gpu_check_truth.py clock-state-work    # the same add as the process's state changes (allocations, heat, idle)
    python3 gpu_check_truth.py graph-warmth [kprof]  # the same graphs at start, after 1 s of matmuls, idle (then attached, released)
    python3 gpu_check_truth.py torch-cupti   # a plain torch process: libcupti mapped? graphs before/after a raw cuptiFinalize
    python3 gpu_check_truth.py graph-blocked # graphs captured before kprof: back-to-back, idle, behind a spin kernel or a stream wait
    python3 gpu_check_truth.py graph-state   # graph replays by events before, during and after kprof's counters
    python3 gpu_check_truth.py release-state [keep]  # graphs by events before kprof, attached, after release_counters
    python3 gpu_check_truth.py launch-states # host cost per launch in each state kprof leaves a process in
    python3 gpu_check_truth.py launch-control # the same measurements in a process without a profiler (drift)
    python3 gpu_check_truth.py sweep-detail  # the default sweep with the counter cost at every closure call

Each result is one line ``TRUTH {json}``; gpu-checks/gpu-check-truth.sh gathers them and
gpu-checks/truth_verdicts.py judges them. Cases (torch, fp32 unless said):

* graph60: a CUDA graph of 60 elementwise kernels on 1M floats (30 x (mul, add)), replayed in one
  region, warm L2 (cache_control="none"): reference CUDA events around the replay without a profiler;
* graph3big: a graph of an fp32 matmul 4096 and two elementwise ops over 256 MB: same reference;
* graph2stream: a graph captured from two streams (30 kernels on each), same reference;
* mixed: 10 eager kernels, graph60, 10 eager kernels in one region (eager kernels: ncu; graph: events);
* eager60: the 60 kernels launched eagerly in one region (ncu: sum of gpu__time_duration);
* k2us / k20us / k2ms: one elementwise kernel on 1M / 16M floats, one fp32 matmul 4096 (ncu);
* mm1024..mm8192, x2_64M: long kernels, cold cache (ncu with its cache control);
* step6: the seed's step 6 (fp16 matmul 4096 and x * 2 over 64M floats, SM and DRAM throughput);
* energy: fp32 matmul 8192, energy per run vs mean power x duration;
* launch: host cost per launch (10,000 tiny launches in one region) with and without kprof.
"""

import os
import statistics
import sys
import time
import warnings

import torch

from gpu_check_truth_cases import GRAPHS, LONG, N_BIG, SHORT, Cases, emit, events, y_times_2_bench
from gpu_check_truth_launch import launch_control, launch_cost, launch_states, pause_check
from gpu_check_truth_sweep import sweep_detail, sweep_kprof, sweep_nsight, sweep_plain
from gpu_check_truth_graphs import (
    graph_blocked, graph_probe, graph_state, graph_warmth, release_state, torch_cupti_state,
)
from gpu_check_truth_clocks import (
    clock_state, clock_state_counts, clock_state_target, clock_state_work, cold_idle, mm_clock, mm_conditions,
)


def refs():
    c = Cases()
    for g in GRAPHS:
        graph = c.capture(g)
        emit(part="refs", case=g, ns=events(graph.replay), what="CUDA events around one replay, no profiler")
    emit(part="refs", case="mixed", ns=events(lambda: c.eager("mixed")), what="events around 10 eager + graph60 + 10 eager")
    # In-stream time of the 1M-float elementwise kernel: a graph of 600, per kernel.
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c.chain(c.y, 300)
    emit(part="refs", case="instream_1M", ns=events(g.replay) / 600, what="graph of 600 / 600")
    for name in SHORT[:-1] + LONG:
        emit(part="refs", case=name, ns=events(lambda: c.eager(name)), what="events around eager launches")


def kprof_case(name, source=None):
    """One case through kprof in default settings (or with duration_source=SOURCE, or the
    CUDA-events backend for SOURCE "cuda-events"), in its own process."""
    import kprof

    c = Cases()
    if os.environ.get("LATE_CAPTURE"):
        # Start kprof's CUPTI session before the graph is captured and instantiated.
        y_times_2_bench(c, duration_source="records")()
    cold = name in LONG
    # SOURCE "cuda-events": the CUDA-events backend (no CUPTI in the process), else a duration_source.
    extra = {"backend": source} if source == "cuda-events" else {"duration_source": source} if source else {}

    def capture():
        if name in GRAPHS or name == "mixed":
            c.capture("graph60" if name == "mixed" else name)

    # CAPTURE_AFTER_DECORATION: the graph is captured after the benchmark is decorated (as in a
    # script that decorates at module level), else before.
    if not os.environ.get("CAPTURE_AFTER_DECORATION"):
        capture()

    @kprof.analyze.kernel(runs=10, cache_control="all" if cold else "none", thermal_mode="off", verbosity=0, **extra)
    def bench():
        with kprof.annotate("r"):
            graph = c.graphs.get(name)
            if graph is not None:
                graph.replay()
            else:
                c.eager(name)

    if os.environ.get("CAPTURE_AFTER_DECORATION"):
        capture()

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = bench()
    wall = time.perf_counter() - t0
    df = res.raw()
    vals = [float(v) for v in df["Value"]]
    src = sorted(set(df["DurationSource"])) if "DurationSource" in df else []
    kern = str(df["Kernel"].iloc[0])[:100] if len(df) else ""
    emit(part=f"kprof-{source}" if source else "kprof", case=name, ns=statistics.median(vals), values=vals,
         graph_trace=os.environ.get("KPROF_GRAPH_TRACE", ""),
         wall_s=wall, source=src, kernel=kern, late=bool(os.environ.get("LATE_CAPTURE")),
         after_decoration=bool(os.environ.get("CAPTURE_AFTER_DECORATION")),
         warnings=[str(w.message)[:300] for w in caught][:4])


def step6_part(c=None):
    """Seed step 6: SM and DRAM throughput in the default replay (application), 3 runs each of
    the fp16 matmul 4096 and `x * 2` over 64M floats; one `step6` row per case and metric."""
    import kprof

    c = c or Cases()
    mets = ["sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"]
    for name, fn in (("fp16_mm4096", lambda: c.h16 @ c.h16), ("x2_64M", lambda: c.big * 2.0)):
        @kprof.analyze.kernel(runs=3, metrics=mets, thermal_mode="off", verbosity=0)
        def step6():
            with kprof.annotate("r"):
                fn()

        t0 = time.perf_counter()
        df = step6().raw()
        wall = time.perf_counter() - t0
        for m in mets:
            v = [float(x) for x in df[df.Metric == m]["Value"]]
            emit(part="step6", case=name, metric=m, value=statistics.median(v), values=v, wall_s=wall)


def kprof_part():
    import kprof

    c = Cases()
    step6_part(c)
    # Energy per run of the fp32 matmul 8192 (conditions on by default).
    a, b = c.mats[8192]

    @kprof.analyze.kernel(runs=10, thermal_mode="off", verbosity=0)
    def energy():
        with kprof.annotate("r"):
            a @ b

    emit_energy("energy", "mm8192", energy)

    # Runs longer than the counter's update period: 12 matmuls 8192 per run (about 260 ms).
    @kprof.analyze.kernel(runs=10, thermal_mode="off", verbosity=0)
    def energy_long():
        with kprof.annotate("r"):
            for _ in range(12):
                a @ b

    emit_energy("energy-long", "mm8192x12", energy_long)


def emit_energy(part, case, bench):
    """Runs `bench` and emits its per-run duration, power and energy columns with the first
    warnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = bench().raw()
    cols = {k: [float(x) for x in df[k]] for k in ("Value", "PowerW", "EnergyMilliJ") if k in df}
    emit(part=part, case=case, columns=cols, warnings=[str(w.message)[:300] for w in caught][:6])


#: In-place adds on 1, 4K, 64K, 256K and 1M floats: 1, 8, 128, 256 and 1024 blocks of 128 threads.
SMALL = ["tiny1", "tiny4096", "tiny65536", "tiny262144", "tiny1048576"]


def ncu_target():
    c = Cases()
    for name in SMALL:  # their tensors, outside the ranges
        c.eager(name)
    torch.cuda.synchronize()
    for name in SHORT[:-1] + LONG + SMALL:
        for _ in range(3 if name == "eager60" else 5):
            torch.cuda.nvtx.range_push(name)
            c.eager(name)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()


def ncu_target_step6():
    """The seed's step 6 kernels in NVTX ranges, for ncu's application replay (re-runs this)."""
    h16 = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
    big = torch.randn(N_BIG, device="cuda")
    torch.cuda.synchronize()
    for name, fn in (("fp16_mm4096", lambda: h16 @ h16), ("s6_x2_64M", lambda: big * 2.0)):
        for _ in range(3):
            torch.cuda.nvtx.range_push(name)
            fn()
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()


def ncu_medians():
    """``ncu-medians CSV PART PROCESS METRICS``: one TRUTH row per (NVTX range, metric) of an ncu
    export (`--csv --page raw --nvtx`) with the median of its kernels' values; METRICS are
    comma-separated; kernels that made a small case's tensor (torch's fill) are left out."""
    import csv

    path, part, process, metrics = sys.argv[2:6]
    rows = [r for r in csv.DictReader(line for line in open(path) if not line.startswith("=="))
            if r.get("ID", "").isdigit() and "FillFunctor" not in r.get("Kernel Name", "")]
    nvtx = next((k for k in (rows[0] if rows else {}) if "Push/Pop_Range" in k), None)
    by = {}
    for r in rows:
        case = r[nvtx].split(":")[1] if nvtx else "?"  # '<pid>  "<default domain>:CASE:none:...'
        for m in metrics.split(","):
            if r.get(m):
                by.setdefault((case, m), []).append(float(r[m].replace(",", "")))
    for (case, m), v in sorted(by.items()):
        emit(part=part, case=case, metric=m, median=statistics.median(v), values=v, process=int(process))


def long_chains():
    """Regions of 40, 200 and 300 `x.mul_` kernels in default settings (application replay,
    durations from the counters): whether a counter pass holds more kernels than twice the
    session's first counter-data image (65 ranges). One `chain` row per length: the values, the
    duration sources, the first warnings and the counter cost so far."""
    import kprof

    x = torch.ones(1 << 20, device="cuda")
    for n in (40, 200, 300):
        @kprof.analyze.kernel(runs=5, cache_control="none", thermal_mode="off", verbosity=0)
        def bench():
            with kprof.annotate("chain"):
                for _ in range(n):
                    x.mul_(1.0001)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = bench().raw()
        emit(part="chain", kernels=n, values=[float(v) for v in df["Value"]],
             source=sorted(set(str(s) for s in df.get("DurationSource", []))),
             warnings=[str(m.message)[:300] for m in caught][:3], cost=kprof._core.counter_cost())


if __name__ == "__main__":
    if sys.argv[1] == "case":
        kprof_case(*sys.argv[2:])
        sys.exit(0)
    if sys.argv[1] == "release-state":
        release_state(*sys.argv[2:])
        sys.exit(0)
    if sys.argv[1] == "graph-probe":
        graph_probe(*sys.argv[2:])
        sys.exit(0)
    if sys.argv[1] == "sweep-kprof" and len(sys.argv) > 2:
        sweep_kprof(sys.argv[2])
        sys.exit(0)
    {
        "refs": refs,
        "kprof": kprof_part,
        "step6": step6_part,
        "launch": launch_cost,
        "pause": pause_check,
        "mmcond": mm_conditions,
        "ncu-target": ncu_target,
        "ncu-target-step6": ncu_target_step6,
        "sweep-kprof": sweep_kprof,
        "sweep-nsight": sweep_nsight,
        "sweep-plain": sweep_plain,
        "mm-clock": mm_clock,
        "cold-idle": cold_idle,
        "clock-state": clock_state,
        "clock-state-work": clock_state_work,
        "clock-state-target": lambda: clock_state_target(*sys.argv[2:]),
        "clock-state-counts": lambda: clock_state_counts(*sys.argv[2:]),
        "graph-blocked": graph_blocked,
        "torch-cupti": lambda: torch_cupti_state(*sys.argv[2:]),
        "graph-warmth": lambda: graph_warmth(*sys.argv[2:]),
        "ncu-medians": ncu_medians,
        "graph-state": graph_state,
        "release-state": release_state,
        "launch-states": launch_states,
        "launch-control": launch_control,
        "sweep-detail": sweep_detail,
        "chains": long_chains,
    }[sys.argv[1]]()
