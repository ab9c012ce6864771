"""What the benchmarks of ``benches/`` share: one ``BENCH {json}`` line per measurement, a
command line that either runs the benchmark or reports on a recorded log of such lines, and the
``--source`` option of the sweeps that also time other duration sources."""

from __future__ import annotations

import argparse
import json
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any


def emit(row: dict) -> None:
    """Prints one measurement as a ``BENCH`` line."""
    print("BENCH " + json.dumps(row), flush=True)


def add_source_option(ap: argparse.ArgumentParser) -> None:
    """``--source SOURCE`` (repeatable): also time kprof with ``duration_source=SOURCE``;
    ``--options KEY=VALUE[,KEY=VALUE]`` (repeatable): also time kprof with those options (for
    example ``cache_control=none`` or ``l2_flush=write``, to see what the cold-cache flush costs)."""
    ap.add_argument("--source", action="append", default=[], help="also time duration_source=SOURCE")
    ap.add_argument("--options", action="append", default=[], help="also time kprof with KEY=VALUE[,KEY=VALUE]")


def kprof_variants(sources: list[str], option_sets: Sequence[str] = ()) -> list[tuple[str, dict]]:
    """(tool name, extra ``kprof.kernel`` options) of kprof's default, of each of ``sources`` and
    of each of ``option_sets`` (``KEY=VALUE,...``; values stay strings)."""
    variants: list[tuple[str, dict]] = [("kprof", {})] + [(f"kprof-{s}", {"duration_source": s}) for s in sources]
    for text in option_sets:
        extra = dict(pair.split("=", 1) for pair in text.split(","))
        variants.append((f"kprof {text}", extra))
    return variants


def quiet_wall(fn: Callable[[], Any]) -> tuple[float, Any]:
    """``fn()`` with its warnings silenced: (wall time in seconds, what it returned)."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fn()
    return time.perf_counter() - t0, result


def counter_passes(c: dict) -> str:
    """A process's counter passes and rests from a ``kprof._core.counter_cost()`` difference:
    ``N counter passes X s (Start, Stop, decode); rests R s``."""
    return (f"{c.get('counter_runs', 0):.0f} counter passes {c.get('counter_run_s', 0.0):.3f} s "
            f"(Start {c.get('collect_start_s', 0.0):.3f}, Stop {c.get('collect_stop_s', 0.0):.3f}, decode "
            f"{c.get('collect_decode_s', 0.0) + c.get('collect_evaluate_s', 0.0):.3f}); "
            f"rests {c.get('gpu_rest_s', 0.0):.3f} s")


def read(path: str) -> list[dict]:
    """The ``BENCH`` rows of a recorded log, in order (other lines are left out)."""
    with open(path) as f:
        return [json.loads(line[6:]) for line in f if line.startswith("BENCH ")]


def main(doc: str, run: Callable[[argparse.Namespace], list[dict]], report: Callable[[list[dict]], str],
         add_args: Callable[[argparse.ArgumentParser], None]) -> int:
    """Parses the benchmark's options (``add_args``) and ``--from-log``, runs it (or reads the
    log) and prints its report."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    add_args(ap)
    ap.add_argument("--from-log", help="report on a recorded log of BENCH lines instead of running")
    a = ap.parse_args()
    rows = read(a.from_log) if a.from_log else run(a)
    print(report(rows))
    return 0
