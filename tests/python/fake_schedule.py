"""The benchmark loop of the fake backends (conftest.py's FakeBackend, nsight_examples_backend.py's
ExamplesBackend): what a real backend calls, in the same order, without measuring anything."""

from __future__ import annotations


def run_schedule(backend, func, n: int, options: dict, progress) -> None:
    """The warm-up calls of each of the ``n`` configs, then ``options["runs"]`` calls of each in
    ``options["order"]``; ``backend._recording`` is ``(config, run)`` during a measured call."""
    for i in range(n):
        for _ in range(options["warmup"]):
            func(i)
    runs = options["runs"]
    if options["order"] == "interleaved":
        schedule = [(i, r) for r in range(runs) for i in range(n)]
    else:
        schedule = [(i, r) for i in range(n) for r in range(runs)]
    for i, r in schedule:
        backend._recording = (i, r)
        try:
            func(i)
        finally:
            backend._recording = None
        progress.advance(i)
