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

import json
import os
import statistics
import sys
import time
import warnings

import torch

N_SMALL = 1 << 20
N_MID = 16 << 20
N_BIG = 64 << 20


def emit(**kw):
    print("TRUTH " + json.dumps(kw), flush=True)


def capture_graph(body):
    """A `torch.cuda.CUDAGraph` of `body()`: warmed up on a side stream outside the capture (as
    PyTorch asks), captured, then replayed three times."""
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        body()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        body()
    torch.cuda.synchronize()
    for _ in range(3):
        g.replay()
    torch.cuda.synchronize()
    return g


class Cases:
    def __init__(self):
        self.y = torch.randn(N_SMALL, device="cuda")
        self.mid = torch.randn(N_MID, device="cuda")
        self.big = torch.randn(N_BIG, device="cuda")
        self.big_out = torch.empty_like(self.big)
        self.mats = {n: (torch.randn(n, n, device="cuda"), torch.randn(n, n, device="cuda")) for n in (1024, 2048, 4096, 8192)}
        self.h16 = torch.randn(4096, 4096, device="cuda", dtype=torch.float16)
        torch.cuda.synchronize()
        self.graphs = {}

    def chain(self, z, n_pairs):
        for _ in range(n_pairs):
            z = z * 1.0001 + 0.5
        return z

    def capture(self, name):
        g = capture_graph(lambda: self.body(name))
        self.graphs[name] = g
        return g

    def body(self, name):
        if name == "graph60":
            self.out60 = self.chain(self.y, 30)
        elif name == "graph3big":
            a, b = self.mats[4096]
            self.c4096 = a @ b
            torch.mul(self.big, 2.0, out=self.big_out)
            self.big_out.add_(1.0)
        elif name == "graph2stream":
            cur = torch.cuda.current_stream()
            side = torch.cuda.Stream()
            side.wait_stream(cur)
            self.o1 = self.chain(self.y, 15)
            with torch.cuda.stream(side):
                self.o2 = self.chain(self.mid[:N_SMALL], 15)
            cur.wait_stream(side)

    def eager(self, name):
        if name == "eager60":
            return self.chain(self.y, 30)
        if name == "k2us":
            return self.y * 1.0001
        if name == "k2us_sync":  # a region that waits for the GPU inside
            r = self.y * 1.0001
            torch.cuda.synchronize()
            return r
        if name == "k20us":
            return self.mid * 1.0001
        if name == "k2ms":
            a, b = self.mats[4096]
            return a @ b
        if name.startswith("mm"):
            a, b = self.mats[int(name[2:])]
            return a @ b
        if name == "x2_64M":
            return self.big * 2.0
        if name.startswith("tiny"):  # torch's elementwise add on N floats (tiny1: one block)
            small = self.__dict__.setdefault("small", {})
            n = int(name[4:])
            if n not in small:
                small[n] = torch.zeros(n, device="cuda")
            return small[n].add_(1.0)
        if name == "mixed":
            z = self.chain(self.y, 5)
            self.graphs["graph60"].replay()
            return self.chain(z, 5)
        raise ValueError(name)


GRAPHS = ["graph60", "graph3big", "graph2stream"]
SHORT = ["eager60", "k2us", "k20us", "k2ms", "mixed"]
LONG = ["mm1024", "mm2048", "mm4096", "mm8192", "x2_64M"]


