"""Info collectors (experimental, as in nsight-python 1.1) and the run-condition columns.

A collector is a ``(name, callback, scope)``; its values become raw columns, and the processed
table aggregates numeric values as ``X_Avg``/``X_Std``/``X_Min``/``X_Max`` (others, and a
column holding one number throughout the table such as a version, keep the value of the first
run in one column ``X``). Scopes (:class:`CollectionScope`):

* ``ONCE``: once per profiled call, with no arguments;
* ``CONFIG``: once per config (before its first run, warm-ups included), with the config values;
* ``RUN``: before every measured run, with the config values;
* ``ANNOTATION``: on every ``kprof.annotate`` enter of a measured run, before the region starts,
  with ``(annotation_name, *config)``.

Callbacks run on the profiling thread with the GIL held. A callback with ``*args`` receives the
whole config; a fixed-arity callback only as many leading values as it has parameters
(nsight-python's binding). A raising collector gives ``None`` and one ``RuntimeWarning`` per
``(scope, name)`` per profiled call.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from . import _core
from .exceptions import ConfigError

__all__ = ["CollectionScope", "InfoCollector", "collect", "normalize", "RESERVED_COLUMN_NAMES", "CONDITION_COLUMNS"]


class CollectionScope(enum.Enum):
    """When an info collector is called."""

    ONCE = "once"
    CONFIG = "config"
    RUN = "run"
    ANNOTATION = "annotation"


@dataclass
class InfoCollector:
    """A named value source: ``callback`` is called at ``scope`` and its value becomes column ``name``."""

    name: str
    callback: Callable[..., Any]
    scope: CollectionScope | str = CollectionScope.RUN

    def __post_init__(self) -> None:
        self.scope = _scope(self.scope, self.name)

    def collect(self, *args: Any) -> Any:
        """Calls the callback with ``args`` bound to its signature."""
        return self.callback(*_bind(self.callback, args))


def collect(_func: Callable | None = None, *, scope: CollectionScope | str = CollectionScope.RUN):
    """Marks a function as an info collector named after it (``@kprof.experimental.collect(scope=...)``).

    Can be used as ``@collect``, ``@collect(scope="once")`` or called directly: ``collect(f, scope=...)``.
    """

    def mark(f: Callable) -> Callable:
        if not callable(f):
            raise ConfigError(f"collect() needs a callable, got {f!r}")
        f._kprof_collector_scope = _scope(scope, getattr(f, "__name__", "?"))  # type: ignore[attr-defined]
        f._kprof_collector_name = f.__name__  # type: ignore[attr-defined]
        # nsight-python's attribute names, so collectors written for nsight work as they are.
        f._nsight_collector_scope = f._kprof_collector_scope.value  # type: ignore[attr-defined]
        f._nsight_collector_name = f.__name__  # type: ignore[attr-defined]
        return f

    return mark if _func is None else mark(_func)


# The column names are kprof-core's (``kprof_core::columns``), through ``kprof._core``.
#: nsight-python's reserved column names.
NSIGHT_RESERVED: tuple[str, ...] = _core.NSIGHT_RESERVED_COLUMN_NAMES
#: The run-condition columns kprof measures around every run (raw table).
CONDITION_COLUMNS: tuple[str, ...] = _core.CONDITION_COLUMNS
#: Every name a collector may not take (the engine's list, ``reserved_names`` of
#: ``kprof::conditions::collectors``): nsight-python's columns, kprof's raw and processed columns
#: (bootstrap intervals included), the engine's extra columns (run information and
#: :data:`CONDITION_COLUMNS`), ``ThrottledRuns`` and the backend's ``_config``. The aggregates of
#: the run-condition columns (``SMClockMHz_Avg``, ...) are refused too.
RESERVED_COLUMN_NAMES: tuple[str, ...] = _core.RESERVED_COLLECTOR_NAMES


def _scope(scope: Any, name: str) -> CollectionScope:
    if isinstance(scope, CollectionScope):
        return scope
    if isinstance(scope, str):
        try:
            return CollectionScope(_core.parse_collection_scope(scope))
        except ValueError:
            pass
    raise ConfigError(
        f"info collector {name!r}: scope must be a kprof.CollectionScope or one of 'once', 'config', 'run', "
        f"'annotation', got {scope!r}"
    )


def _bind(callback: Callable, args: tuple) -> tuple:
    """nsight's binding: ``*args`` gets everything, a fixed arity gets the leading values."""
    try:
        params = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):
        return args
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return args
    n = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    return args[:n]


