"""The short-kernel and graph durations' defaults on workloads its acceptance does not name (torch ops, cuDNN, cuBLAS
shapes, Triton, regions of several kernels, CUDA graphs with copies and many tiny nodes), through
the Python door on the H200: kprof in default settings against ncu's ``gpu__time_duration.sum``
(eager regions, the sum over the region's kernels) and against CUDA events around the replay in a
process without a profiler (graphs). One part per call:

    python3 gpu_check_unseen.py refs        # graphs by CUDA events, no profiler in this process
    python3 gpu_check_unseen.py kprof       # every case through kprof, default settings
    python3 gpu_check_unseen.py ncu-target  # the eager cases in NVTX ranges, for ncu (cold and warm)
    python3 gpu_check_unseen.py events-graphs  # graphs on the CUDA-events backend and by events, one process
    python3 gpu_check_unseen.py graph-start    # the start of a graph launch by graph size and kernel parameters
    python3 gpu_check_unseen.py graph-launch-cost  # host time per graph replay and per launch, before and with kprof
    python3 gpu_check_unseen.py graph-mix      # graphs from before and after the session in one benchmark (2026-12-04)
    python3 gpu_check_unseen.py judge LOG NCU_ALL.csv NCU_NONE.csv   # verdict table
    python3 gpu_check_unseen.py cases cold|warm  # the eager cases' names, for ncu's NVTX filters

A last argument ``2`` or ``3`` (``refs 2``, ``kprof 2``, ``ncu-target 2``, ``judge LOG A B 2``, ``cases cold 2``)
takes the second set of workloads (2026-12-03): cuFFT, cuSOLVER, an fp8 cuBLASLt matmul, an embedding
gather, a 64M-float sum, kernels on two side streams at once, a region that copies a value to the
host, 500 launches in one region, Triton kernels from ``torch.compile``, and graphs of cuFFT
and of ``torch.compile(mode="reduce-overhead")`` (CUDA graph trees captured inside the benchmark);
``3`` the third (2026-12-03): batched and tiny GEMMs, a 12 ms bf16 matmul, topk, unique (a host
synchronization), random numbers, 1100 launches in one region, 2 ms of host idle between two
kernels, a host-to-device copy then a kernel, cuDNN batch norm, fused AdamW, cat, interpolate,
and graphs replayed five times in one region, replayed on a side stream, of a fused AdamW step
and of 1000 nodes; ``4`` the fourth (2026-12-03): autograd backward passes (a matmul, a cuDNN
convolution, an embedding: their kernels come from PyTorch's backward thread, so ncu runs with
``--nvtx-push-pop-scope process``), a cuDNN LSTM, flash attention in bf16, a 512 fp32 matmul,
odd-shaped bf16 and int8 matmuls, bf16 GELU and SwiGLU, RMSNorm, argmax, a 1 GB fill, a dtype
conversion, grid_sample, nonzero (a host synchronization), and graphs of a training step
(forward, backward and update), of flash attention and of the LSTM; ``5`` the fifth (2026-12-04):
cuDNN and memory-efficient attention, a TF32 matmul, a cuBLASLt matmul with a ReLU epilogue,
group norm, a cuDNN 3-D convolution, max pooling, a transposing copy, gather, a histogram
(atomics), einsum, an autotuned Triton kernel, multi-head attention, kernels launched by two
Python threads at once (ncu with ``--nvtx-push-pop-scope process``), and graphs of attention, of
multi-head attention, of a Triton kernel and of a ten-kernel chain replayed 20 times in a region.

``UNSEEN_GRAPHS_ONLY=1`` makes the ``kprof`` part run the set's graph cases alone.

Cold cases (``cache_control`` left at its default, "all") are judged against ncu with
``--cache-control all``; warm ones (``cache_control="none"``, names ending in ``_warm``) against
``--cache-control none``. ncu flushes the caches before every kernel; kprof's counter passes do
too since 2026-12-03 (before it they flushed once per region, and the later kernels of a region
found their inputs in the L2: the ten-kernel chain read 19 % low).
"""

