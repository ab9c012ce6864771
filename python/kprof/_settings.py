"""The options of ``@kprof.analyze.kernel``: their validated form (:class:`Settings`) and the checks.

Every option is checked when the decorator is applied, before any GPU work; ``kprof.analyze``
re-exports the public names.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from . import _core, _measurement, _ncu, _options
from . import collectors as _collectors
from . import scaleout as _scaleout
from . import throughput as _throughput
from .exceptions import ConfigError
from .utils import VerbosityLevel

DEFAULT_METRIC = "gpu__time_duration.sum"

#: Reducer names accepted by ``combine_kernel_metrics``.
REDUCERS = ("sum", "mean", "max", "min", "first", "last")


@dataclass(frozen=True)
class Settings:
    """The validated options of one ``@kernel`` decorator."""

    configs: list | None
    runs: int
    derive_metric: Callable | None
    normalize_against: str | None
    verbosity: VerbosityLevel
    metrics: tuple[str, ...]
    ignore_kernel_list: tuple[str, ...] | None
    clock_control: str
    cache_control: str
    replay_mode: str
    thermal_mode: str
    combine_kernel_metrics: Callable | str | None
    output_prefix: str | None
    output_csv: bool
    warmup: int
    order: str
    target_rsd: float | None
    target_ci: float | None
    max_runs: int | None
    time_budget: float | None
    backend: str
    extra: dict = field(default_factory=dict)
    thermal_wait: float | None = None
    thermal_cont: float | None = None
    thermal_timeout: float | None = None
    thermal_device: int | None = None
    store: str | None = None
    info_collectors: tuple = ()
    duration_source: str = "auto"
    scaleout: Any = None  # a kprof.scaleout.ScaleOut with devices= or executor=, else None
    measurement: dict = field(default_factory=dict)  # l2_flush, l2_flush_bytes, counter_pass_records, one_pass

    def backend_options(self) -> dict[str, Any]:
        """The ``options`` dict handed to ``Backend.run_benchmark`` (keys: ``_backend.OPTION_KEYS``)."""
        return {
            "runs": self.runs,
            "warmup": self.warmup,
            "order": self.order,
            "metrics": list(self.metrics),
            "ignore_kernel_list": None if self.ignore_kernel_list is None else list(self.ignore_kernel_list),
            "combine_kernel_metrics": self.combine_kernel_metrics,
            "cache_control": self.cache_control,
            "clock_control": self.clock_control,
            "replay_mode": self.replay_mode,
            "duration_source": self.duration_source,
            "thermal_mode": self.thermal_mode,
            "thermal_wait": self.thermal_wait,
            "thermal_cont": self.thermal_cont,
            "thermal_timeout": self.thermal_timeout,
            "thermal_device": self.thermal_device,
            "target_rsd": self.target_rsd,
            "target_ci": self.target_ci,
            "max_runs": self.max_runs,
            "time_budget": self.time_budget,
            "verbosity": int(self.verbosity),
            "backend": self.backend,
            "ncu_options": self.extra.get("ncu_options"),
            **self.measurement,
        }


# ---------------------------------------------------------------------------------------------
# validation of the decorator's options


def _is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and math.isfinite(float(v))


_choice = _options.check_choice


def _positive_int(name: str, value: Any, minimum: int) -> int:
    if not _is_int(value) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _optional_positive(name: str, value: Any, unit: str) -> float | None:
    if value is None:
        return None
    if not _is_number(value) or value <= 0:
        raise ConfigError(f"{name} must be a positive number ({unit}) or None, got {value!r}")
    return float(value)


def _string_list(name: str, value: Any) -> tuple[str, ...]:
    """A list of names; a bare string means one name."""
    if isinstance(value, str):
        items = [value]
    elif isinstance(value, Iterable):
        items = list(value)
    else:
        raise ConfigError(f"{name} must be a string or a list of strings, got {value!r}")
    out = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ConfigError(f"{name} must hold non-empty strings, got {item!r} in {value!r}")
        out.append(item.strip())
    return tuple(out)


def _check_combine(value: Any) -> Callable | str | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value not in REDUCERS:
            raise ConfigError(
                f"combine_kernel_metrics={value!r} is not a reducer; use one of "
                f"{', '.join(repr(r) for r in REDUCERS)} or a callable of 2 arguments"
            )
        return value
    if not callable(value):
        raise ConfigError(
            f"combine_kernel_metrics must be a reducer name or a callable of 2 arguments, got {value!r}"
        )
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):  # some builtins have no signature: accept them
        return value
    try:
        sig.bind(0.0, 0.0)
    except TypeError:
        raise ConfigError(
            f"combine_kernel_metrics={_callable_name(value)} must accept 2 positional arguments "
            f"(it is applied as f(a, b) with functools.reduce); its signature is {sig}"
        ) from None
    return value


def _callable_name(f: Any) -> str:
    return getattr(f, "__name__", None) or repr(f)


def _validate(opts: dict[str, Any]) -> Settings:
    """Checks every option; raises ConfigError / NotAvailableYetError with one clear message."""
    runs = _positive_int("runs", opts["runs"], 1)
    warmup = _positive_int("warmup", opts["warmup"], 0)

    verbosity = opts["verbosity"]
    try:
        if isinstance(verbosity, bool):
            raise ValueError
        verbosity = VerbosityLevel(verbosity)
    except (ValueError, TypeError):
        raise ConfigError(
            f"verbosity must be a kprof.VerbosityLevel (SILENT=0, INFO=3, DEBUG=4), got {verbosity!r}"
        ) from None

    derive = opts["derive_metric"]
    if derive is not None and not callable(derive):
        raise ConfigError(f"derive_metric must be callable, got {type(derive).__name__} {derive!r}")

    norm = opts["normalize_against"]
    if norm is not None and (not isinstance(norm, str) or not norm):
        raise ConfigError(f"normalize_against must be an annotation name (a non-empty string), got {norm!r}")

    metrics = _string_list("metrics", opts["metrics"])
    if not metrics:
        raise ConfigError("metrics is empty; give at least one metric name (the default is gpu__time_duration.sum)")
    dup = [m for m in set(metrics) if metrics.count(m) > 1]
    if dup:
        raise ConfigError(f"metrics lists {dup[0]!r} twice")

    ignore = opts["ignore_kernel_list"]
    ignore = None if ignore is None else _string_list("ignore_kernel_list", ignore)

    clock = _choice("clock_control", opts["clock_control"])
    cache = _choice("cache_control", opts["cache_control"])
    duration_source = _choice("duration_source", opts["duration_source"])
    thermal = _choice("thermal_mode", opts["thermal_mode"])
    order = _choice("order", opts["order"])
    backend = _choice("backend", opts["backend"])
    # None: application replay in-process (the function is re-run anyway; every pass starts from
    # the cache state of a plain run, as ncu's), ncu's own kernel replay under ncu (it flushes the
    # L2 between its passes itself).
    replay = opts["replay_mode"]
    replay = ("kernel" if backend == "ncu" else "application") if replay is None else _choice("replay_mode", replay)

    wait, cont = opts["thermal_wait"], opts["thermal_cont"]
    for name in ("thermal_wait", "thermal_cont", "thermal_timeout"):
        v = opts[name]
        if v is not None and (not _is_number(v) or (name == "thermal_timeout" and v <= 0)):
            what = "a positive number of seconds" if name == "thermal_timeout" else "a number of degrees C"
            raise ConfigError(f"{name} must be {what} or None, got {v!r}")
    if wait is not None and cont is not None and cont <= wait:
        raise ConfigError(
            f"thermal_cont ({cont}) must be greater than thermal_wait ({wait}): profiling pauses at "
            "thermal_wait degrees of headroom and resumes at thermal_cont"
        )
    device = opts["thermal_device"]
    if device is not None and (not _is_int(device) or device < 0):
        raise ConfigError(f"thermal_device must be a CUDA device ordinal (int >= 0) or None, got {device!r}")

    combine = _check_combine(opts["combine_kernel_metrics"])

    prefix = opts["output_prefix"]
    if prefix is not None:
        if not isinstance(prefix, (str, os.PathLike)):
            raise ConfigError(f"output_prefix must be a path prefix (str) or None, got {prefix!r}")
        prefix = os.fspath(prefix)
    output_csv = opts["output_csv"]
    if not isinstance(output_csv, bool):
        raise ConfigError(f"output_csv must be True or False, got {output_csv!r}")
    store = opts.get("store")
    if store is not None:
        if not isinstance(store, (str, os.PathLike)) or not os.fspath(store):
            raise ConfigError(f"store must be the path of a results store (e.g. \"kprof.db\") or None, got {store!r}")
        store = os.fspath(store)

    target_rsd = _optional_positive("target_rsd", opts["target_rsd"], "percent")
    target_ci = _optional_positive("target_ci", opts["target_ci"], "percent of the mean")
    max_runs = opts["max_runs"]
    if max_runs is not None:
        max_runs = _positive_int("max_runs", max_runs, 1)
        if max_runs < runs:
            raise ConfigError(f"max_runs ({max_runs}) is smaller than runs ({runs}); runs is the minimum")
    time_budget = _optional_positive("time_budget", opts["time_budget"], "seconds")
    if target_rsd is None and target_ci is None:
        for name, v in (("max_runs", max_runs), ("time_budget", time_budget)):
            if v is not None:
                raise ConfigError(
                    f"{name}={v!r} only bounds adaptive runs; set target_rsd or target_ci as well "
                    "(without a target every config runs exactly `runs` times)"
                )

    collectors = _collectors.normalize(opts["info_collectors"])

    configs = opts["configs"]
    if configs is not None:
        if isinstance(configs, (str, bytes)) or not isinstance(configs, Iterable):
            raise ConfigError(f"configs must be an iterable of configs (a list, a generator, ...), got {configs!r}")
        configs = list(configs)  # a generator is materialised once, so every call sees the same configs
        if not configs:
            raise ConfigError("configs is empty; give at least one config")

    # Valid values whose feature lands later: raise rather than silently ignore.
    # Counter metrics (any ncu name) are checked by the engine on the host, before any GPU work
    # (unknown names give the closest valid ones); they need the CUPTI or the ncu backend.
    counters = [m for m in metrics if m != DEFAULT_METRIC]
    if counters and backend == "cuda-events":
        raise ConfigError(
            f"metrics {counters!r} are hardware counters (CUPTI Range Profiler); backend='cuda-events' measures "
            "only time between CUDA events. Use backend='cupti' for counters"
        )
    if duration_source == "counters" and backend == "cuda-events":
        raise ConfigError(
            "duration_source='counters' takes gpu__time_duration.sum from the hardware counters (CUPTI Range "
            "Profiler); backend='cuda-events' measures only time between CUDA events. Use backend='cupti'"
        )
    ncu_options = _ncu.check_ncu_options(opts["ncu_options"])
    measurement = _measurement.check(opts["l2_flush"], opts["l2_flush_bytes"], opts["counter_pass_records"], backend)
    measurement["one_pass"] = _options.check_bool("one_pass", opts["one_pass"])
    if backend != "ncu":
        for what, given in (
            ("clock_control='base' (locking clocks)", clock == "base"),
            ("ncu_options", ncu_options is not None),
        ):
            if given:
                raise ConfigError(f"{what} needs backend='ncu' (Nsight Compute); got backend={backend!r}")
    elif target_rsd is not None or target_ci is not None:
        raise ConfigError("target_rsd / target_ci (adaptive runs) do not work with backend='ncu': the values are known only after ncu has finished; give runs=N")
    elif ignore:
        raise ConfigError("ignore_kernel_list is not supported with backend='ncu' yet; use backend='cupti' or narrow the annotations")
    scaleout = _scaleout.check_options(
        opts, backend=backend, runs=runs, adaptive=target_rsd is not None or target_ci is not None, collectors=collectors
    )

    settings = Settings(
        configs=configs,
        runs=runs,
        derive_metric=derive,
        normalize_against=norm,
        verbosity=verbosity,
        metrics=metrics,
        ignore_kernel_list=ignore,
        clock_control=clock,
        cache_control=cache,
        replay_mode=replay,
        measurement=measurement,
        thermal_mode=thermal,
        combine_kernel_metrics=combine,
        output_prefix=prefix,
        output_csv=output_csv,
        store=store,
        warmup=warmup,
        order=order,
        target_rsd=target_rsd,
        target_ci=target_ci,
        max_runs=max_runs,
        time_budget=time_budget,
        backend=backend,
        extra={"ncu_options": ncu_options, "throughput": _throughput.check(opts["throughput"])},
        duration_source=duration_source,
        thermal_wait=None if wait is None else float(wait),
        thermal_cont=None if cont is None else float(cont),
        thermal_timeout=None if opts["thermal_timeout"] is None else float(opts["thermal_timeout"]),
        thermal_device=device,
        info_collectors=collectors,
        scaleout=scaleout,
    )
    if backend != "ncu":
        # The engine's own validation of the options (one definition, in Rust), when the decorator
        # is applied rather than at the first call.
        try:
            _core.check_bench_options(settings.backend_options())
        except ValueError as e:
            raise ConfigError(str(e)) from None
    return settings
