"""``kprof.analyze.kernel``: profile a function over configs and runs (nsight-python 1.1's API).

Every option is validated when the decorator is applied, and the configs when the decorated
function is called, always before any GPU work.
"""

from __future__ import annotations

import collections.abc
import contextlib
import functools
import inspect
import json
import os
import re
import sys
import tempfile
import threading
import warnings
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterable, Literal

from . import _warn
from . import _backend, _core, _measurement, _ncu, _options, annotation, plotting
from . import scaleout as _scaleout
from . import collectors as _collectors
from . import timeline as _timeline
from ._backend import RAW_COLUMNS
from ._launch_metrics import LaunchMetrics
# The typing of the options with choices; the decorator checks their values against the engine's
# option model (``_options.check_choice``), when it is applied.
from ._options import BackendName, CacheControlName, ClockControlName, DurationSourceName
from ._options import OrderName, ReplayModeName, ThermalModeName
from ._settings import DEFAULT_METRIC, REDUCERS, Settings, _callable_name, _is_int, _validate
from .exceptions import BackendError, ConfigError, ProfilerError, not_available
from .progress import ProgressReporter
from .results import ProfileResults
from .utils import VerbosityLevel

__all__ = ["kernel", "plot", "ignore_failures", "DEFAULT_METRIC", "REDUCERS"]

# ---------------------------------------------------------------------------------------------
# configs


@dataclass(frozen=True)
class Signature:
    """The parameters of a decorated function that configs fill, in order."""

    func_name: str
    names: tuple[str, ...]
    n_positional: int  # the first n_positional are passed positionally, the rest by keyword
    required: int  # a config needs at least this many values (the rest have defaults)
    defaults: tuple[Any, ...]  # default of each parameter (inspect.Parameter.empty when none)
    sig: inspect.Signature

    @classmethod
    def of(cls, func: Callable) -> "Signature":
        sig = inspect.signature(func)
        P = inspect.Parameter
        positional = [p for p in sig.parameters.values() if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
        kwonly = [p for p in sig.parameters.values() if p.kind is P.KEYWORD_ONLY]
        params = positional + kwonly
        required = 0
        for i, p in enumerate(params):
            if p.default is P.empty:
                required = i + 1
        return cls(
            func_name=getattr(func, "__name__", "function"),
            names=tuple(p.name for p in params),
            n_positional=len(positional),
            required=required,
            defaults=tuple(p.default for p in params),
            sig=sig,
        )

    def describe(self) -> str:
        return f"{self.func_name}({', '.join(self.names)})"

    def arity(self) -> str:
        lo, hi = self.required, len(self.names)
        if lo == hi:
            return f"{hi} value{'s' if hi != 1 else ''}"
        return f"{lo} to {hi} values"

    def complete(self, index: int, config: Any) -> tuple[Any, ...]:
        """One config as the full tuple of parameter values (trailing defaults padded)."""
        if isinstance(config, (str, bytes)) or not isinstance(config, collections.abc.Sequence):
            values: tuple = (config,)
            scalar = True
        else:
            values = tuple(config)
            scalar = False
        n = len(values)
        if not (self.required <= n <= len(self.names)):
            shown = f"the single value {config!r}" if scalar else f"{config!r} ({n} value{'s' if n != 1 else ''})"
            raise ConfigError(
                f"config {index} is {shown}, but {self.describe()} takes {self.arity()}: "
                f"({', '.join(self.names)})"
                + (
                    f"; parameters without defaults: ({', '.join(self.names[: self.required])})"
                    if 0 < self.required < len(self.names)
                    else ""
                )
            )
        return values + self.defaults[n:]

    def call_args(self, values: tuple) -> tuple[tuple, dict]:
        return values[: self.n_positional], dict(zip(self.names[self.n_positional :], values[self.n_positional :]))


def resolve_configs(
    sig: Signature, deco_configs: Any, call_configs: Any, args: tuple, kwargs: dict
) -> list[tuple[Any, ...]]:
    """nsight-python's config rules; returns full value tuples (one per config)."""
    if kwargs or args:
        if call_configs is not None or deco_configs is not None:
            where = "at call time" if call_configs is not None else "to @kernel(configs=...)"
            raise ConfigError(
                f"{sig.func_name}() got arguments and configs {where}; either call it with the "
                "arguments of one config, or give configs, not both"
            )
        if kwargs:
            try:
                bound = sig.sig.bind(*args, **kwargs)
            except TypeError as e:
                raise ConfigError(f"{sig.describe()}: {e}") from None
            bound.apply_defaults()
            return [tuple(bound.arguments[n] for n in sig.names)]
        return [sig.complete(0, args)]

    if deco_configs is not None and call_configs is not None:
        raise ConfigError(
            f"configs were given both to @kernel(configs=...) and when calling {sig.func_name}(); "
            "give them in one place"
        )
    configs = call_configs if call_configs is not None else deco_configs
    if configs is None:
        if sig.required == 0:
            return [sig.complete(0, ())]
        raise ConfigError(
            f"no configs for {sig.describe()}: pass configs=[...] to @kernel or when calling, or "
            f"call it with the arguments of one config"
        )
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Iterable):
        raise ConfigError(f"configs must be an iterable of configs (a list, a generator, ...), got {configs!r}")
    configs = list(configs)  # materialises generators
    if not configs:
        raise ConfigError(f"configs for {sig.func_name}() is empty; give at least one config")
    return [sig.complete(i, c) for i, c in enumerate(configs)]