import csv
import json
import os
import re
import statistics
import sys
import time
import warnings

# The modules beside this file, also when it is loaded by its path (the recording tests).
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

from gpu_check_unseen_workloads import Work  # noqa: E402


def emit(**kw):
    print("UNSEEN " + json.dumps(kw), flush=True)


COLD = ["softmax", "layernorm", "sdpa", "conv", "bf16mm8192", "skinny", "sort", "cumsum", "scatter", "tiny",
        "xent", "mlp", "chain10", "triton"]
WARM = ["tiny_warm", "sort_warm", "mlp_warm", "chain10_warm", "conv_warm"]
# Graphs: "_old" captured before kprof's first benchmark in the process, "_new" after it.
GRAPHS = ["gmlp_old", "gcopy_old", "gtiny_old", "gmlp_new", "gcopy_new", "gtiny_new"]
# The second set (2026-12-03). "gcompiled" calls the reduce-overhead function, whose CUDA graph
# trees record and replay their graph (and copy the input into it) inside the call.
COLD2 = ["fft2", "solve", "fp8mm", "embed", "sum64m", "streams2", "item", "many500", "compiled"]
WARM2 = ["fft2_warm", "streams2_warm", "many500_warm", "compiled_warm"]
GRAPHS2 = ["gfft_old", "gfft_new", "gcompiled_new"]
# The third set (2026-12-03): batched and tiny GEMMs, a 12 ms bf16 matmul, multi-kernel ops with
# host synchronizations, 1100 launches in one region, host idle inside a region, a host-to-device
# copy, cuDNN batch norm, fused AdamW, and graphs replayed five times in a region, replayed on a
# side stream, of a fused AdamW step and of 1000 nodes.
COLD3 = ["bmm", "topk", "unique", "randn", "mm64", "bf16mm16384", "many1100", "sleepgap", "h2d", "batchnorm",
         "adamw", "cat", "interp"]
WARM3 = ["mm64_warm", "topk_warm", "bmm_warm", "adamw_warm", "cat_warm"]
GRAPHS3 = ["g5x_old", "gside_old", "gadamw_old", "g1000_old", "g5x_new", "gside_new", "gadamw_new", "g1000_new"]
# The fourth set (2026-12-03): backward passes (kernels launched by PyTorch's autograd thread), a
# cuDNN LSTM, flash attention, small and odd-shaped GEMMs, an int8 GEMM, bf16 elementwise and
# normalisation kernels, argmax, a 1 GB fill, grid_sample, nonzero, and graphs of a training
# step, of flash attention and of the LSTM.
COLD4 = ["mm512", "bf16odd", "intmm", "gelubf16", "swiglu", "rmsnorm", "argmax", "fill1g", "tohalf", "gridsample",
         "nonzero", "mmbwd", "convbwd", "embbwd", "lstm", "flashbf16"]
WARM4 = ["mm512_warm", "swiglu_warm", "argmax_warm", "mmbwd_warm", "lstm_warm"]
GRAPHS4 = ["gtrain_old", "gflash_old", "glstm_old", "gtrain_new", "gflash_new", "glstm_new"]
# The fifth set (2026-12-04): other attention kernels and libraries' epilogues, pooling, copies
# and irregular memory access, atomics, an autotuned Triton kernel, kernels from two Python threads,
# and graphs of attention, of multi-head attention, of a Triton kernel and of a ten-kernel chain
# replayed 20 times in one region.
COLD5 = ["cudnnattn", "effattn", "tf32mm", "addmmrelu", "groupnorm", "conv3d", "maxpool", "transpose", "gather",
         "histc", "einsum", "tritonauto", "mha", "threads2"]
WARM5 = ["cudnnattn_warm", "groupnorm_warm", "gather_warm", "histc_warm", "threads2_warm", "mha_warm"]
GRAPHS5 = ["gattn_old", "gmha_old", "g20x_old", "gattn_new", "gmha_new", "g20x_new", "gtriton_new"]
SETS = {"1": (COLD, WARM, GRAPHS), "2": (COLD2, WARM2, GRAPHS2), "3": (COLD3, WARM3, GRAPHS3),
        "4": (COLD4, WARM4, GRAPHS4), "5": (COLD5, WARM5, GRAPHS5)}
