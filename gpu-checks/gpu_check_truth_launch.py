"""Host cost per launch in gpu_check_truth.py: tiny launches timed in a plain loop and queued
behind a spin kernel, without kprof, inside its benchmarks and in each state it leaves a process
in (parts ``launch``, ``pause``, ``launch-states``, ``launch-control``)."""

import os
import statistics
import time
import warnings

import torch

from gpu_check_truth_cases import Cases, emit, graph_replay_bench, y_times_2_bench


def ns_per_launch(x, n=10000, reps=5):
    """Best host time per launch of `x.add_(1.0)` over `reps` loops of `n` launches, ns."""
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        best = min(best, (time.perf_counter() - t0) / n)
    torch.cuda.synchronize()
    return best * 1e9


SPIN_CYCLES = 40_000_000  # torch.cuda._sleep: about 20 ms at the H200's 1.98 GHz


def ns_per_launch_queued(x, n=500, reps=12):
    """Median host time per launch of ``x.add_(1.0)`` over ``reps`` loops of ``n`` launches that
    queue behind a ~20 ms spin kernel (``torch.cuda._sleep``): the launches' host cost alone,
    whatever the pace at which the GPU runs them, ns."""
    vals = []
    for _ in range(reps):
        torch.cuda.synchronize()
        torch.cuda._sleep(SPIN_CYCLES)
        t0 = time.perf_counter()
        for _ in range(n):
            x.add_(1.0)
        vals.append((time.perf_counter() - t0) / n * 1e9)
    torch.cuda.synchronize()
    return statistics.median(vals)


def launch_cost():
    """Host time per launch of a tiny kernel: plain (best of 5 loops before and 5 after), then
    inside a kprof region in default settings (best of the recorded runs); beside them the same
    launches queued behind a spin kernel (``ns_per_launch_queued``: host cost alone, medians)."""
    import kprof

    x = torch.ones(16, device="cuda")
    n = 10000
    ns_per_launch(x, n, reps=1)
    before = ns_per_launch(x, n)
    before_queued = ns_per_launch_queued(x)
    host, queued = [], []

    @kprof.analyze.kernel(runs=5, cache_control="none", thermal_mode="off", verbosity=0)
    def bench():
        with kprof.annotate("r"):
            t = time.perf_counter()
            for _ in range(n):
                x.add_(1.0)
            host.append((time.perf_counter() - t) / n * 1e9)
            q = ns_per_launch_queued(x, reps=2)
        if not kprof.in_counter_pass():
            queued.append(q)

    df = bench().to_dataframe()
    after = ns_per_launch(x, n)
    emit(part="launch", case="add_16", trace=os.environ.get("KPROF_KERNEL_TRACE", "concurrent"),
         plain_ns=min(before, after), plain_before_ns=before, plain_after_ns=after,
         kprof_ns=host, timing_pass_ns=min(host) if host else None,
         plain_queued_ns=before_queued, kprof_queued_ns=statistics.median(queued) if queued else None,
         launch_records=os.environ.get("KPROF_CUPTI_LAUNCH_RECORDS", "default"),
         region_ns=[float(v) for v in df["AvgValue"]])


def pause_check():
    """With KPROF_PAUSE_BETWEEN_BENCHMARKS=1 kprof traces no kernel between benchmarks: launches
    cost what they cost without it; a graph captured between two benchmarks is timed by its graph
    record in the next one (no crash); eager kernels are recorded again in the next benchmark."""
    import kprof

    c = Cases()
    x = torch.ones(16, device="cuda")
    before = ns_per_launch(x)
    y_times_2_bench(c, runs=3)()
    between = ns_per_launch(x)
    graph = graph_replay_bench(c.capture("graph60"))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = graph().raw()

    @kprof.analyze.kernel(runs=10, cache_control="none", thermal_mode="off", verbosity=0)
    def eager():
        with kprof.annotate("r"):
            c.eager("eager60")

    de = eager().raw()
    emit(part="pause", plain_before_ns=before, plain_between_ns=between,
         graph_ns=statistics.median(float(v) for v in df["Value"]), graph_kernel=str(df["Kernel"].iloc[0])[:40],
         eager60_ns=statistics.median(float(v) for v in de["Value"]),
         warnings=[str(w.message)[:200] for w in caught][:4])


def launch_states():
    """Host time per launch of ``x.add_(1.0)`` in each state kprof leaves a process in: before
    kprof, inside and after a benchmark with the records, inside and after one in default
    settings (the Range Profiler session open), after ``kprof.release_counters()``. Each value
    is ``[loop, queued]``: the best of 5 loops of 5,000 launches, and the median of loops of 500
    launches queued behind a spin kernel (inside a benchmark: every timing run). One
    ``launchstates`` row."""
    import kprof

    x = torch.ones(16, device="cuda")
    n = 5000
    ns_per_launch(x, n, reps=2)
    now = lambda: [ns_per_launch(x, n), ns_per_launch_queued(x)]  # noqa: E731
    out = {"plain_before": now()}

    def inside(**kw):
        loop, queued = [], []

        @kprof.analyze.kernel(runs=5, cache_control="none", thermal_mode="off", verbosity=0, **kw)
        def bench():
            with kprof.annotate("r"):
                t = time.perf_counter()
                for _ in range(n):
                    x.add_(1.0)
                t = (time.perf_counter() - t) / n * 1e9
                q = ns_per_launch_queued(x, reps=2)
            if not kprof.in_counter_pass():
                loop.append(t)
                queued.append(q)

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bench()
        return [min(loop), statistics.median(queued)]

    out["records_inside"] = inside(duration_source="records")
    out["after_records"] = now()
    out["auto_inside"] = inside()
    out["after_auto"] = now()
    kprof.release_counters()
    out["after_release"] = now()
    out["records_inside_after_release"] = inside(duration_source="records")
    emit(part="launchstates", env={k: v for k, v in os.environ.items() if k.startswith("KPROF_")}, **out)


def launch_control():
    """The drift of a process without any profiler: host time per launch (as ``launch_states``
    measures it, ``[loop, queued]``) 8 times over about as long as ``launch_states`` runs. One
    ``launchcontrol`` row."""
    x = torch.ones(16, device="cuda")
    n = 5000
    ns_per_launch(x, n, reps=2)
    vals = []
    for _ in range(8):
        vals.append([ns_per_launch(x, n), ns_per_launch_queued(x)])
        time.sleep(0.5)
    emit(part="launchcontrol", values=vals)
