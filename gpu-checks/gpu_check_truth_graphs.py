"""CUDA-graph probes of gpu_check_truth.py: graph replays by CUDA events before, inside and after
kprof's benchmarks, with CUPTI attached, released or finalized, warm or idle (parts
``graph-probe``, ``graph-state``, ``release-state``, ``torch-cupti``, ``graph-warmth``, ``graph-blocked``)."""

import json
import statistics
import time
import warnings

import torch

from gpu_check_truth_cases import (
    Cases, emit, events, graph_replay_bench, median_duration, single_replays, y_times_2_bench,
)


def attach_then_release(c, measure, part):
    """Attaches CUPTI with a default y * 2 benchmark (3 runs), calls ``measure("CUPTI attached")``,
    detaches it with ``kprof.release_counters()`` (what that returned: a ``part`` row, case
    ``detach``) and calls ``measure("released")``."""
    import kprof

    y_times_2_bench(c, runs=3)()
    measure("CUPTI attached")
    emit(part=part, case="detach", state=str(kprof._core.release_counters()), way="", ns=0)
    measure("released")


def graph_probe(name="graph2stream", late=""):
    """Is a graph's time under kprof the graph's or the profiler's? CUDA events around the replay
    before kprof starts (no profiler), inside kprof's benchmark (its tracing on: the events of
    the timing pass only), and after it; kprof's own value beside them."""
    import kprof

    c = Cases()
    if late:
        # "late": a first benchmark with the records starts kprof's CUPTI session; "late-auto": one
        # in default settings, which also leaves the Range Profiler session open during the capture.
        extra = {} if late == "late-auto" else {"duration_source": "records"}
        y_times_2_bench(c, **extra)()
    graph = c.capture(name)
    before = events(graph.replay) if not late else None
    inside = []

    @kprof.analyze.kernel(runs=10, cache_control="none", thermal_mode="off", verbosity=0)
    def bench():
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with kprof.annotate("r"):
            a.record()
            graph.replay()
            b.record()
        b.synchronize()
        if not kprof.in_counter_pass():
            inside.append(a.elapsed_time(b) * 1e6)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = bench().raw()
    vals = [float(v) for v in df["Value"]]
    emit(part="graphprobe", case=name, late=late or False, events_before_ns=before,
         events_inside_ns=statistics.median(inside[-10:]), inside=inside[-10:],
         kprof_ns=statistics.median(vals), values=vals, source=sorted(set(df["DurationSource"])),
         events_after_ns=events(graph.replay))


def graph_state():
    """CUDA events around graph replays (graph60, graph2stream) in one process: before kprof, with
    kprof's Range Profiler session open (graphs instantiated before and after it opened), and
    after ``kprof.release_counters()`` (since 2026-12-02 it detaches CUPTI, but not here: graphs
    captured during the session are alive); the y * 2 benchmark's duration before the release
    and after. One line ``RPPROBE {json}``, microseconds."""
    import kprof

    c = Cases()
    out = {}
    for name in ("graph60", "graph2stream"):
        out[name + "_none"] = events(c.capture(name).replay)
    a = y_times_2_bench(c, runs=2)

    def bench_us(tag):
        """The y * 2 benchmark's median duration and its source, before and after a release."""
        out[f"ytimes2_{tag}"], out[f"ytimes2_{tag}_source"] = median_duration(a)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench_us("first")
        for name in ("graph60", "graph2stream"):
            out[name + "_old_rp_open"] = events(c.graphs[name].replay)
            out[name + "_new_rp_open"] = events(c.capture(name).replay)
        kprof.release_counters()
        for name in ("graph60", "graph2stream"):
            out[name + "_old_rp_released"] = events(c.graphs[name].replay)
            out[name + "_new_rp_released"] = events(c.capture(name).replay)
        y = c.y
        out["eager60_rp_released"] = events(lambda: c.chain(y, 30))
        bench_us("after_release")
        out["eager60_rp_open"] = events(lambda: c.chain(y, 30))
    print("RPPROBE " + json.dumps({k: round(v / 1e3, 2) if isinstance(v, float) else v for k, v in out.items()}),
          flush=True)


def release_state(keep=""):
    """Whether ``kprof.release_counters()`` gives the process back as without a profiler (CUPTI
    detached): CUDA events around two graphs captured before kprof, before any benchmark, after a
    default benchmark of ``y * 2`` (CUPTI attached), after the release, and the benchmark again
    afterwards (CUPTI attached anew: its duration and source). ``keep``: a graph captured during
    the benchmark's session stays alive, so kprof must leave CUPTI attached (a graph instantiated
    under CUPTI fails after ``cuptiFinalize``); it is replayed after the release. One
    ``releasestate`` row, microseconds."""
    import kprof

    c = Cases()
    graphs = {name: c.capture(name) for name in ("graph60", "graph2stream")}
    out = {}
    kept = []

    def graph_us(tag):
        for name, g in graphs.items():
            out[f"{name}_{tag}"] = events(g.replay) / 1e3

    @kprof.analyze.kernel(runs=3, thermal_mode="off", verbosity=0)
    def ytimes2():
        with kprof.annotate("r"):
            c.y * 2.0
        if keep and not kept:
            kept.append(Cases.capture(c, "graph2stream"))

    def bench_us(tag):
        ns, out[f"ytimes2_{tag}_source"] = median_duration(ytimes2)
        out[f"ytimes2_{tag}_us"] = ns / 1e3

    graph_us("before")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench_us("first")
        graph_us("attached")
        # kprof.release_counters() without its warning: what ending the profiler did with CUPTI.
        out["cupti_detach"] = kprof._core.release_counters()
        graph_us("released")
        if kept:
            out["kept_released"] = events(kept[0].replay) / 1e3
        bench_us("again")
        graph_us("again")
    emit(part="releasestate", keep=bool(keep), **{k: round(v, 2) if isinstance(v, float) else v for k, v in out.items()})