SET = "1"


def graph_call(w, name):
    """What a graph case's benchmark calls: the reduce-overhead function, or a graph's replay."""
    if name.startswith("gcompiled"):
        return lambda: w.compiled_graph(w.cx1, w.cw1)
    g = w.capture(name.rsplit("_", 1)[0])
    return replay_call(w, name, g)


def replay_call(w, name, g):
    """What a graph case's region does with its graph `g`: one replay; five (``g5x``); one on a
    side stream that the current stream waits for (``gside``)."""
    if name.startswith("g20x"):
        def twenty():
            for _ in range(20):
                g.replay()
        return twenty
    if name.startswith("g5x"):
        def five():
            for _ in range(5):
                g.replay()
        return five
    if name.startswith("gside"):
        torch = w.torch

        def side():
            cur = torch.cuda.current_stream()
            w.side3.wait_stream(cur)
            with torch.cuda.stream(w.side3):
                g.replay()
            cur.wait_stream(w.side3)
        return side
    return g.replay


# A graph of milliseconds of tensor-core work: back to back, the power cap slows it after about
# 55 ms (2026-12-03, gpu-checks/gpu_check_power.py), so its reference idles as long as each replay took
# (not the others: the side-stream graph read 887 µs paced on an idle GPU, 758-894 back to back).
HEAVY_GRAPHS = ("g5x",)


def refs():
    # CUDA events around repetitions queued back to back; one at a time, each followed by as much
    # idle as it took (`rest`: ncu's pace, and kprof's gpu_rest).
    from gpu_check_truth_cases import events, single_replays

    w = Work(SET)
    _, _, graphs = SETS[SET]
    for name in dict.fromkeys(g.rsplit("_", 1)[0] for g in graphs):
        try:
            call = graph_call(w, name)
        except Exception as e:  # noqa: BLE001  (a graph that cannot be captured is a row, not the end)
            emit(part="refs", case=name, error=str(e)[:300])
            continue
        if name in HEAVY_GRAPHS:
            emit(part="refs", case=name, ns=single_replays(call, "idle", rest=True), back_to_back_ns=events(call),
                 what="CUDA events around one replay, paced, no profiler")
        else:
            emit(part="refs", case=name, ns=events(call), what="CUDA events around one replay, no profiler")


def region_bench(kprof, fn, runs=10, **opts):
    """One kprof benchmark of `runs` runs whose one region ("r") calls `fn` (verbosity 0, thermal
    mode off, `opts` passed on): its raw table and the messages of the warnings it gave."""
    @kprof.analyze.kernel(runs=runs, verbosity=0, thermal_mode="off", **opts)
    def bench():
        with kprof.annotate("r"):
            fn()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = bench().raw()
    return df, [str(c.message) for c in caught]


def durations(df):
    """The `gpu__time_duration.sum` values of a raw table, ns."""
    return [float(v) for v in df[df["Metric"] == "gpu__time_duration.sum"]["Value"]]