def _check_derive_arity(derive: Callable, metrics: tuple[str, ...], sig: Signature) -> None:
    try:
        dsig = inspect.signature(derive)
    except (TypeError, ValueError):
        return
    P = inspect.Parameter
    ps = list(dsig.parameters.values())
    if any(p.kind is P.VAR_POSITIONAL for p in ps):
        return
    positional = [p for p in ps if p.kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is P.empty]
    n = len(metrics) + len(sig.names)
    if not (len(required) <= n <= len(positional)):
        raise ConfigError(
            f"derive_metric {_callable_name(derive)}{dsig} is called with {n} arguments "
            f"(the metric values {list(metrics)} then the parameters {list(sig.names)}), "
            f"but it takes {len(positional)}"
        )


# ---------------------------------------------------------------------------------------------
# output files


_RUN_IDS: dict[str, int] = {}
_RUN_IDS_LOCK = threading.Lock()


def file_tag(func: Callable) -> str:
    """The function's ``module.qualname``, made safe as a key (the ncu relaunch selects the
    benchmark by it); result files are named by :func:`file_name_tag`."""
    tag = f"{getattr(func, '__module__', None) or 'unknown'}.{getattr(func, '__qualname__', None) or getattr(func, '__name__', 'function')}"
    tag = re.sub(r"[^A-Za-z0-9_.-]+", "_", tag).strip("._") or "function"
    return tag


