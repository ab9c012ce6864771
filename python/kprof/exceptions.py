"""kprof's exceptions.

Every error kprof raises on purpose derives from :class:`ProfilerError`. Errors about bad
arguments also derive from :class:`ValueError`, so code written for nsight-python that catches
``ValueError`` (invalid option values, nested annotations) keeps working.

``ProfilerException`` is an alias of :class:`ProfilerError` for nsight-python compatibility.
"""

from __future__ import annotations

__all__ = [
    "ProfilerError",
    "ProfilerException",
    "ConfigError",
    "AnnotationError",
    "NotAvailableYetError",
    "BackendError",
    "WorkerError",
]


class ProfilerError(Exception):
    """Base class of every error kprof raises on purpose."""


#: nsight-python's name for the base class.
ProfilerException = ProfilerError


class ConfigError(ProfilerError, ValueError):
    """A bad argument: an unknown option value, a config that does not fit the function, ...

    Raised before any GPU work is done.
    """


class AnnotationError(ProfilerError, ValueError):
    """A misuse of :func:`kprof.annotate`: nesting, a name used twice in one run, a bad name."""


class NotAvailableYetError(ProfilerError, NotImplementedError):
    """A parameter or feature that a later version of kprof provides.

    kprof raises this instead of silently ignoring the request.
    """


class BackendError(ProfilerError, RuntimeError):
    """The measurement backend failed or returned data kprof cannot use."""


class WorkerError(BackendError):
    """Scale-out (``devices=`` / ``executor=``): a worker cannot run at all, or no configuration
    could be measured on any worker (the reasons are in the message)."""


def not_available(what: str, lands_with: str) -> NotAvailableYetError:
    """The standard "not available yet" error: ``<what> is not available yet ...; it lands with <lands_with>``."""
    return NotAvailableYetError(
        f"{what} is not available yet in this version of kprof; it lands with {lands_with}"
    )