def kprof_part():
    import kprof

    w = Work(SET)
    cold, warm, graphs = SETS[SET]
    old = {}
    for name in graphs:
        if name.endswith("_old"):
            try:
                old[name] = w.capture(name.rsplit("_", 1)[0])
            except Exception as e:  # noqa: BLE001  (a graph that cannot be captured is a row)
                old[name] = e

    def run(name, fn, **opts):
        try:
            df, msgs = region_bench(kprof, fn, **opts)
        except Exception as e:  # noqa: BLE001  (a case that fails is a row, not the end)
            emit(part="kprof", case=name, error=str(e)[:400])
            return
        vals = durations(df)
        df = df[df["Metric"] == "gpu__time_duration.sum"]
        # The autotuned Triton kernel: which block size this process's autotuning picked.
        extra = {"best_config": w.triton_auto.best_config()} if name.startswith("tritonauto") else {}
        emit(part="kprof", case=name, ns=statistics.median(vals), values=vals,
             source=sorted(set(df["DurationSource"])), kernel=str(df["Kernel"].iloc[0])[:80],
             warnings=[m[:240] for m in msgs][:3], **extra)

    if os.environ.get("UNSEEN_GRAPHS_ONLY") == "1":  # the graph cases alone (2026-12-04)
        cold, warm = [], []
    for name in cold:
        if name == "triton" and w.triton_add is None:
            emit(part="kprof", case=name, error="no triton")
            continue
        run(name, lambda name=name: w.eager(name))
    for name in warm:
        run(name, lambda name=name: w.eager(name), cache_control="none")
    for name in graphs:
        if isinstance(old.get(name), Exception):
            emit(part="kprof", case=name, error=str(old[name])[:300])
            continue
        try:
            call = replay_call(w, name, old[name]) if name in old else graph_call(w, name)
        except Exception as e:  # noqa: BLE001
            emit(part="kprof", case=name, error=str(e)[:300])
            continue
        run(name, call, cache_control="none")


def events_graphs():
    """Graphs through ``backend="cuda-events"`` (no CUPTI in the process) against CUDA events
    around back-to-back replays in the same process, which has no profiler: this workload's graphs
    and the short-kernel and graph durations' (``gpu_check_truth_cases.Cases``: 60 nodes, two streams, 3 large kernels), warm, each
    first replayed by the reference, then benchmarked, then the reference again. One
    ``eventsgraph`` row per graph (ns)."""
    from types import SimpleNamespace

    from gpu_check_truth_cases import Cases, events, graph_replay_bench

    w = Work(SET)
    if SET != "1":
        # What each graph case's benchmark calls (the reduce-overhead function: its input copy
        # and its graph; five replays; a replay on a side stream), as something with a replay.
        names = dict.fromkeys(g.rsplit("_", 1)[0] for g in SETS[SET][2])
        graphs = {}
        for name in names:
            try:
                graphs[name] = SimpleNamespace(replay=graph_call(w, name))
            except Exception as e:  # noqa: BLE001  (a graph that cannot be captured is a row)
                emit(part="eventsgraph", case=name, error=str(e)[:300])
    else:
        c = Cases()
        graphs = {name: w.capture(name) for name in ("gmlp", "gcopy", "gtiny")}
        graphs.update({name: c.capture(name) for name in ("graph60", "graph2stream", "graph3big")})
    for name, g in graphs.items():
        before = events(g.replay)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            df = graph_replay_bench(g, backend="cuda-events")().raw()
        vals = [float(v) for v in df[df["Metric"] == "cuda_event_elapsed.sum"]["Value"]]
        after = events(g.replay)
        emit(part="eventsgraph", case=name, ns=statistics.median(vals), values=vals, ref_before=before,
             ref_after=after, warnings=[str(m.message)[:200] for m in caught if "energy" not in str(m.message)][:3])


def first_benchmark(kprof, x):
    """A first kprof benchmark (an add on `x`): it starts kprof's CUPTI session, so that graphs
    captured after it are the session's (graph records)."""
    @kprof.analyze.kernel(runs=3, verbosity=0, thermal_mode="off")
    def first():
        with kprof.annotate("r"):
            x.add_(1.0)

    first()


