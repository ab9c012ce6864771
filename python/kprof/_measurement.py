"""Options that change what is measured, beyond nsight-python's: the per-benchmark
``l2_flush``, ``l2_flush_bytes`` and ``counter_pass_records`` of ``@kprof.analyze.kernel``, and the
per-process trace settings of :func:`configure`.

Each is an option first; its ``KPROF_*`` environment variable, when set, overrides it in the
engine (``docs/configuration.md``). Values are parsed by the Rust core (``kprof::choices``), so
a bad one raises :class:`kprof.ConfigError` here, before any GPU work.
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any, Literal

from . import _warn
from . import _core, _options
from .exceptions import ConfigError

#: The values of ``l2_flush`` (for typing; the core parses them).
L2FlushName = Literal["read", "discard", "write"]
#: The values of ``kernel_trace`` and ``graph_trace`` of :func:`configure`.
KernelTraceName = Literal["concurrent", "serial"]
GraphTraceName = Literal["graph", "nodes"]
#: The values of ``attribution`` of :func:`configure`.
AttributionName = Literal["order", "records"]


_parse = _options.check_choice


def check(l2_flush: Any, l2_flush_bytes: Any, counter_pass_records: Any, backend: str) -> dict[str, Any]:
    """The validated per-benchmark options, as keys of the backend's options dict."""
    flush = _parse("l2_flush", l2_flush)
    if l2_flush_bytes is not None and (
        not isinstance(l2_flush_bytes, numbers.Integral) or isinstance(l2_flush_bytes, bool) or l2_flush_bytes <= 0
    ):
        raise ConfigError(f"l2_flush_bytes must be a positive number of bytes (at least the L2) or None, got {l2_flush_bytes!r}")
    if not isinstance(counter_pass_records, bool):
        raise ConfigError(f"counter_pass_records must be True or False, got {counter_pass_records!r}")
    if backend == "ncu" and (flush != "read" or l2_flush_bytes is not None or counter_pass_records):
        raise ConfigError(
            "l2_flush, l2_flush_bytes and counter_pass_records are options of kprof's CUPTI backend; Nsight Compute "
            "flushes the L2 and collects counters itself (backend='ncu')"
        )
    return {
        "l2_flush": flush,
        "l2_flush_bytes": None if l2_flush_bytes is None else int(l2_flush_bytes),
        "counter_pass_records": counter_pass_records,
    }


def configure(
    *,
    kernel_trace: KernelTraceName = "concurrent",
    graph_trace: GraphTraceName | None = None,
    attribution: AttributionName = "order",
) -> None:
    """Sets how this process's CUPTI session traces kernels and CUDA graphs and attributes kernels
    to regions; call it before the first benchmark (the session starts then and keeps these
    settings for the process).

    * ``kernel_trace`` ("concurrent"): CUPTI's concurrent kernel records (kernels keep their
      concurrency and CUDA graphs their span; CUPTI instruments every kernel) or ``"serial"``
      (kernels one at a time, not instrumented; CUDA graphs untimed);
    * ``graph_trace`` (None: ``"graph"`` with concurrent records, ``"nodes"`` with serial ones):
      one record per graph launch (``"graph"``) or per-node records merged into the launch's span;
    * ``attribution`` ("order"): a kernel belongs to the innermost region open when it was
      launched, whatever thread launched it (CUPTI numbers launches; no launch API records), or
      ``"records"``: launch API records attribute the launches of the thread that opened a region
      exactly and other threads' by launch time (0.2-0.5 us more host time per launch). With
      ``"order"``, regions of two threads open at once get a warning.

    ``KPROF_KERNEL_TRACE``, ``KPROF_GRAPH_TRACE`` and ``KPROF_ATTRIBUTION``, when set, override
    these. Calling it again with other values after the engine started raises
    :class:`kprof.ConfigError`.
    """
    kernel = _parse("kernel_trace", kernel_trace)
    graph = None if graph_trace is None else _parse("graph_trace", graph_trace)
    order = _parse("attribution", attribution)
    try:
        _core.configure_trace(kernel, graph, order)
    except RuntimeError as e:
        raise ConfigError(str(e)) from None


def release_counters() -> None:
    """Gives the GPU's performance counters back now.

    With durations from the counters (``duration_source="auto"``, the default) or counter metrics,
    kprof keeps its counter session (CUPTI's Range Profiler) open between the benchmarks of a
    process: opening one costs about 0.3 s. While it is open no other profiler can read that GPU's
    counters: Nsight Compute started from this process or beside it fails with "a driver resource
    was unavailable" (seen on the H200), as does DCGM's profiling. Call this before starting one;
    the next kprof benchmark opens a session again. kprof's own ``backend="ncu"`` and scale-out
    workers call it themselves.

    Called on the thread that ran the benchmarks, it also ends kprof's profiler there and detaches
    CUPTI from the process (``cuptiFinalize``, CUPTI 13.0 and later): while a CUPTI client stays
    attached, the driver runs CUDA graphs slower (on the H200 a graph captured from two streams
    took 172 µs by CUDA events before kprof and 193-200 µs after its benchmarks). Call it before
    timing other GPU work in the same process; the next benchmark attaches again. CUPTI stays
    attached, with a warning, while a CUDA graph instantiated during kprof's benchmarks is alive
    (such a graph fails once CUPTI detaches: ``CUDA_ERROR_LAUNCH_FAILED`` on the H200).
    """
    detach = _core.release_counters()
    if detach == "graphs":
        warnings.warn(
            "kprof.release_counters(): CUPTI stays attached to this process because CUDA graphs "
            "instantiated during kprof's benchmarks may still be alive (one would fail once CUPTI "
            "detaches); CUDA graphs in this process run slower under it (by several percent: docs/timing.md). Free "
            "those graphs (e.g. torch's CUDAGraph.reset()) before calling release_counters() to let "
            "kprof detach CUPTI",
            stacklevel=_warn.stacklevel(),
        )