def events(fn, reps=20):
    """Median GPU time between CUDA events around `fn`'s work. The repetitions are queued back to
    back and synchronized once at the end (as truth_check's Rust reference does): the GPU is busy
    when each start event runs, so the time between the events is the work's GPU time, not the
    host's launch latency (a graph replay's cudaGraphLaunch takes ~10 us for 60 nodes, which an
    idle GPU would wait for after the start event)."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    pairs = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e6 for a, b in pairs)


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


def y_times_2_bench(c, runs=1, **extra):
    """A kprof benchmark of one region holding `y * 2.0` (1M floats), with `extra` options: run
    before a case to start kprof's CUPTI session (and, in default settings, its Range Profiler
    session) in the process."""
    import kprof

    @kprof.analyze.kernel(runs=runs, thermal_mode="off", verbosity=0, **extra)
    def y_times_2():
        with kprof.annotate("r"):
            c.y * 2.0

    return y_times_2


def graph_replay_bench(g, **extra):
    """A kprof benchmark named ``graph`` of one region replaying `g`, warm (10 runs), with
    `extra` keywords (e.g. ``backend="cuda-events"``)."""
    import kprof

    @kprof.analyze.kernel(runs=10, cache_control="none", thermal_mode="off", verbosity=0, **extra)
    def graph():
        with kprof.annotate("r"):
            g.replay()

    return graph


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


SWEEP = [1024, 2048, 4096]


def seed_matmul(n, annotate=None):
    """The seed sweep's work for one configuration: two random n x n matrices, a warm-up product
    and the product inside ``annotate("matmul")`` (kprof's or nsight's; None: no annotation)."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    _ = a @ b
    if annotate is None:
        _ = a @ b
        return
    with annotate("matmul"):
        _ = a @ b


def sweep_kprof(source=None):
    """The seed sweep in kprof's default settings, or with duration_source=SOURCE (or the
    CUDA-events backend for SOURCE "cuda-events")."""
    import kprof

    # SOURCE "cuda-events": the CUDA-events backend (no CUPTI in the process), else a duration_source.
    extra = {"backend": source} if source == "cuda-events" else {"duration_source": source} if source else {}

    @kprof.analyze.kernel(configs=[(n,) for n in SWEEP], runs=10, thermal_mode="off", verbosity=0, **extra)
    def matmul(n):
        seed_matmul(n, kprof.annotate)

    # Twice in one process: the second sweep shows what is paid once per process (set-up).
    walls, costs = [], []
    for _ in range(2):
        t0 = time.perf_counter()
        df = matmul().to_dataframe()
        walls.append(time.perf_counter() - t0)
        costs.append(kprof._core.counter_cost() if hasattr(kprof._core, "counter_cost") else None)
    emit(part="sweep", tool=f"kprof-{source}" if source else "kprof", wall_s=walls[0],
         second_wall_s=walls[1], avg_ns=[float(v) for v in df["AvgValue"]], counter_cost=costs)


def sweep_nsight():
    import nsight

    @nsight.analyze.kernel(configs=[(n,) for n in SWEEP], runs=10, thermal_mode="off")
    def matmul(n):
        seed_matmul(n, nsight.annotate)

    t0 = time.perf_counter()
    df = matmul().to_dataframe()
    wall = time.perf_counter() - t0
    if os.environ.get("NSPY_NCU_PROFILE_CHILD") is None:
        emit(part="sweep", tool="nsight-python 0.9.6", wall_s=wall, avg_ns=[float(v) for v in df["AvgValue"]])


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


def median_duration(bench):
    """Runs a kprof benchmark: the median of its `gpu__time_duration.sum` samples (ns) and the
    sorted `DurationSource` values they came from."""
    df = bench().raw()
    df = df[df["Metric"] == "gpu__time_duration.sum"]
    return statistics.median(float(v) for v in df["Value"]), sorted(set(df["DurationSource"]))


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