def graph_start_probe():
    """2026-12-04: does the GPU's start of a graph launch depend on the graph? Graphs of 1, 10, 100
    and 1000 adds on 4096 floats, and of one multi-tensor-apply kernel (`torch._foreach_add_` over
    200 tensors: its tensor list travels as a kernel parameter of about 4 KB), captured after
    kprof's first benchmark: CUDA events around back-to-back replays in this same process (CUPTI
    attached, as for kprof) against kprof's value (the graph record's span plus the start kprof
    measured on its own graph, which its note gives). One ``graphstart`` row per graph (ns)."""
    import kprof
    import torch

    from gpu_check_truth_cases import capture_graph, events

    x = torch.zeros(4096, device="cuda")
    tensors = [torch.zeros(1024, device="cuda") for _ in range(200)]

    first_benchmark(kprof, x)
    bodies = {f"chain{n}": (lambda n=n: [x.add_(1.0) for _ in range(n)]) for n in (1, 10, 100, 1000)}
    bodies["foreach200"] = lambda: torch._foreach_add_(tensors, 1.0)
    for name, body in bodies.items():
        g = capture_graph(body)
        df, msgs = region_bench(kprof, g.replay, cache_control="none")
        vals = durations(df)
        notes = [m for m in msgs if "measured on kprof's own graph" in m]
        start = re.search(r"graph, ([0-9.]+) us measured", notes[0]) if notes else None
        emit(part="graphstart", case=name, kprof_ns=statistics.median(vals), events_ns=events(g.replay),
             start_us=float(start.group(1)) if start else None, source=sorted(set(df["DurationSource"])))


def graph_launch_cost():
    """2026-12-04: the host's time per `g.replay()` of a one-node graph, and per eager `add_`,
    with the launches queued behind a 40 ms sleep kernel (the host's cost alone, whatever the
    GPU's pace): before kprof, then with kprof's CUPTI session attached, for the graph captured
    before the session and one captured after it. One ``launchcost`` row per state (µs)."""
    import kprof
    import torch

    from gpu_check_truth_cases import capture_graph

    x = torch.zeros(4096, device="cuda")

    def host_us(fn, n=200):
        rounds = []
        for _ in range(3):
            torch.cuda.synchronize()
            torch.cuda._sleep(80_000_000)
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            rounds.append((time.perf_counter() - t0) / n * 1e6)
            torch.cuda.synchronize()
        return round(statistics.median(rounds), 3)

    old = capture_graph(lambda: x.add_(1.0))
    emit(part="launchcost", case="before", graph_us=host_us(old.replay), eager_us=host_us(lambda: x.add_(1.0)))

    first_benchmark(kprof, x)
    new = capture_graph(lambda: x.add_(1.0))
    emit(part="launchcost", case="attached", graph_old_us=host_us(old.replay), graph_new_us=host_us(new.replay),
         eager_us=host_us(lambda: x.add_(1.0)))

    # 2026-12-04: inside a benchmark (its timing passes), where graph trace stays off between
    # launches of the graph from before the session instead of switching at each.
    def inside(fn):
        rounds = []

        def timed():
            r = host_us(fn)
            if not kprof.in_counter_pass():
                rounds.append(r)

        region_bench(kprof, timed, runs=3, cache_control="none")
        return statistics.median(rounds)

    # LAUNCHCOST_INSIDE=old,new,eager: which of the three, in that order (one row each).
    fns = {"old": old.replay, "new": new.replay, "eager": lambda: x.add_(1.0)}
    for what in os.environ.get("LAUNCHCOST_INSIDE", "old,new,eager").split(","):
        emit(part="launchcost", case="inside", what=what, host_us=inside(fns[what]))