def normalize(items: Iterable | None, param_names: Iterable[str] = ()) -> tuple[InfoCollector, ...]:
    """The ``info_collectors`` option as :class:`InfoCollector`s; raises ConfigError on a bad item,
    a duplicate or reserved name, or a name equal to a parameter of the function."""
    if items is None:
        return ()
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise ConfigError(f"info_collectors must be a list of collectors, got {items!r}")
    out: list[InfoCollector] = []
    for item in items:
        if isinstance(item, InfoCollector):
            c = item
        elif isinstance(item, tuple) and len(item) == 3:
            name, callback, scope = item
            if not isinstance(name, str) or not callable(callback):
                raise ConfigError(f"an info collector tuple is (name: str, callback, scope), got {item!r}")
            c = InfoCollector(name, callback, scope)
        elif callable(item) and hasattr(item, "_kprof_collector_scope"):
            c = InfoCollector(item._kprof_collector_name, item, item._kprof_collector_scope)
        elif callable(item) and hasattr(item, "_nsight_collector_scope"):
            c = InfoCollector(item._nsight_collector_name, item, item._nsight_collector_scope)
        else:
            raise ConfigError(
                f"info_collectors item {item!r} is not a collector: use a function decorated with "
                "@kprof.experimental.collect(scope=...), a kprof.InfoCollector(name, callback, scope) or a "
                "(name, callback, scope) tuple"
            )
        out.append(c)
    for c in out:
        if not isinstance(c.name, str) or not c.name.strip():
            raise ConfigError(f"an info collector has an empty name: {c!r}")
    try:
        # The engine's checks: duplicates, reserved columns and their aggregates, parameters.
        _core.check_collector_names([c.name for c in out], list(param_names))
    except ValueError as e:
        raise ConfigError(str(e)) from None
    return tuple(out)


class Session:
    """The collectors of one profiled call at work in the engine's collector session
    (``_core.CollectorSession``, ``kprof::conditions::CollectorSession``): it calls each scope at
    its point, turns a raising collector into None and one ``RuntimeWarning`` per (scope, name),
    and keeps the values by (config, run[, annotation]); this adds them to the raw table afterwards.

    The backend calls ``call(config_index)`` once per run, a config's warm-ups before its
    measured runs (the backend contract), so the k-th call of a config is measured run
    ``k - warmup``.
    """

    def __init__(self, collectors: tuple[InfoCollector, ...], configs: list[tuple], warmup: int):
        self.collectors = collectors
        self._session = _core.CollectorSession(
            [(c.name, c.scope.value, c) for c in collectors], [tuple(c) for c in configs], warmup
        )

    def before_call(self, i: int) -> None:
        self._session.before_call(i)

    def after_call(self) -> None:
        self._session.after_call()

    def on_annotation(self, name: str) -> None:
        self._session.on_annotation(name)

    def add_columns(self, raw: dict[str, list], config_index: list[int]) -> None:
        """Adds a column per collector to ``raw`` (rows keyed by (_config, Run, Annotation))."""
        runs = [int(r) for r in raw["Run"]]
        annotations = [str(a) for a in raw["Annotation"]]
        for c in self.collectors:
            raw[c.name] = self._session.column(c.name, list(config_index), runs, annotations)


#: The session of the profiled call in progress (annotate() reports enters to it).
_active: Session | None = None


def _on_annotation(name: str) -> None:
    s = _active
    if s is not None:
        s.on_annotation(name)
