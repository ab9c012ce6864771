"""The seed's matmul sweep of gpu_check_truth.py (3 configurations x 10 runs): its work, and its wall
time through kprof, nsight-python and no profiler (parts ``sweep-kprof``, ``sweep-nsight``,
``sweep-plain``, ``sweep-detail``); default_cost.py imports the work from here."""

import os
import time

import torch

from gpu_check_truth_cases import emit


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
