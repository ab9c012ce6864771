"""The pieces of a scaled-out call (``kprof.scaleout``): what a task holds and returns, and the
file of each finished piece (its raw rows, read back when a call resumes or merges).
"""

from __future__ import annotations

import csv
import io
import logging
import math
import os
from dataclasses import dataclass, field
from typing import Any, Iterable

_log = logging.getLogger("kprof.scaleout")


@dataclass(frozen=True, order=True)
class Piece:
    """One configuration (``config``: its index), or ``runs`` of its runs from ``first_run``."""

    config: int
    first_run: int = 0
    runs: int | None = None  # None: every run of the configuration (the call's runs, or adaptive)

    @property
    def file_name(self) -> str:
        return f"config{self.config}-run{self.first_run}.csv"


def make_pieces(n_configs: int, runs: int, runs_per_task: int | None) -> list[Piece]:
    """The pieces of a call; with ``runs_per_task`` the first run range of every configuration
    comes first, so that a task of several pieces holds several configurations."""
    if runs_per_task is None or runs_per_task >= runs:
        return [Piece(c) for c in range(n_configs)]
    starts = range(0, runs, runs_per_task)
    return [Piece(c, a, min(runs_per_task, runs - a)) for a in starts for c in range(n_configs)]


@dataclass(frozen=True)
class Task:
    """What a worker receives: the packed function, settings and configs, and its pieces."""

    id: str
    payload: bytes
    pieces: tuple[Piece, ...]
    folder: str
    device: int | None  # the devices= ordinal; None on an executor (the GPU the task was given)
    heartbeat_s: float
    gpu_lock: str | None = None  # a file that workers sharing this task's GPU lock while they measure


@dataclass
class TaskResult:
    """What a task returns: finished pieces (their rows), failed ones (the reason), and the pieces
    it did not start (a failure or a stop before them)."""

    done: dict = field(default_factory=dict)
    failed: dict = field(default_factory=dict)
    not_run: list = field(default_factory=list)
    fingerprint: dict | None = None
    warnings: list = field(default_factory=list)
    worker: str = ""


# ---------------------------------------------------------------------------------------------
# piece files



def _cell(column: str, text: str) -> Any:
    if column in ("Value", "ComputeClock", "MemoryClock"):
        return float(text) if text else (math.nan if column == "Value" else None)
    if column in ("Run", "Device"):
        return int(text)
    if column in ("Annotation", "Metric", "Kernel", "GPU", "Host", "Unit", "Benchmark", "DeviceUUID", "Failure"):
        return text
    if text == "":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def _piece_cell(v: Any) -> str:
    if v is None or v.__class__.__name__ == "NAType" or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    return repr(v) if isinstance(v, float) else str(v)


def _write_piece(path: str, columns: dict[str, list]) -> None:
    """Writes a finished piece's raw columns (as the backend returned them, so :func:`read_piece`
    gives them back) through kprof's one file writer (``_core.write_file``: atomic replacement,
    missing folders created). Also the file of what finished when a call is stopped."""
    from . import _core

    names = list(columns)
    n = len(columns[names[0]]) if names else 0
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(names)
    for i in range(n):
        w.writerow([_piece_cell(columns[c][i]) for c in names])
    _core.write_file(path, f.getvalue().encode("utf-8"))


def read_piece(path: str) -> dict[str, list]:
    """A piece's raw CSV back as columns (parameter columns included; the caller replaces them)."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    return {c: [_cell(c, r[j]) for r in body] for j, c in enumerate(header)}


def _recover(folder: str, pieces: Iterable[Piece]) -> dict[Piece, dict]:
    found = {}
    for p in pieces:
        path = os.path.join(folder, "pieces", p.file_name)
        if os.path.exists(path):
            try:
                found[p] = read_piece(path)
            except (OSError, ValueError, IndexError) as e:
                _log.warning("kprof: cannot read the finished piece %s back (%s); it runs again", path, e)
    return found
