"""The options of ``@kprof.analyze.kernel`` as the engine models them: ``kprof._core.option_model()``
(the Rust ``kprof::option_model``), each option once with its type, default, allowed values, doc,
the doors that take it and its ``KPROF_*`` override.

The decorator checks its options with choices here: each parsed by the engine's one parser of
its enum (``kprof::choices``), so a bad value raises :class:`kprof.ConfigError` naming the
option, the value and the allowed values, before any GPU work. The tests compare the model with
the decorator's signature, its docstring, ``_core.pyi`` and ``docs/quickstart.md``.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from . import _core
from .exceptions import ConfigError

#: The values of the decorator's options with choices, for typing only (type checkers need them
#: written out); tests/python/test_option_model.py compares each with the model.
ReplayModeName = Literal["kernel", "range", "application"]
CacheControlName = Literal["all", "none"]
ClockControlName = Literal["none", "base"]
ThermalModeName = Literal["auto", "manual", "off"]
OrderName = Literal["interleaved", "sequential"]
BackendName = Literal["cupti", "cuda-events", "ncu"]
DurationSourceName = Literal["auto", "records", "counters"]


@functools.lru_cache(maxsize=1)
def model() -> dict[str, dict[str, Any]]:
    """Every option of a benchmark by name, in the decorator's order."""
    return {o["name"]: dict(o) for o in _core.option_model()}


def python_keywords() -> tuple[str, ...]:
    """The keywords of the Python decorator, in the model's order."""
    return tuple(name for name, o in model().items() if o["python"])


def choices(name: str) -> tuple[str, ...]:
    """The allowed values of an option with choices (empty for other options)."""
    return tuple(model()[name]["choices"])


def check_choice(name: str, value: Any) -> str:
    """The canonical value of ``name`` for ``value`` (aliases become the canonical name)."""
    if not choices(name):
        raise KeyError(f"{name} is not an option with choices")
    try:
        return _core.parse_choice(name, value if isinstance(value, str) else repr(value))
    except ValueError as e:
        raise ConfigError(str(e)) from None


def check_bool(name: str, value: Any) -> bool:
    """A switch of the decorator: ``True`` or ``False``, nothing else."""
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be True or False, got {value!r}")
    return value