def file_name_tag(func_name: str) -> str:
    """The function's ``__name__`` made safe for file names, as nsight-python names its files
    (``profiled_data-<name>-<run id>.csv``); ``__main__``-style underscores are kept."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", func_name).strip(".") or "function"


def _next_run_id(tag: str) -> int:
    with _RUN_IDS_LOCK:
        return _RUN_IDS.get(tag, 0)


def _commit_run_id(tag: str, run_id: int) -> None:
    with _RUN_IDS_LOCK:
        _RUN_IDS[tag] = max(_RUN_IDS.get(tag, 0), run_id + 1)


# ---------------------------------------------------------------------------------------------
# the decorator


def kernel(
    _func: Callable | None = None,
    *,
    configs: Iterable | None = None,
    runs: int = 1,
    derive_metric: Callable | None = None,
    normalize_against: str | None = None,
    verbosity: VerbosityLevel = VerbosityLevel.INFO,
    metrics: Iterable[str] | str = (DEFAULT_METRIC,),
    ignore_kernel_list: Iterable[str] | None = None,
    clock_control: ClockControlName = "none",
    cache_control: CacheControlName = "all",
    replay_mode: ReplayModeName | None = None,
    thermal_mode: ThermalModeName = "auto",
    thermal_wait: float | None = None,
    thermal_cont: float | None = None,
    thermal_timeout: float | None = None,
    thermal_device: int | None = None,
    combine_kernel_metrics: Callable | str | None = None,
    output_prefix: str | None = None,
    output_csv: bool = False,
    info_collectors: Iterable | None = None,
    warmup: int = 1,
    order: OrderName = "interleaved",
    target_rsd: float | None = None,
    target_ci: float | None = None,
    max_runs: int | None = None,
    time_budget: float | None = None,
    backend: BackendName = "cupti",
    ncu_options: dict | None = None,
    throughput: Callable | None = None,
    duration_source: DurationSourceName = "auto",
    l2_flush: _measurement.L2FlushName = "read",
    l2_flush_bytes: int | None = None,
    counter_pass_records: bool = False,
    one_pass: bool = True,
    store: str | os.PathLike | None = None,
    devices: str | Iterable[int] | None = None,
    executor: Any = None,
    pool_devices: bool = False,
    runs_per_task: int | None = None,
    configs_per_task: int = 1,
    worker_timeout: float = 60.0,
):
    """Profiles the decorated function: ``@kernel``, ``@kernel()`` or ``@kernel(**options)``.

    Calling the decorated function runs it for every config, ``runs`` times each (after
    ``warmup`` unmeasured calls), measures the GPU work inside each :func:`kprof.annotate` region
    and returns a :class:`kprof.ProfileResults`.

    nsight-python 1.1's options keep their names, defaults and meaning (see
    ``docs/python-differences.md`` for the deliberate differences):

    * ``configs`` (None): the configurations, one tuple (or value) of arguments per config; or
      pass them when calling the function;
    * ``runs`` (1): measured runs per config (the minimum with adaptive stopping);
    * ``metrics`` (``["gpu__time_duration.sum"]``): what to measure, Nsight Compute metric names;
      Nsight Compute's section and set names (``"SpeedOfLight"``, ``"MemoryWorkloadAnalysis"``,
      ``"basic"``, ...) stand for their metrics, expanded for the GPU's chip at the first call;
    * ``derive_metric`` (None): ``f(*metric values, *config values)`` giving one more metric (or
      a dict of them) per annotation and run;
    * ``throughput`` (None): ``f(*config values)`` giving the work of one run, e.g.
      ``{"flops": 2 * n**3, "bytes": 3 * 4 * n * n}``, for ``results.throughput()`` (rates with
      the duration's CI, % of the peaks the counters measured; :mod:`kprof.throughput`);
    * ``normalize_against`` (None): an annotation; the others become ratios to it, each with its
      own (Fieller) confidence interval;
    * ``ignore_kernel_list`` (None): kernels to leave out, by mangled or demangled name (with or
      without parameters) or bare function name;
    * ``combine_kernel_metrics`` (None): how the kernels of one annotation combine: a function of
      two values or "sum"/"mean"/"max"/"min"/"first"/"last" (kprof sums by default and keeps the
      per-kernel breakdown);
    * ``clock_control`` ("none") and ``cache_control`` ("all": instruction caches and L2 emptied
      before every run and annotation, as Nsight Compute's cache control; "none": warm cache);
    * ``thermal_mode`` ("auto"), ``thermal_wait``, ``thermal_cont``, ``thermal_timeout``,
      ``thermal_device``: wait for the GPU to cool down before runs (needs NVML);
    * ``output_prefix`` (None) and ``output_csv`` (False): write ``profiled_data-<function>-<n>.csv``
      and ``processed_data-<function>-<n>.csv`` (missing folders are created);
    * ``info_collectors`` (None): ``(name, callback, scope)`` columns added to the results;
    * ``verbosity`` (``VerbosityLevel.INFO``): progress and messages on stderr.

    kprof's own options:

    * ``warmup`` (1): unmeasured calls per config before the measured runs;
    * ``order`` ("interleaved"): run r of every config before run r+1 ("sequential": all runs of
      one config, then the next, as nsight-python);
    * ``target_rsd`` / ``target_ci`` (percent): keep running a config until its relative standard
      deviation / relative CI95 half-width falls below the target, with ``runs`` as the minimum
      and ``max_runs`` / ``time_budget`` (seconds) as the caps;
    * ``replay_mode`` (None: ``"application"`` with the CUPTI backend, ``"kernel"`` with
      ``backend="ncu"``) for counter metrics: ``"application"`` (one value per kernel, the
      function re-run once per pass with the L2 flushed as in the timed run, as Nsight Compute's
      application replay: the values ncu gives, also for counters that depend on the cache),
      ``"kernel"`` (CUPTI replays each kernel and cannot flush the L2 between its passes: DRAM
      rates of data larger than the L2 read ~2 points above ncu) or ``"range"`` (one value per
      annotation, rates over its whole time);
    * ``l2_flush`` ("read"), ``l2_flush_bytes`` (None: twice the L2), ``counter_pass_records``
      (False): how the cold cache is made (a kernel reads a buffer; ``"discard"`` then drops its
      lines, both after a kernel that empties the instruction caches; ``"write"`` only memsets
      it, as Triton and NVBench), and whether CUPTI's kernel records stay on in counter passes
      (CUPTI backend; ``KPROF_L2_FLUSH``, ``KPROF_L2_FLUSH_BYTES``, ``KPROF_COUNTER_PASS_RECORDS``
      override them when set; ``kprof.configure`` sets the per-process kernel and graph tracing
      and how kernels are attributed to regions);
    * ``one_pass`` (True): with durations from the counters, a cold cache and application replay,
      a recorded run of eager kernels runs the function once, under the counters, its kernels
      mapped to regions through the warm-up's records; False gives every recorded run its timing
      pass too (``KPROF_ONE_PASS``, when set, overrides it);
    * ``duration_source`` ("auto"): where ``gpu__time_duration.sum`` comes from with the CUPTI
      backend. ``"auto"``: the hardware counter of that name, as Nsight Compute measures it, from
      the counter pass of each recorded run (kernel records off; see ``one_pass``), when the
      counters can be used, else the records with a warning (also for functions that replay CUDA graphs
      captured before kprof's first benchmark, whose spans a counter pass would corrupt);
      ``"counters"``: the counters or an error (with ``replay_mode="range"``, whose ranges time
      push to pop, idle included, ``"auto"`` takes the records and ``"counters"`` is an error);
      ``"records"``: CUPTI's kernel records of the timed
      run only (one pass; concurrent records: short kernels read between their in-stream time and
      ncu's). CUDA graph replays always count as their GPU span, from the timed run. The ``DurationSource``
      column of every row says which source gave it (docs/timing.md): ``counters``, ``records``
      (also a region of graph replays only), ``counters+records`` (eager kernels by the counters
      and graph replays by their span) or ``cuda-events``. With ``backend="ncu"``
      durations are always ncu's counter;
    * ``backend`` ("cupti"): the measurement backend; ``"cuda-events"`` times each annotation with
      two CUDA events instead (no CUPTI needed, e.g. while torch.profiler holds CUPTI, and no
      CUPTI to slow CUDA graphs: the way to time graphs captured from several streams; the
      default stream is held until the annotation's work is queued, so the host's launch gaps do
      not count; metric ``cuda_event_elapsed.sum``, no kernel names; one backend per process:
      choose it in a process where kprof's CUPTI session has not started); ``"ncu"`` re-runs the script
      under Nsight Compute (relaunch mode, see :mod:`kprof._ncu`): any ncu metric,
      ``clock_control="base"`` and ``ncu_options``
      (``set``, ``sections``, ``target_processes``, ``launch_skip``, ``launch_count``,
      ``extra_args``, ``mode``: ``"auto"``/``"relaunch"``/``"attach"``, where attach, ncu >= 2026.2.1, is
      not implemented yet); the ``.ncu-rep`` is kept. Not in notebooks;
    * ``store`` (None): the path of a results store (``"kprof.db"``); every call's results are
      stored there as one run (:meth:`ProfileResults.save_to_store`), for ``kprof history`` and
      ``kprof compare --against``.

    Several GPUs and clusters (:mod:`kprof.scaleout`, ``docs/scaleout.md``): ``devices``
    (``"all"`` or CUDA ordinals such as ``[0, 2]``: one worker process per entry, pinned to its GPU,
    fed configurations from one queue) or ``executor`` (any object with ``submit(fn, *args)``: a
    ``concurrent.futures`` executor, a ``dask.distributed.Client``, a submitit executor; one task per
    ``configs_per_task`` configurations, one GPU per task); ``runs_per_task`` splits a
    configuration's runs over several tasks, whose rows stay apart per GPU unless ``pool_devices``;
    ``worker_timeout`` (seconds without a heartbeat) declares an executor's task lost. The results
    gain the columns ``Device``, ``DeviceUUID`` and ``Failure``.
    """
    # Every keyword, by name (the first statement: nothing else is local yet); the keywords are
    # the option model's (tests/python/test_option_model.py).
    opts = dict(locals())
    del opts["_func"]
    if _func is not None and not callable(_func):
        raise ConfigError(
            f"@kernel takes keyword-only options (e.g. @kernel(configs=[...])); got the positional argument {_func!r}"
        )
    settings = _validate(opts)

    def decorate(func: Callable) -> Callable:
        if not callable(func):
            raise ConfigError(f"@kernel decorates a function, got {func!r}")
        return _make_wrapper(func, settings)

    return decorate if _func is None else decorate(_func)


def _import_pandas_now() -> None:
    """Imports pandas when a benchmark is decorated, as nsight-python imports it with its package:
    the first table of a process (``to_dataframe``, ``raw``) then costs what later ones do instead
    of pandas' import inside the first measured call (0.26-0.54 s on the H200 machine,
    docs/timing.md). Not at ``import kprof``: the ``kprof`` console command imports the package
    and never needs pandas."""
    try:
        import pandas  # noqa: F401
    except ImportError:  # ProfileResults says how to install it when a table is asked for
        pass


def _make_wrapper(func: Callable, settings: Settings) -> Callable:
    _import_pandas_now()
    sig = Signature.of(func)
    tag = file_tag(func)
    if settings.configs is not None:  # configs given at decoration are checked now
        for i, c in enumerate(settings.configs):
            sig.complete(i, c)
    _collectors.normalize(settings.info_collectors, sig.names)  # names vs. parameters
    state = {"prefix": settings.output_prefix}

    @functools.wraps(func)
    def wrapper(*args, configs=None, **kwargs):
        return _profile(func, sig, tag, settings, state, args, configs, kwargs)

    wrapper._kprof_settings = settings  # type: ignore[attr-defined]
    wrapper._kprof_tag = tag  # type: ignore[attr-defined]
    return wrapper


def _expand_sections(settings: Settings, state: dict) -> Settings:
    """``settings`` with Nsight Compute's section and set names in ``metrics`` (``SpeedOfLight``,
    ``basic``) replaced by their metric names for the GPU's chip (``_core.expand_metrics``), once
    per decorated function, at its first call (the chip needs the GPU); what a section names that
    the counters cannot give is said in a warning."""
    if _ncu.in_child():  # ncu measures there, from the parent's (expanded) metric names
        return settings
    if "metrics" not in state:
        metrics, note, passes = _core.expand_metrics(list(settings.metrics))
        if note:
            warnings.warn(f"kprof: {note}", stacklevel=4)
        if passes is not None and settings.verbosity >= VerbosityLevel.INFO:
            print(f"kprof: metrics: {len(metrics)} metrics, {passes} replay passes per kernel", file=sys.stderr)
        state["metrics"] = tuple(metrics)
    if state["metrics"] == settings.metrics:
        return settings
    return replace(settings, metrics=state["metrics"])


def _profile(func, sig: Signature, tag: str, settings: Settings, state: dict, args, call_configs, kwargs):
    configs = resolve_configs(sig, settings.configs, call_configs, args, kwargs)
    backend = _backend.get_backend()
    pairs = [list(zip(sig.names, values)) for values in configs]
    if settings.backend == "ncu" or _ncu.in_child():
        # ncu relaunch mode: in the child only the selected benchmark runs (kprof/_ncu.py).
        backend = _ncu.NcuBackend(tag, backend) if settings.backend == "ncu" else None
        if backend is None or backend.skip:
            raw, _ = _finish_raw(_ncu.empty_table(), sig, pairs)
            return ProfileResults(raw, list(sig.names), normalize_against=settings.normalize_against, benchmark=sig.func_name)
    # After the ncu child's skip: a process under ncu asks nothing of CUPTI for the others.
    settings = _expand_sections(settings, state)
    if settings.derive_metric is not None:
        _check_derive_arity(settings.derive_metric, settings.metrics, sig)
    if settings.scaleout is not None:
        # devices= / executor=: worker processes measure the configs (kprof/scaleout.py).
        results = _scaleout.profile(func, sig, settings, state, configs)
        results.throughput_work = settings.extra.get("throughput")
        return results

    # With adaptive stopping the bar starts at the most runs a config may get (the engine's
    # default cap: max(runs, 100)); the engine lowers the total as configs stop.
    adaptive = settings.target_rsd is not None or settings.target_ci is not None
    expected_runs = (settings.max_runs or max(settings.runs, 100)) if adaptive else settings.runs
    progress = ProgressReporter(sig.func_name, len(configs), expected_runs, settings.verbosity)
    options = settings.backend_options()
    # Files carry the function's name (nsight-python's naming); the run id counts the calls of
    # every function of that name in this process, so two of them never overwrite each other.
    name_tag = file_name_tag(sig.func_name)
    run_id = _next_run_id(name_tag)
    partial = None
    if settings.output_csv:
        # The engine rewrites this raw CSV after every finished configuration, so an exception or
        # Ctrl-C keeps what was measured; it is removed once the complete files are written.
        options["output_prefix"] = f"{output_prefix(state)}partial-{name_tag}-{run_id}-"
        partial = f"{options['output_prefix']}{sig.func_name}-raw.csv"
    if isinstance(backend, _ncu.NcuBackend):
        backend.report_prefix = state["prefix"]
    try:
        raw, config_index = measure(func, sig, settings, configs, backend, options, progress)
    except BaseException:
        if partial is not None and os.path.exists(partial):
            progress.info(f"kprof: the runs measured before the failure are in {partial}")
        raise
    finally:
        progress.close()

    results = ProfileResults(raw, list(sig.names), normalize_against=settings.normalize_against, benchmark=sig.func_name)
    results.throughput_work = settings.extra.get("throughput")
    results.fingerprint = _fingerprint(backend)  # type: ignore[attr-defined]
    deliver(results, settings, state, name_tag, run_id, progress)
    if partial is not None:
        # The engine's per-configuration raw CSV and its fingerprint sidecar.
        for leftover in (partial, os.path.splitext(partial)[0] + ".env.json"):
            if os.path.exists(leftover):
                os.remove(leftover)
    return results


def output_prefix(state: dict) -> str:
    """The call's output prefix: ``output_prefix``, else a new temporary folder (kept for later calls)."""
    if state["prefix"] is None:
        state["prefix"] = tempfile.mkdtemp(prefix="kprof_") + os.sep
    return state["prefix"]


def measure(
    func: Callable, sig: Signature, settings: Settings, configs: list[tuple], backend: Any, options: dict, progress: Any
) -> tuple[dict[str, list], list[int]]:
    """Runs ``configs`` through ``backend`` with ``options``: the raw table (parameter columns,
    info-collector columns and derived metrics included) and each row's index into ``configs``.
    The one measuring path of a call, in this process or in a scale-out worker."""
    pairs = [list(zip(sig.names, values)) for values in configs]
    calls = [sig.call_args(values) for values in configs]
    returned = {"warned": False}

    session = _collectors.Session(settings.info_collectors, configs, settings.warmup) if settings.info_collectors else None

    def call(config_index: int) -> None:
        a, kw = calls[config_index]
        if session is not None:
            session.before_call(config_index)
        annotation._begin_run()
        try:
            ret = func(*a, **kw)
        finally:
            annotation._end_run()
            if session is not None:
                session.after_call()
        if ret is not None and not returned["warned"]:
            returned["warned"] = True
            warnings.warn(
                f"{sig.func_name}() returned {type(ret).__name__}; kprof discards the return value of a "
                "profiled function",
                RuntimeWarning,
                stacklevel=_warn.stacklevel(),
            )

    launch = LaunchMetrics.of(list(settings.metrics), settings.combine_kernel_metrics, settings.backend)
    if launch is not None:  # ncu's launch__sm_count: from the device, not the engine's counters
        options = {**options, "metrics": launch.engine}
    _collectors._active = session
    try:
        table = backend.run_benchmark(sig.func_name, call, pairs, options, progress)
    finally:
        _collectors._active = None
    timeline = table.pop(_timeline.TIMELINE_KEY, None) if isinstance(table, dict) else None
    raw, config_index = _finish_raw(table, sig, pairs)
    if launch is not None:
        launch.add_rows(raw, config_index, _fingerprint(backend))
    if session is not None:
        session.add_columns(raw, config_index)
    if settings.derive_metric is not None:
        _append_derived(raw, config_index, configs, settings)
    if timeline is not None:  # ProfileResults takes it out of the table (to_trace)
        raw[_timeline.TIMELINE_KEY] = _timeline.complete(timeline, raw, config_index, pairs)
    return raw, config_index


def deliver(results: ProfileResults, settings: Settings, state: dict, name_tag: str, run_id: int, progress: Any) -> None:
    """Writes a finished call's files (``output_csv``) and stores it (``store``)."""
    results.files = []  # type: ignore[attr-defined]
    if settings.output_csv:
        prefix = output_prefix(state)
        raw_path = f"{prefix}profiled_data-{name_tag}-{run_id}.csv"
        results._write_raw_csv(raw_path)
        results.files.append(raw_path)
        progress.info(f"kprof: wrote {raw_path}")
        processed_path = f"{prefix}processed_data-{name_tag}-{run_id}.csv"
        results.save(processed_path)
        results.files.append(processed_path)
        progress.info(f"kprof: wrote {processed_path}")
        fingerprint = getattr(results, "fingerprint", None)
        if fingerprint is not None:
            for path in (raw_path, processed_path):
                _write_sidecar(path, fingerprint)
    if settings.store is not None:
        stored = results.save_to_store(settings.store)
        results.store_run_id = stored  # type: ignore[attr-defined]
        progress.info(f"kprof: stored run {stored} in {settings.store}")
    _commit_run_id(name_tag, run_id)


def _finish_raw(table: Any, sig: Signature, pairs: list) -> tuple[dict[str, list], list[int]]:
    """Checks the backend's table and rebuilds the parameter columns from the user's objects."""
    if not isinstance(table, dict):
        raise BackendError(f"the backend returned {type(table).__name__}, expected a dict of columns")
    needed = [*RAW_COLUMNS, "_config"]
    missing = [c for c in needed if c not in table]
    if missing:
        raise BackendError(f"the backend's raw table has no column(s) {missing}")
    n = len(table["Annotation"])
    bad = {c: len(table[c]) for c in needed if len(table[c]) != n}
    if bad:
        raise BackendError(f"the backend's raw columns differ in length: Annotation has {n} rows, {bad}")
    idx = []
    for i in table["_config"]:
        if not _is_int(i) or not 0 <= i < len(pairs):
            raise BackendError(f"the backend's raw table has _config {i!r}, not an index into {len(pairs)} configs")
        idx.append(int(i))
    raw: dict[str, list] = {c: list(table[c]) for c in RAW_COLUMNS[:9]}
    for j, name in enumerate(sig.names):
        raw[name] = [pairs[i][j][1] for i in idx]
    raw["Benchmark"] = list(table["Benchmark"])
    raw["Run"] = [int(r) for r in table["Run"]]
    # Where each duration came from, and kprof's per-run conditions, when the backend gave them.
    for name in ("DurationSource", *_collectors.CONDITION_COLUMNS):
        if name in table and len(table[name]) == n:
            raw[name] = list(table[name])
    return raw, idx


def _fingerprint(backend: Any) -> dict | None:
    """The engine's environment fingerprint; for backend="ncu" the ncu run (version, mode and
    why, files); another backend's ``fingerprint()`` when it has one (test backends), else None;
    None before any run."""
    if not isinstance(backend, _backend.CuptiBackend):
        get = getattr(backend, "fingerprint", None)
        return get() if callable(get) else None
    from . import _core

    get = getattr(_core, "fingerprint_json", None)
    text = get() if get is not None else None
    return None if text is None else json.loads(text)


def _write_sidecar(csv_path: str, fingerprint: dict) -> str:
    """Writes ``<stem>.env.json`` next to a result CSV (``kprof show`` prints it)."""
    path = os.path.splitext(csv_path)[0] + ".env.json"
    from . import _core

    _core.write_file(path, (json.dumps(fingerprint, indent=2) + "\n").encode("utf-8"))
    return path


def _add_note(e: BaseException, note: str) -> None:
    """``e.add_note(note)`` (Python 3.11+); on 3.10 the note is appended to ``e.__notes__`` directly."""
    if hasattr(e, "add_note"):
        e.add_note(note)
    else:  # pragma: no cover - Python 3.10
        e.__notes__ = [*getattr(e, "__notes__", []), note]


def _append_derived(raw: dict[str, list], config_index: list[int], configs: list[tuple], settings: Settings) -> None:
    """Adds derive_metric's rows (nsight-python: called as f(*metric values, *config values)).

    The runs, the calls and the checks of the derived values are kprof-core's derived metrics
    (``_core.derive_rows``, the Rust API's ``apply_derived``); here the callable gets nsight's
    arguments and may return a number, a ``(number, unit)`` tuple or a dict of those by name. A
    derived row copies its run's first row but for Metric, Value and Unit."""
    from . import _core

    derive = settings.derive_metric
    default_name = getattr(derive, "__name__", "derived")
    warned_unit = False

    def call(row: int, values: list[float]) -> list[tuple[str, float, str | None]]:
        nonlocal warned_unit
        ci = config_index[row]
        try:
            out = derive(*values, *configs[ci])
        except Exception as e:
            _add_note(
                e,
                f"raised by derive_metric {_callable_name(derive)} for annotation {raw['Annotation'][row]!r}, "
                f"config {configs[ci]!r}, run {raw['Run'][row]}",
            )
            raise
        items = out.items() if isinstance(out, dict) else [(default_name, out)]
        derived = []
        for name, result in items:
            if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], str):
                value, unit = result
            else:
                value, unit = result, None
                if not warned_unit:
                    warned_unit = True
                    warnings.warn(
                        f"derive_metric {_callable_name(derive)} returned no unit for {name!r}; return "
                        "(value, 'unit') to set the Unit column",
                        RuntimeWarning,
                        stacklevel=_warn.stacklevel(),
                    )
            try:
                fvalue = float(value)
            except (TypeError, ValueError):
                raise ConfigError(
                    f"derive_metric {_callable_name(derive)} returned {value!r} for {name!r}; "
                    "it must return a number, a (number, unit) tuple or a dict of those"
                ) from None
            derived.append((str(name), fvalue, unit))
        return derived

    table = {c: raw[c] for c in RAW_COLUMNS}
    table["_config"] = config_index
    for row, name, value, unit in _core.derive_rows(table, list(settings.metrics), call):
        for col, values in raw.items():
            if col == "Metric":
                values.append(name)
            elif col == "Value":
                values.append(value)
            elif col == "Unit":
                values.append(unit)
            else:
                values.append(values[row])
        config_index.append(config_index[row])


# ---------------------------------------------------------------------------------------------
# the rest of nsight.analyze


def plot(
    filename: str | os.PathLike = "plot.png",
    metric: str | None = None,
    *,
    title: str | None = None,
    ylabel: str | None = None,
    annotate_points: bool = False,
    show_aggregate: str | None = None,
    plot_type: str = "line",
    plot_width: float | None = None,
    plot_height: float | None = None,
    row_panels: Iterable[str] | None = None,
    col_panels: Iterable[str] | None = None,
    x_keys: Iterable[str] | None = None,
    print_data: bool = False,
    variant_fields: Iterable[str] | None = None,
    variant_annotations: Iterable[str] | None = None,
    plot_callback: Callable | None = None,
    error_bars: bool = True,
):
    """nsight-python's ``@analyze.plot``, stacked on :func:`kernel`::

        @kprof.analyze.plot("sweep.png", metric="gpu__time_duration.sum", show_aggregate="geomean")
        @kprof.analyze.kernel(configs=[(n,) for n in (512, 1024, 2048)], runs=10)
        def matmul(n): ...

        results = matmul()      # profiles, writes sweep.png, returns the ProfileResults

    Calling the decorated function profiles it, draws ``metric`` (any metric when there is
    only one) against the configurations with kprof's renderer and writes ``filename`` (``.png``
    or ``.svg``); it returns the :class:`kprof.ProfileResults`, whose ``figure`` is the
    matplotlib ``Figure`` when matplotlib is installed (else the SVG
    :class:`kprof.plotting.Plot`). In Jupyter the plot is shown inline.

    Options as nsight-python: one series per annotation (or per ``variant_fields`` combination
    of the ``variant_annotations``), ``plot_type`` "line" or "bar", ``row_panels`` /
    ``col_panels`` facets, ``x_keys`` for the x axis, ``show_aggregate`` "avg" or "geomean",
    ``annotate_points``, ``title`` (default: the metric), ``ylabel``, ``print_data``,
    ``plot_width`` / ``plot_height`` (inches per panel), ``plot_callback(fig)`` (needs
    matplotlib; the file is then saved from the Figure). kprof adds ``error_bars`` (CI95, on by
    default) and draws every series (the palette cycles with marker shapes). Options are
    checked when the decorator is applied; unknown metric or parameter names raise
    :class:`kprof.ConfigError` listing the available ones.
    """
    if callable(filename) and not isinstance(filename, (str, os.PathLike)):
        raise ConfigError(
            "@kprof.analyze.plot needs parentheses: @kprof.analyze.plot() or @kprof.analyze.plot('plot.png', ...)"
        )
    plotting.check_options(
        filename=filename,
        plot_type=plot_type,
        show_aggregate=show_aggregate,
        plot_width=plot_width,
        plot_height=plot_height,
        plot_callback=plot_callback,
    )
    if metric is not None and not isinstance(metric, str):
        raise ConfigError(f"metric must be one metric name (a string) or None, got {metric!r}")
    options = dict(
        title=title,
        ylabel=ylabel,
        annotate_points=annotate_points,
        show_aggregate=show_aggregate,
        plot_type=plot_type,
        row_panels=row_panels,
        col_panels=col_panels,
        x_keys=x_keys,
        variant_fields=variant_fields,
        variant_annotations=variant_annotations,
        error_bars=error_bars,
        plot_width=plot_width,
        plot_height=plot_height,
    )

    def decorate(func: Callable) -> Callable:
        if not callable(func):
            raise ConfigError(f"@plot decorates a function, got {func!r}")

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            results = func(*args, **kwargs)
            if not isinstance(results, ProfileResults):
                raise ConfigError(
                    f"@kprof.analyze.plot must be stacked on @kprof.analyze.kernel (above it); "
                    f"{_callable_name(func)} returned {type(results).__name__}, not ProfileResults"
                )
            results.plot(filename, metric, print_data=print_data, plot_callback=plot_callback, **options)
            plotting.display_inline(results.plot_image)
            return results

        return wrapper

    return decorate


@contextlib.contextmanager
def ignore_failures():
    """Swallows any ``Exception`` raised inside (for warm-up code outside annotations), as nsight-python."""
    try:
        yield
    except Exception:
        pass