def single_replays(fn, way, reps=20, rest=False):
    """Median GPU time between CUDA events around ONE call of `fn` at a time, synchronized after
    each, `way` "idle", "spin" or "wait-value": on an idle GPU (the start event runs before the
    host has launched the work, so the host's launch time is inside), behind a 200 us spin kernel
    (`torch.cuda._sleep`) launched first, or behind a stream wait the host releases once the
    events and the work are queued (the last two as NVBench's blocking kernel does). `rest`: the
    GPU then idles as long as the call took (ncu's pace, and kprof's `gpu_rest`: no power cap)."""
    import ctypes

    wait = None
    if way == "wait-value":
        # The stream waits (cuStreamWaitValue32) for a pinned host word that the host sets once
        # the events and the work are queued: what an engine would do, no kernel of its own.
        wait = ctypes.CDLL("libcuda.so.1").cuStreamWaitValue32_v2
        wait.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint32]
        word = torch.zeros(1, dtype=torch.int32, pin_memory=True)
        flag = ctypes.c_int32.from_address(word.data_ptr())
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    v = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        if wait is not None:
            flag.value = 0
            rc = wait(torch.cuda.current_stream().cuda_stream, word.data_ptr(), 1, 0)  # CU_STREAM_WAIT_VALUE_GEQ
            if rc:
                return -float(rc)
        elif way == "spin":
            torch.cuda._sleep(400_000)
        a.record()
        fn()
        b.record()
        if wait is not None:
            flag.value = 1
        b.synchronize()
        v.append(a.elapsed_time(b) * 1e6)
        if rest:
            time.sleep(v[-1] * 1e-9)
    return statistics.median(v)


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
        import kprof

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y_times_2_bench(c, runs=3)()
            measure("CUPTI attached")
            emit(part="graphwarmth", case="detach", state=str(kprof._core.release_counters()), way="", ns=0)
            measure("released")
            busy(1.0)
            measure("released, after 1 s of matmuls")


def graph_blocked():
    """Graphs captured before kprof (graph60, graph2stream), timed three ways (back-to-back
    replays, one replay on an idle GPU, one replay behind a spin kernel) before any profiler, with
    CUPTI attached by a default benchmark, and after ``kprof.release_counters()`` detached it; then
    kprof's default duration of each graph region (CUPTI attached again). One ``graphblocked`` row
    per graph, state and way, nanoseconds."""
    import kprof

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
        y_times_2_bench(c, runs=3)()
        measure("CUPTI attached")
        emit(part="graphblocked", case="detach", state=str(kprof._core.release_counters()), way="", ns=0)
        measure("released")
        for name, g in graphs.items():
            ns, src = median_duration(graph_replay_bench(g))
            emit(part="graphblocked", case=name, state="kprof default", way=str(src), ns=ns)


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


def sweep_plain():
    """The seed sweep's work without any profiler (3 configs x (warm-ups + 10 runs)), twice: what
    the user's closure itself costs in a fresh process (context, cuBLAS) and afterwards."""
    walls = []
    for _ in range(2):
        t0 = time.perf_counter()
        for n in SWEEP:
            for _ in range(13):
                seed_matmul(n)
                torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    import pandas  # noqa: F401  (kprof imports it when a benchmark is decorated)
    emit(part="sweep", tool="plain torch", wall_s=walls[0], second_wall_s=walls[1],
         pandas_import_s=time.perf_counter() - t0)


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


def sweep_detail():
    """The seed sweep in default settings with a time stamp and the counter cost at every call
    of the closure (warm-ups, timing and counter passes), to see which collections pay the
    first sweep's extra time. One ``sweepdetail`` row."""
    import kprof

    calls = []

    @kprof.analyze.kernel(configs=[(n,) for n in SWEEP], runs=10, thermal_mode="off", verbosity=0)
    def matmul(n):
        seed_matmul(n, kprof.annotate)
        c = kprof._core.counter_cost()
        calls.append([n, kprof.in_counter_pass(), time.perf_counter(), c["sessions"], c["collections"],
                      c["collect_setup_s"], c["collect_passes_s"], c["collect_decode_s"], c["counter_run_s"]])

    walls = []
    for _ in range(2):
        t0 = time.perf_counter()
        matmul()
        walls.append(time.perf_counter() - t0)
        calls.append(["end", None, time.perf_counter()])
    emit(part="sweepdetail", walls=walls,
         cost=kprof._core.counter_cost(), t0=t0, calls=calls)


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
    import gpu_check_unseen

    def measure(state, small):
        values = small_add_means(small, 100, CLOCK_STATE_METRICS)
        emit(part="clockwork", state=state, **{m: statistics.median(v) for m, v in values.items()})

    own = torch.zeros(SMALL_ADD_FLOATS, device="cuda")
    measure("start", own)
    gpu_check_unseen.SET = "2"
    w = gpu_check_unseen.Work()
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
