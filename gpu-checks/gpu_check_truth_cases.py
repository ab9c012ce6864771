"""The cases of gpu_check_truth.py (torch workloads, eager and as CUDA graphs) and what its parts
share to time them: CUDA events around back-to-back or single calls, graph capture, the kprof
benchmarks that start a session or replay a graph, and the ``TRUTH {json}`` row printer."""

import json
import statistics
import time

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


def warm_up(fn):
    """Three calls of `fn`, then a synchronize: what every CUDA-events timing here runs first."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()


def event_pair():
    """A start and an end CUDA event that record times."""
    return torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)


def events(fn, reps=20):
    """Median GPU time between CUDA events around `fn`'s work. The repetitions are queued back to
    back and synchronized once at the end (as truth_check's Rust reference does): the GPU is busy
    when each start event runs, so the time between the events is the work's GPU time, not the
    host's launch latency (a graph replay's cudaGraphLaunch takes ~10 us for 60 nodes, which an
    idle GPU would wait for after the start event)."""
    warm_up(fn)
    pairs = []
    for _ in range(reps):
        a, b = event_pair()
        a.record()
        fn()
        b.record()
        pairs.append((a, b))
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e6 for a, b in pairs)


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


def median_duration(bench):
    """Runs a kprof benchmark: the median of its `gpu__time_duration.sum` samples (ns) and the
    sorted `DurationSource` values they came from."""
    df = bench().raw()
    df = df[df["Metric"] == "gpu__time_duration.sum"]
    return statistics.median(float(v) for v in df["Value"]), sorted(set(df["DurationSource"]))


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
    warm_up(fn)
    v = []
    for _ in range(reps):
        a, b = event_pair()
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