def graph_mix():
    """2026-12-04: graph trace stays off between launches of a graph from before the session
    during a benchmark. Does every arrangement still run and time right? In one process, a graph
    of ten adds on 4M floats captured before kprof's first benchmark (``old``) and one captured
    after it (``new``): regions replaying old then new, a region that captures a graph after
    replaying old (instantiated with graph trace off: kprof times it from its node records) and
    replays it, and after those benchmarks a graph replayed from before and a new one captured
    between benchmarks. Each against CUDA events around the same work in this process (CUPTI
    attached; a sanity check, not the short-kernel and graph durations' reference). One ``graphmix`` row per case (ns)."""
    import kprof
    import torch

    from gpu_check_truth_cases import capture_graph, events

    x = torch.zeros(4 << 20, device="cuda")
    body = lambda: [x.add_(1.0) for _ in range(10)]  # noqa: E731
    old = capture_graph(body)
    first_benchmark(kprof, x)
    new = capture_graph(body)
    inner = {}

    def capture_inside():
        old.replay()
        if "g" not in inner:
            inner["g"] = capture_graph(body)  # its warm-up and replays land in the warm-up run
        inner["g"].replay()

    def bench_row(case, fn, ref_fn):
        try:
            df, msgs = region_bench(kprof, fn, cache_control="none")
        except Exception as e:  # noqa: BLE001  (a case that fails is a row)
            emit(part="graphmix", case=case, error=str(e)[:400])
            return
        vals = durations(df)
        emit(part="graphmix", case=case, kprof_ns=statistics.median(vals), events_ns=events(ref_fn),
             source=sorted(set(df["DurationSource"])), kernel=str(df["Kernel"].iloc[0])[:60],
             node_records=any("node" in m and "instantiated before" in m for m in msgs),
             warnings=[m[:200] for m in msgs if "energy" not in m][:3])

    bench_row("old", old.replay, old.replay)
    bench_row("new", new.replay, new.replay)
    bench_row("old_then_new", lambda: (old.replay(), new.replay()), lambda: (old.replay(), new.replay()))
    bench_row("new_then_old", lambda: (new.replay(), old.replay()), lambda: (new.replay(), old.replay()))
    bench_row("old_x20", lambda: [old.replay() for _ in range(20)], lambda: [old.replay() for _ in range(20)])
    bench_row("capture_inside", capture_inside, capture_inside)
    # Between benchmarks: a replay of the old graph, then a graph captured (graph trace on again).
    old.replay()
    between = capture_graph(body)
    bench_row("captured_between", between.replay, between.replay)
    bench_row("old_again", old.replay, old.replay)


def graph_crash():
    """2026-12-04: a benchmark whose region queued a 40 ms sleep kernel and 200 replays of a
    one-node graph three times, synchronizing after each, crashed the process (segmentation fault
    in the bench call) with the graph from after the session's start, and with
    ``KPROF_GRAPH_TRACE=nodes`` already with a graph from before. One variant per process
    (``GC_VARIANT``: replays per round x rounds, sleep, synchronize, eager adds per round, the
    graph's age, options).
    One ``graphcrash`` row when it survives."""
    import kprof
    import torch

    from gpu_check_truth_cases import capture_graph

    v = dict(kv.split("=") for kv in os.environ.get("GC_VARIANT", "").split() if "=" in kv)
    n, rounds = int(v.get("n", 200)), int(v.get("rounds", 3))
    sleep, sync, eager = v.get("sleep", "1") == "1", v.get("sync", "1") == "1", int(v.get("eager", 0))
    x = torch.zeros(4096, device="cuda")
    old = capture_graph(lambda: x.add_(1.0))
    first_benchmark(kprof, x)
    g = old if v.get("graph") == "old" else capture_graph(lambda: x.add_(1.0))
    opts = {"cache_control": v.get("cache", "none")}
    if "source" in v:
        opts["duration_source"] = v["source"]
    if "replay" in v:
        opts["replay_mode"] = v["replay"]

    def region():
        for _ in range(rounds):
            if sleep:
                torch.cuda._sleep(80_000_000)
            for _ in range(n):
                g.replay()
            for _ in range(eager):
                x.add_(1.0)
            if sync:
                torch.cuda.synchronize()

    print(f"graph-crash {v}: bench starts", file=sys.stderr, flush=True)
    df, msgs = region_bench(kprof, region, runs=int(v.get("runs", 3)), **opts)
    emit(part="graphcrash", variant=v, ns=statistics.median(durations(df)), source=sorted(set(df["DurationSource"])),
         warnings=[m[:200] for m in msgs if "energy" not in m][:3])


