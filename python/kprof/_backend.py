"""The measurement backend interface, and the slot holding the installed backend.

A backend runs a benchmark: it calls the user's function for every config and run, times the
GPU work inside :func:`kprof.annotate` regions and returns one raw row per
(annotation x config x run x metric). The CUPTI engine (Rust, ``kprof._core``) is the real one;
tests install a fake with :func:`set_backend`.

The contract, in full (the Rust bindings implement exactly this):

``run_benchmark(name, func, configs, options, progress) -> RawTable``

* ``name`` (str): the benchmark name, the decorated function's ``__name__``.
* ``func`` (callable): ``func(config_index: int) -> None`` runs the user's function once with
  config ``configs[config_index]``. Call it for warm-up calls too. It raises whatever the user's
  code raises; the backend must stop and let the exception propagate unchanged (with its
  traceback). It must be called with the GIL held, from the thread that called ``run_benchmark``.
* ``configs`` (list[list[tuple[str, object]]]): one list of ``(parameter name, value)`` pairs per
  config, values as the user gave them (ints, floats, bools, strs, or any object such as a
  ``torch.dtype``; ``kprof._core.convert_config`` turns them into kprof-core ``Config``\\ s).
* ``options`` (dict): the validated options, see :data:`OPTION_KEYS`.
* ``progress``: a :class:`Progress`. Call ``progress.advance(config_index)`` after each
  *measured* run (not after warm-up calls), ``progress.set_total(n)`` when the number of runs
  changes (adaptive stopping), and ``progress.debug(message)`` for DEBUG-level messages.

While ``func`` runs, each ``kprof.annotate(name)`` calls ``_enter_region(name)`` and
``_exit_region(name, failed)`` on the *installed* backend (see :func:`get_backend`). ``failed`` is
true when the region's body raised; with ``annotate(..., ignore_failures=True)`` the exception is
then swallowed and the backend records ``NaN`` as that region's value in that run.

The returned ``RawTable`` is a dict of equally long column lists:

=============== ======================================================================
column          values
=============== ======================================================================
Annotation      str, the region name
Value           float (NaN for a failed region)
Metric          str, e.g. ``gpu__time_duration.sum``
Kernel          str, kernel name (several combined kernels joined with ``|``)
GPU             str, e.g. ``NVIDIA H200``
Host            str, host name
ComputeClock    float or None, rated SM clock in kHz
MemoryClock     float or None, rated memory clock in kHz
Unit            str, e.g. ``ns``
Benchmark       str, the ``name`` argument
Run             int, 0-based index of the measured run within its config
_config         int, index into ``configs`` of the row's config
=============== ======================================================================

Parameter columns need not be returned: kprof rebuilds them from ``_config`` with the user's
original objects (and overwrites any that are returned), then drops ``_config``.

A backend other than the CUPTI engine may have ``fingerprint() -> dict | None``: the environment
of its last run, as the engine's fingerprint (``gpu_name``, ``uuid``, ``nvml_index``, ...), which
becomes ``results.fingerprint`` and, in scale-out workers, the ``DeviceUUID`` column.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from . import _core


__all__ = [
    "Backend",
    "Progress",
    "RawTable",
    "RAW_COLUMNS",
    "OPTION_KEYS",
    "get_backend",
    "set_backend",
]

#: A dict of column name -> list of values, all lists of one length.
RawTable = dict[str, list]

#: The raw columns a backend must return, in the order of the raw table
#: (parameter columns go between ``Unit`` and ``Benchmark``).
RAW_COLUMNS: tuple[str, ...] = _core.RAW_COLUMNS

#: The keys of the ``options`` dict handed to ``run_benchmark``:
#:
#: * ``runs`` (int >= 1): measured runs per config (the minimum when a target is set);
#: * ``warmup`` (int >= 0): unmeasured calls per config before the measured runs;
#: * ``order`` ("interleaved" | "sequential"): interleaved = run r of every config, then run r+1;
#:   sequential = all runs of config 0, then config 1 (nsight-python's order);
#: * ``metrics`` (list[str]): metric names: ``gpu__time_duration.sum`` and any hardware counter (ncu name);
#: * ``ignore_kernel_list`` (list[str] | None): kernel names dropped before attribution (exact);
#: * ``combine_kernel_metrics`` (None | str | callable): how several kernels in one region become
#:   one value: None = nsight's rule (one kernel expected), a reducer name ("sum", "mean", "max",
#:   "min", "first", "last"), or a callable ``f(a, b)`` applied with reduce, called with floats,
#:   once per metric, with the GIL held;
#: * ``duration_source`` ("records" | "counters" | "auto"): gpu__time_duration.sum from CUPTI kernel
#:   records ("records"), from the counter of that name ("counters"), or the counter
#:   when available ("auto", the default) (CUPTI backend; ncu's durations are always its counter);
#: * ``cache_control`` ("all" | "none"), ``clock_control`` ("none"), ``replay_mode``
#:   ("application" | "kernel" | "range"),
#:   ``thermal_mode`` ("auto" | "manual" | "off"), ``thermal_wait`` / ``thermal_cont`` (°C of
#:   headroom, None: 10 / 20), ``thermal_timeout`` (s, None: 180), ``thermal_device`` (CUDA ordinal
#:   or None: the benchmark's device; another device is an error): nsight-python's thermal guard,
#:   checked before every run;
#: * ``l2_flush`` ("read" | "discard" | "write"), ``l2_flush_bytes`` (int | None: twice the L2),
#:   ``counter_pass_records`` (bool): how the cold-cache flush empties the L2, its buffer's size,
#:   and whether CUPTI's kernel records stay on during counter passes (absent: the defaults;
#:   ``KPROF_L2_FLUSH``, ``KPROF_L2_FLUSH_BYTES``, ``KPROF_COUNTER_PASS_RECORDS`` override them);
#: * ``one_pass`` (bool): recorded runs of eager kernels in one counter pass where one is enough
#:   (absent: True; ``KPROF_ONE_PASS`` overrides it);
#: * ``target_rsd`` (float % | None), ``target_ci`` (float % | None): stop a config's runs once its
#:   relative std dev / relative CI95 half-width is below this;
#: * ``max_runs`` (int | None), ``time_budget`` (float seconds | None): caps of adaptive runs;
#: * ``verbosity`` (int): a :class:`kprof.VerbosityLevel` value;
#: * ``backend`` ("cupti" | "cuda-events" | "ncu"): CUPTI kernel records, or the CUDA-events fallback;
#:   "ncu" reaches a backend only in an ncu child (``kprof._ncu``), to run the selected benchmark;
#: * ``ncu_options`` (dict | None): more ncu arguments for backend="ncu" (see ``kprof._ncu``);
#: * ``output_prefix`` (str, only with ``output_csv=True``): write the raw CSV
#:   ``<output_prefix><name>-raw.csv`` after every finished configuration.
OPTION_KEYS = (
    "runs",
    "warmup",
    "order",
    "metrics",
    "ignore_kernel_list",
    "combine_kernel_metrics",
    "cache_control",
    "clock_control",
    "replay_mode",
    "l2_flush",
    "l2_flush_bytes",
    "counter_pass_records",
    "one_pass",
    "duration_source",
    "thermal_mode",
    "thermal_wait",
    "thermal_cont",
    "thermal_timeout",
    "thermal_device",
    "target_rsd",
    "target_ci",
    "max_runs",
    "time_budget",
    "verbosity",
    "backend",
    "output_prefix",
    "ncu_options",
)


@runtime_checkable
class Progress(Protocol):
    """What the backend reports progress through (implemented by :mod:`kprof.progress`)."""

    def advance(self, config_index: int | None = None) -> None: ...

    def set_total(self, total: int) -> None: ...

    def debug(self, message: str) -> None: ...


@runtime_checkable
class Backend(Protocol):
    """A measurement backend (see the module doc string for the full contract)."""

    def run_benchmark(
        self,
        name: str,
        func: Callable[[int], None],
        configs: list[list[tuple[str, Any]]],
        options: dict[str, Any],
        progress: Progress,
    ) -> RawTable: ...

    def _enter_region(self, name: str) -> None: ...

    def _exit_region(self, name: str, failed: bool) -> None: ...


class CuptiBackend:
    """The CUPTI activity engine (Rust, ``kprof._core``): times kernels in this process.

    The first benchmark loads libcuda and libcupti (a libcupti PyTorch already mapped is reused;
    site-packages ``nvidia/cu13/lib`` and ``nvidia/cuda_cupti/lib`` are searched) and starts the
    CUPTI session, which then stays for the life of the process.
    """

    def run_benchmark(self, name, func, configs, options, progress):
        from . import _core

        _export_site_packages()
        return _core.run_benchmark(name, func, configs, options, progress)

    def _enter_region(self, name: str) -> None:
        from . import _core

        _core.enter_region(name)

    def _exit_region(self, name: str, failed: bool) -> None:
        from . import _core

        _core.exit_region(name, failed)

    def _in_counter_pass(self) -> bool:
        """Whether the run being measured is calling the function for its counter pass."""
        from . import _core

        return _core.in_counter_pass()


def _export_site_packages() -> None:
    """Tells the engine's library search where pip's NVIDIA wheels live (``KPROF_PYTHON_SITE_PACKAGES``)."""
    import os
    import site
    import sys

    if "KPROF_PYTHON_SITE_PACKAGES" in os.environ:
        return
    dirs = []
    try:
        dirs.extend(site.getsitepackages())
    except AttributeError:  # virtualenv's old site module
        pass
    dirs.extend(p for p in sys.path if p.endswith("site-packages"))
    os.environ["KPROF_PYTHON_SITE_PACKAGES"] = os.pathsep.join(dict.fromkeys(dirs))


#: The installed backend. ``kprof.annotate`` calls its region hooks; ``@kernel(backend="cupti")``
#: runs benchmarks through it.
_backend: Backend = CuptiBackend()


def get_backend() -> Backend:
    """The installed backend."""
    return _backend


def set_backend(backend: Backend | None) -> Backend:
    """Installs ``backend`` (None: the CUPTI engine) and returns the previous one."""
    global _backend
    previous = _backend
    _backend = CuptiBackend() if backend is None else backend
    return previous
