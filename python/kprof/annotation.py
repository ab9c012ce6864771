"""``kprof.annotate``: mark the GPU work to measure.

Rules (as nsight-python 1.1):

* Annotations cannot be nested in one thread: entering one while another is open in the same
  thread raises :class:`kprof.AnnotationError` (a ``ValueError``).
* Within one run of a profiled function, each annotation name may be used once; a second use
  raises :class:`kprof.AnnotationError`. The run loop clears the names before every run.
  Outside a profiled run names may repeat (calling an annotated function twice by hand works).
* ``ignore_failures=True`` swallows an ``Exception`` raised inside the region; the backend is told
  (``failed=True``) and records ``NaN`` for that region in that run. A ``RuntimeWarning`` names
  the swallowed exception.
"""

from __future__ import annotations

import contextlib
import threading
import warnings

from . import _warn
from . import _backend
from . import collectors as _collectors
from .exceptions import AnnotationError

__all__ = ["annotate", "in_counter_pass"]

_tls = threading.local()
_lock = threading.Lock()
_run_active = False
_run_names: set[str] = set()


def _begin_run() -> None:
    """Called by the run loop before each call of the user's function."""
    global _run_active
    with _lock:
        _run_names.clear()
        _run_active = True


def _end_run() -> None:
    """Called by the run loop after each call of the user's function."""
    global _run_active
    with _lock:
        _run_names.clear()
        _run_active = False


def in_counter_pass() -> bool:
    """Whether the profiled function is being called for a counter pass rather than to be timed.

    With counter metrics, or with durations from the counters (``duration_source="auto"``, the
    default, where the counters can be used), every recorded run calls the function under the
    counters: after its timing pass, or alone for a run of eager kernels taken in one pass. A
    function that times itself (CUDA events around its work, as some benchmarks do) keeps only the
    calls where this is False: a benchmark whose function asks this keeps a timing pass in every
    recorded run. False outside a profiled call, and with backends that run no counter pass.
    kprof's own (nsight-python has no counter pass of this kind)."""
    probe = getattr(_backend.get_backend(), "_in_counter_pass", None)
    return bool(probe()) if probe is not None else False


def _current() -> str | None:
    """The annotation open in this thread, if any."""
    return getattr(_tls, "current", None)


class annotate(contextlib.ContextDecorator):
    """Marks a region whose GPU kernels are measured; a context manager and a decorator.

    >>> with kprof.annotate("matmul"):
    ...     c = a @ b

    >>> @kprof.annotate("matmul")
    ... def mm(a, b):
    ...     return a @ b

    :param name: the region's name (the ``Annotation`` column). A non-empty string.
    :param ignore_failures: swallow an ``Exception`` raised inside the region and record ``NaN``
        for this run instead of stopping the benchmark.
    """

    def __init__(self, name: str, ignore_failures: bool = False):
        if not isinstance(name, str) or not name.strip():
            raise AnnotationError(f"annotate() needs a non-empty string name, got {name!r}")
        if not isinstance(ignore_failures, bool):
            raise AnnotationError(
                f"annotate({name!r}): ignore_failures must be True or False, got {ignore_failures!r}"
            )
        self.name = name
        self.ignore_failures = ignore_failures

    def __repr__(self) -> str:
        return f"annotate({self.name!r}, ignore_failures={self.ignore_failures})"

    def __enter__(self) -> "annotate":
        outer = _current()
        if outer is not None:
            raise AnnotationError(
                f"annotate({self.name!r}) is nested inside annotate({outer!r}); "
                "annotations cannot be nested in one thread"
            )
        with _lock:
            if _run_active:
                if self.name in _run_names:
                    raise AnnotationError(
                        f"annotation name {self.name!r} is used twice in one run; "
                        "each annotation in a run needs its own name"
                    )
                _run_names.add(self.name)
        _tls.current = self.name
        try:
            _collectors._on_annotation(self.name)  # ANNOTATION-scope info collectors, before the region
            _backend.get_backend()._enter_region(self.name)
        except BaseException:
            _tls.current = None
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        _tls.current = None
        failed = exc_type is not None
        _backend.get_backend()._exit_region(self.name, failed)
        if failed and self.ignore_failures and issubclass(exc_type, Exception):
            warnings.warn(
                f"annotate({self.name!r}, ignore_failures=True) swallowed "
                f"{exc_type.__name__}: {exc}; this run's value is NaN",
                RuntimeWarning,
                stacklevel=_warn.stacklevel(),
            )
            return True
        return False