def torch_cupti_state(kprof_too=""):
    """What in a plain torch process (no kprof) slows graphs that ``cuptiFinalize`` speeds up:
    whether libcupti is mapped at start, what ``cuptiSubscribe`` answers (another subscriber?),
    and back-to-back events of graph60 / graph2stream before and after a raw ``cuptiFinalize``
    (and after subscribing and unsubscribing first). One ``torchcupti`` row per step."""
    import ctypes

    def mapped():
        return sorted({ln.split()[-1] for ln in open("/proc/self/maps") if "cupti" in ln})

    c = Cases()
    graphs = {name: c.capture(name) for name in ("graph60", "graph2stream")}

    def measure(state):
        emit(part="torchcupti", state=state, mapped=mapped(),
             **{name: round(events(g.replay) / 1e3, 2) for name, g in graphs.items()})

    measure("start")
    path = next(iter(mapped()), None)
    lib = ctypes.CDLL(path or "libcupti.so.13")
    measure("libcupti loaded")
    cb_type = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p)
    cb = cb_type(lambda *a: None)
    sub = ctypes.c_void_p()
    rc = lib.cuptiSubscribe(ctypes.byref(sub), cb, None)
    measure(f"subscribed rc={rc}")
    rc2 = lib.cuptiUnsubscribe(sub) if rc == 0 else None
    measure(f"unsubscribed rc={rc2}")
    rc3 = lib.cuptiFinalize()
    measure(f"finalized rc={rc3}")
    if kprof_too:
        import kprof

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y_times_2_bench(c, runs=3)()
            measure("kprof attached")
            measure(f"kprof released: {kprof._core.release_counters()}")
            y_times_2_bench(c, runs=3, duration_source="records")()
            measure("kprof records-only attached")
            measure(f"kprof records-only released: {kprof._core.release_counters()}")


def graph_warmth(kprof_too=""):
    """Do graphs captured before kprof run faster after CUPTI detaches, or after any GPU work?
    Back-to-back events (`events`, 20 and 200 replays) and stream-wait single replays of graph60
    and graph2stream at process start, right after 1 s of matmuls, after 1 s idle; with
    ``kprof_too``: then a default kprof benchmark (CUPTI attached), its release, the same again.
    One ``graphwarmth`` row per graph, state and way (ns), with the SM clock NVML reported."""
    c = Cases()
    graphs = {name: c.capture(name) for name in ("graph60", "graph2stream")}
    a, b = c.mats[4096]

    def clock():
        try:
            return torch.cuda.clock_rate()
        except Exception as e:  # noqa: BLE001 - the probe records why
            return str(e)[:80]

    def measure(state):
        for name, g in graphs.items():
            for way, ns in (("back-to-back", events(g.replay)), ("back-to-back-200", events(g.replay, reps=200)),
                            ("wait-value", single_replays(g.replay, "wait-value"))):
                emit(part="graphwarmth", case=name, state=state, way=way, ns=ns, sm_mhz=clock())

    def busy(seconds):
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for _ in range(20):
                a @ b
            torch.cuda.synchronize()

    measure("start")
    busy(1.0)
    measure("after 1 s of matmuls")
    time.sleep(1.0)
    measure("after 1 s idle")
    if kprof_too:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            attach_then_release(c, measure, "graphwarmth")
            busy(1.0)
            measure("released, after 1 s of matmuls")


def graph_blocked():
    """Graphs captured before kprof (graph60, graph2stream), timed three ways (back-to-back
    replays, one replay on an idle GPU, one replay behind a spin kernel) before any profiler, with
    CUPTI attached by a default benchmark, and after ``kprof.release_counters()`` detached it; then
    kprof's default duration of each graph region (CUPTI attached again). One ``graphblocked`` row
    per graph, state and way, nanoseconds."""
    import kprof  # noqa: F401  (loaded before the graphs are captured)

    c = Cases()
    graphs = {name: c.capture(name) for name in ("graph60", "graph2stream")}

    def measure(state):
        for name, g in graphs.items():
            for way, ns in (("back-to-back", events(g.replay)), ("idle", single_replays(g.replay, "idle")),
                            ("blocked", single_replays(g.replay, "spin")),
                            ("wait-value", single_replays(g.replay, "wait-value"))):
                emit(part="graphblocked", case=name, state=state, way=way, ns=ns)

    measure("no profiler")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        attach_then_release(c, measure, "graphblocked")
        for name, g in graphs.items():
            ns, src = median_duration(graph_replay_bench(g))
            emit(part="graphblocked", case=name, state="kprof default", way=str(src), ns=ns)
