"""Warnings attributed to the user's code: ``warn`` names the first frame outside kprof's package
(the line of the script that called kprof), never a line of kprof itself, so that the source line
Python prints under a warning is one the user can act on."""

from __future__ import annotations

import os
import sys
import types
import warnings

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _in_kprof(frame) -> bool:
    """A frame of kprof's package, or of a backend's ``run_benchmark`` (the backend contract of
    ``_backend.py``: it stands for kprof's engine, whose own frames are not Python's)."""
    code = frame.f_code
    return code.co_name == "run_benchmark" or os.path.abspath(code.co_filename).startswith(_PACKAGE)


def stacklevel() -> int:
    """The ``stacklevel`` with which a ``warnings.warn`` called by the caller of this function
    names the first frame outside kprof's package."""
    frame: types.FrameType | None = sys._getframe(2)  # stacklevel 2 of the function that calls warnings.warn
    level = 2
    while frame is not None and _in_kprof(frame):
        frame = frame.f_back
        level += 1
    return level if frame is not None else 2


def warn(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside kprof."""
    warnings.warn(message, category, stacklevel=stacklevel())


def engine_warnings(messages: list[str]) -> None:
    """The engine's warnings of one benchmark (``kprof._core.run_benchmark``), as one
    RuntimeWarning attributed to the user's call of the benchmark."""
    if not messages:
        return
    text = "\n".join(messages[:5])
    if len(messages) > 5:
        text += f"\n... and {len(messages) - 5} more"
    warnings.warn(f"kprof: {text}", RuntimeWarning, stacklevel=stacklevel())
