"""Small shared helpers: :class:`VerbosityLevel`."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["VerbosityLevel"]


class VerbosityLevel(IntEnum):
    """How much kprof prints. Level N enables everything at or below N (as nsight-python).

    * ``SILENT``: nothing.
    * ``INFO``: a progress bar, completion messages and the paths of files written.
    * ``DEBUG``: also per-config messages from the backend.
    """

    SILENT = 0
    INFO = 3
    DEBUG = 4
