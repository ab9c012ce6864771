"""Test doubles: a FakeBackend (no GPU) that fabricates deterministic raw tables. Processing goes
through the real ``kprof._core.process_raw`` (kprof-core's statistics).
"""

from __future__ import annotations

import math

import pytest

import kprof
from kprof import _backend, _core

from fake_schedule import run_schedule


class FakeBackend:
    """Runs the benchmark loop like the engine and fabricates deterministic values.

    Value of a region = 1000 * (k + 1) * (config_index + 1) + run, where k is the order in which
    the annotation name was first seen. A failed region gives NaN.
    """

    def __init__(self, kernels_per_region=1):
        self.calls = 0
        self.events: list[tuple] = []
        self.options = None
        self.configs = None
        self.name = None
        self.kernels_per_region = kernels_per_region
        self._recording = None  # (config_index, run) while a measured run is going on
        self._rows: list[tuple] = []
        self._names: dict[str, int] = {}

    # -- region hooks --
    def _enter_region(self, name):
        self.events.append(("enter", name))

    def _exit_region(self, name, failed):
        self.events.append(("exit", name, failed))
        if self._recording is None:
            return
        i, run = self._recording
        k = self._names.setdefault(name, len(self._names))
        value = math.nan if failed else 1000.0 * (k + 1) * (i + 1) + run
        self._rows.append((name, value, i, run))

    # -- the benchmark loop --
    def run_benchmark(self, name, func, configs, options, progress):
        self.calls += 1
        self.name, self.configs, self.options = name, configs, options
        self._rows = []
        n = len(configs)
        run_schedule(self, func, n, options, progress)
        metric = options["metrics"][0]
        cols = {c: [] for c in (*_backend.RAW_COLUMNS, "_config")}
        for ann, value, i, run in self._rows:
            cols["Annotation"].append(ann)
            cols["Value"].append(value)
            cols["Metric"].append(metric)
            cols["Kernel"].append("|".join([f"kernel_{ann}"] * self.kernels_per_region))
            cols["GPU"].append("Fake GPU")
            cols["Host"].append("fakehost")
            cols["ComputeClock"].append(1980000.0)
            cols["MemoryClock"].append(3201000.0)
            cols["Unit"].append("ns")
            cols["Benchmark"].append(name)
            cols["Run"].append(run)
            cols["_config"].append(i)
        return cols


@pytest.fixture
def fake_backend():
    backend = FakeBackend()
    previous = _backend.set_backend(backend)
    yield backend
    _backend.set_backend(previous)


@pytest.fixture
def fake_core(monkeypatch):
    """The real ``_core.process_raw`` (kprof-core's statistics); kept as a fixture name so tests
    state that they process results."""
    return _core.process_raw


@pytest.fixture
def silent():
    return kprof.VerbosityLevel.SILENT


@pytest.fixture
def replay(tmp_path, monkeypatch):
    """Scale-out workers started from now on replay the H200 recording and log their runs
    (tests/python/scaleout_support.py)."""
    from scaleout_support import install_replay

    return install_replay(tmp_path, monkeypatch)