def g20x_probe():
    """2026-12-04: after a counter pass that enabled the Range Profiler anew for a larger image
    (20 graph launches per run), the runs of 20 replays of a ten-kernel graph per region read
    1.76 µs per launch less than the first. In one process: CUDA events around 20 back-to-back
    replays (CUPTI attached) before and after each step, benchmark A (default: its first counter
    pass re-enables), B (the same again), C (``duration_source="records"``). One ``g20x`` row per
    step (ns)."""
    import kprof
    import torch

    from gpu_check_truth_cases import events

    w = Work(SET)
    x = torch.zeros(4096, device="cuda")
    first_benchmark(kprof, x)
    g = w.capture("g20x")
    twenty = replay_call(w, "g20x", g)

    def bench_row(step, **opts):
        df, _ = region_bench(kprof, twenty, cache_control="none", **opts)
        emit(part="g20x", case=step, values=durations(df), events_after_ns=events(twenty))

    emit(part="g20x", case="events_before", events_after_ns=events(twenty))
    bench_row("A")
    bench_row("B")
    bench_row("C_records", duration_source="records")


def gtiny_probe():
    """2026-12-04: set 1's graph of 200 one-block kernels read -18.5 % (captured in the session) and
    +21.9 % (before it) in a process whose benchmarks were graphs alone, -1.0 % / +3.8 % after
    the eager cases (the 2026-12-04 wheel alike). CUDA events around back-to-back replays of both
    graphs in this process (CUPTI attached after the first benchmark) at each step, against
    kprof's values. One ``gtiny`` row per step (ns)."""
    import kprof

    from gpu_check_truth_cases import events

    w = Work(SET)
    old = w.capture("gtiny")
    emit(part="gtiny", case="before_kprof", events_old_ns=events(old.replay))

    def bench_row(step, fn, **opts):
        df, msgs = region_bench(kprof, fn, **{"cache_control": "none", **opts})
        stale = any("instantiated before kprof's counter session" in m for m in msgs)
        emit(part="gtiny", case=step, kprof_ns=statistics.median(durations(df)), events_old_ns=events(old.replay),
             warned_before_counters=stale)

    bench_row("old", old.replay)
    new = w.capture("gtiny")
    emit(part="gtiny", case="new_captured", events_new_ns=events(new.replay))
    bench_row("new", new.replay)
    emit(part="gtiny", case="after_new", events_new_ns=events(new.replay), events_old_ns=events(old.replay))
    bench_row("eager_cold", lambda: w.eager(COLD[0]), cache_control="all")
    emit(part="gtiny", case="after_eager", events_new_ns=events(new.replay), events_old_ns=events(old.replay))
    bench_row("new_again", new.replay)
    bench_row("old_again", old.replay)


def ncu_target():
    w = Work(SET)
    torch = w.torch
    cold, warm, _ = SETS[SET]
    for name in cold + warm:
        if (name in ("triton", "tritonauto") and w.triton_add is None) or (name == "fp8mm" and w.fp8 is None):
            continue
        try:
            w.eager(name)
        except Exception as e:  # noqa: BLE001  (a case this torch cannot run: kprof's part shows the error)
            print(f"ncu-target: {name}: {e}"[:300], file=sys.stderr)
            continue
        torch.cuda.synchronize()
        if name.startswith("tritonauto"):
            print(f"ncu-target: {name}: best_config {w.triton_auto.best_config()}", file=sys.stderr)
        for i in range(3):
            torch.cuda.nvtx.range_push(f"{name}.{i}")
            w.eager(name)
            torch.cuda.nvtx.range_pop()
            torch.cuda.synchronize()


def ncu_sums(path):
    """Per NVTX range occurrence `case.i`: the sum of its kernels' gpu__time_duration.sum (ns)."""
    lines = [line for line in open(path, encoding="utf-8", errors="replace") if not line.startswith("==")]
    sums, kernels = {}, {}
    cold, warm, _ = SETS[SET]
    names = sorted(cold + warm, key=len, reverse=True)
    pattern = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, names)) + r")\.(\d+)(?![A-Za-z0-9_])")
    for r in csv.DictReader(lines):
        if not r.get("ID", "").isdigit():
            continue
        m = pattern.search(" ".join(str(v) for v in r.values()))
        if m is None:
            continue
        occ = m.group(0)
        v = float(str(r["gpu__time_duration.sum"]).replace(",", ""))
        sums[occ] = sums.get(occ, 0.0) + v
        kernels[occ] = kernels.get(occ, 0) + 1
    out = {}
    for occ, s in sums.items():
        out.setdefault(occ.rsplit(".", 1)[0], []).append((s, kernels[occ]))
    return {c: (statistics.median(s for s, _ in v), max(k for _, k in v)) for c, v in out.items()}


