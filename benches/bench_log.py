"""What the benchmarks of ``benches/`` share: one ``BENCH {json}`` line per measurement, and a
command line that either runs the benchmark or reports on a recorded log of such lines."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable


def emit(row: dict) -> None:
    """Prints one measurement as a ``BENCH`` line."""
    print("BENCH " + json.dumps(row), flush=True)


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
