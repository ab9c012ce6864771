"""Progress reporting: runs done out of configs x runs, elapsed time and ETA.

Three outputs, chosen once per reporter:

* a terminal (stderr is a TTY): one line rewritten in place with ``\\r``;
* Jupyter (an IPython kernel is running): an updating display handle; IPython is imported only
  when ``get_ipython`` exists and returns a kernel shell;
* anything else (a log file, CI): plain lines, at most one every 10% of the work or every 30 s.

At ``VerbosityLevel.SILENT`` nothing is printed. Messages (``info``, ``debug``) go to stderr (or the
notebook) only when the verbosity allows them.
"""

from __future__ import annotations

import builtins
import sys
import time
from typing import IO

from .utils import VerbosityLevel

__all__ = ["ProgressReporter", "format_duration", "in_notebook"]


def format_duration(seconds: float) -> str:
    """``4.2s``, ``3m05s``, ``1h02m``."""
    if seconds != seconds or seconds < 0:  # NaN
        return "?"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell), without importing IPython."""
    get_ipython = getattr(builtins, "get_ipython", None)
    if get_ipython is None:
        return False
    try:
        shell = get_ipython()
    except Exception:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class ProgressReporter:
    """Reports the progress of one benchmark call (see the module doc string).

    :param label: what is being profiled (the function's name).
    :param n_configs: number of configs.
    :param runs: measured runs per config.
    :param verbosity: a :class:`VerbosityLevel`.
    :param stream: where terminal/plain output goes (default: ``sys.stderr`` at construction).
    :param mode: force ``"tty"``, ``"lines"``, ``"notebook"`` or ``"silent"`` (tests).
    """

    BAR_WIDTH = 20
    MIN_INTERVAL_S = 0.1  # terminal/notebook refresh limit
    LINES_INTERVAL_S = 30.0

    def __init__(
        self,
        label: str,
        n_configs: int,
        runs: int,
        verbosity: int = VerbosityLevel.INFO,
        stream: IO[str] | None = None,
        mode: str | None = None,
        clock=time.monotonic,
    ):
        self.label = label
        self.n_configs = n_configs
        self.total = n_configs * runs
        self.done = 0
        self.configs_seen: set[int] = set()
        self.verbosity = int(verbosity)
        self.stream = sys.stderr if stream is None else stream
        self._clock = clock
        self.start = clock()
        self._last_draw = float("-inf")
        self._last_line_fraction = -1.0
        self._handle = None
        self._closed = False
        self._line_len = 0
        if mode is None:
            if self.verbosity < VerbosityLevel.INFO:
                mode = "silent"
            elif in_notebook():
                mode = "notebook"
            elif _isatty(self.stream):
                mode = "tty"
            else:
                mode = "lines"
        self.mode = mode

    # -- the Progress protocol (what backends call) --

    def advance(self, config_index: int | None = None) -> None:
        """One measured run finished (of config ``config_index``, when given)."""
        self.done += 1
        if config_index is not None:
            self.configs_seen.add(config_index)
        if self.done > self.total:
            self.total = self.done
        self._draw()

    def set_total(self, total: int) -> None:
        """The number of measured runs changed (adaptive stopping)."""
        self.total = max(int(total), self.done)
        self._draw()

    def debug(self, message: str) -> None:
        """A message printed at ``VerbosityLevel.DEBUG``."""
        if self.verbosity >= VerbosityLevel.DEBUG:
            self._message(message)

    def info(self, message: str) -> None:
        """A message printed at ``VerbosityLevel.INFO`` and above."""
        if self.verbosity >= VerbosityLevel.INFO:
            self._message(message)

    def close(self) -> None:
        """Draws the final state and ends the progress line."""
        if self._closed:
            return
        self._draw(force=True)
        self._closed = True
        if self.mode == "tty" and self._line_len:
            self._write("\n")
            self._line_len = 0

    # -- rendering --

    def render(self) -> str:
        """The progress text, e.g. ``kprof mm [#####-----] 12/40 runs, 3/10 configs, 4.1s, ETA 9.3s``."""
        elapsed = self._clock() - self.start
        frac = self.done / self.total if self.total else 1.0
        filled = int(round(frac * self.BAR_WIDTH))
        bar = "#" * filled + "-" * (self.BAR_WIDTH - filled)
        if self.done and self.done < self.total:
            eta = format_duration(elapsed / self.done * (self.total - self.done))
        elif self.done >= self.total:
            eta = "done"
        else:
            eta = "?"
        configs = f"{len(self.configs_seen)}/{self.n_configs} configs" if self.configs_seen else f"{self.n_configs} configs"
        return (
            f"kprof {self.label} [{bar}] {self.done}/{self.total} runs, {configs}, "
            f"elapsed {format_duration(elapsed)}, ETA {eta}"
        )

    def _draw(self, force: bool = False) -> None:
        if self.mode == "silent" or self._closed:
            return
        now = self._clock()
        if self.mode == "lines":
            frac = self.done / self.total if self.total else 1.0
            due = (
                force
                or frac >= self._last_line_fraction + 0.1
                or now - self._last_draw >= self.LINES_INTERVAL_S
            )
            if not due:
                return
            self._last_line_fraction = frac
            self._last_draw = now
            self._write(self.render() + "\n")
            return
        if not force and now - self._last_draw < self.MIN_INTERVAL_S:
            return
        self._last_draw = now
        text = self.render()
        if self.mode == "tty":
            pad = max(0, self._line_len - len(text))
            self._write("\r" + text + " " * pad)
            self._line_len = len(text)
        elif self.mode == "notebook":
            self._notebook_update(text)

    def _notebook_update(self, text: str) -> None:
        try:
            from IPython.display import display  # only here, inside a running kernel

            if self._handle is None:
                self._handle = display(_Text(text), display_id=True)
            else:
                self._handle.update(_Text(text))
        except Exception:
            self.mode = "lines"
            self._write(text + "\n")

    def _message(self, message: str) -> None:
        if self.mode == "tty" and self._line_len:
            self._write("\r" + " " * self._line_len + "\r")
            self._line_len = 0
            self._last_draw = float("-inf")
        if self.mode == "notebook":
            print(message)
        else:
            self._write(message + "\n")

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except Exception:
            pass


class _Text:
    """A plain-text object for IPython's display (``text/plain`` only)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except Exception:
        return False