def read_log(log):
    """The UNSEEN rows of a log by (part, case); a later row replaces an earlier one."""
    rows = {}
    for line in open(log, encoding="utf-8", errors="replace"):
        if line.startswith("UNSEEN "):
            r = json.loads(line[7:])
            rows[(r["part"], r["case"])] = r
    return rows


def reference(name, rows, cold, warm):
    """A case's reference: (ns, kernels) from ncu's sums (`cold`, `warm`: `ncu_sums`) for an eager
    case, (ns, None) from the log's CUDA events without a profiler for a graph; ns None when
    missing."""
    _, warm_names, graphs = SETS[SET]
    if name in graphs:
        return (rows.get(("refs", name.rsplit("_", 1)[0])) or {}).get("ns"), None
    c = (warm if name in warm_names else cold).get(name)
    return (c[0], c[1]) if c else (None, None)


def judge(log, ncu_all, ncu_none):
    rows = read_log(log)
    cold, warm = ncu_sums(ncu_all), ncu_sums(ncu_none)
    print(f"{'case':<14} {'kprof us':>10} {'ref us':>10} {'diff':>8} {'limit':>6}  source / ref")
    fails = 0
    cold_names, warm_names, graphs = SETS[SET]
    for name in cold_names + warm_names + graphs:
        got = rows.get(("kprof", name))
        ref_ns, kernels = reference(name, rows, cold, warm)
        if name in graphs:
            what, limit = "events, no profiler", 3.0
        else:
            what = f"ncu --cache-control {'none' if name in warm_names else 'all'} ({kernels or '?'} kernels)"
            long_kernel = ref_ns is not None and ref_ns >= 200_000 and kernels == 1
            limit = 1.0 if long_kernel else 3.0
        if not got or got.get("ns") is None or ref_ns is None:
            print(f"{name:<14} {'-':>10} {'-':>10} {'MISSING':>8}   {(got or {}).get('error', '')}")
            continue
        d = 100.0 * (got["ns"] / ref_ns - 1.0)
        ok = abs(d) <= limit
        fails += not ok
        print(f"{name:<14} {got['ns'] / 1e3:>10.2f} {ref_ns / 1e3:>10.2f} {d:>+7.2f}% {limit:>5.1f}%  "
              f"{'PASS' if ok else 'FAIL'} {got.get('source')} / {what}")
    return fails


def main():
    global SET
    part = sys.argv[1] if len(sys.argv) > 1 else ""
    last = {"judge": 5, "cases": 3}.get(part, 2)
    if len(sys.argv) > last:
        SET = sys.argv[last]
        if SET not in SETS:
            sys.exit(f"no workload set {SET!r}: the sets are {', '.join(SETS)}")
    # The parts that take no argument besides the workload set.
    parts = {
        "refs": refs,
        "kprof": kprof_part,
        "ncu-target": ncu_target,
        "events-graphs": events_graphs,
        "graph-start": graph_start_probe,
        "graph-launch-cost": graph_launch_cost,
        "graph-mix": graph_mix,
        "graph-crash": graph_crash,
        "g20x-probe": g20x_probe,
        "gtiny-probe": gtiny_probe,
    }
    if part in parts:
        parts[part]()
    elif part == "cases" and len(sys.argv) > 2 and sys.argv[2] in ("cold", "warm"):
        cold, warm, _ = SETS[SET]
        print(" ".join(cold if sys.argv[2] == "cold" else warm))
    elif part == "judge":
        sys.exit(1 if judge(*sys.argv[2:5]) else 0)
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
