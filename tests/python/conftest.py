"""Test doubles: a FakeBackend (no GPU) and a tiny fake of ``_core.process_raw``.

The fake process_raw only exists so the Python side can be tested against the contract; the real
statistics live in kprof-core (Rust).
"""

from __future__ import annotations

import math
import statistics

import pytest

import kprof
from kprof import _backend, _core


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
        for i in range(n):
            for _ in range(options["warmup"]):
                func(i)
        if options["order"] == "interleaved":
            schedule = [(i, r) for r in range(options["runs"]) for i in range(n)]
        else:
            schedule = [(i, r) for i in range(n) for r in range(options["runs"])]
        for i, r in schedule:
            self._recording = (i, r)
            try:
                func(i)
            finally:
                self._recording = None
            progress.advance(i)
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


def fake_process_raw(raw, options):
    """A small stand-in for kprof-core's pipeline (z-based CI, no bootstrap)."""
    params = options["params"]
    n = len(raw["Annotation"])
    groups: dict[tuple, list[int]] = {}
    for r in range(n):
        key = (raw["Annotation"][r], raw["Metric"][r], *(raw[p][r] for p in params))
        groups.setdefault(key, []).append(r)
    out: dict[str, list] = {"Benchmark": []}  # deliberately out of order: kprof reorders
    for c in ("Annotation", "Metric", *params, "AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns",
              "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit", "CI95_Lower", "CI95_Upper",
              "RelativeStdDevPct", "StableMeasurement", "Normalized", "Geomean", "Median", "P05", "P95",
              "TotalRuns", "OutliersMild", "OutliersSevere"):
        out[c] = []
    for key, rows in groups.items():
        vals = [raw["Value"][r] for r in rows if not math.isnan(raw["Value"][r])]
        mean = statistics.fmean(vals) if vals else math.nan
        sd = statistics.stdev(vals) if len(vals) > 1 else math.nan
        first = rows[0]
        out["Benchmark"].append(raw["Benchmark"][first])
        out["Annotation"].append(key[0])
        out["Metric"].append(key[1])
        for j, p in enumerate(params):
            out[p].append(key[2 + j])
        out["AvgValue"].append(mean)
        out["StdDev"].append(None if math.isnan(sd) else sd)
        out["MinValue"].append(min(vals) if vals else None)
        out["MaxValue"].append(max(vals) if vals else None)
        out["NumRuns"].append(len(vals))
        for c in ("Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit"):
            out[c].append(raw[c][first])
        half = 1.96 * sd / math.sqrt(len(vals)) if len(vals) > 1 else math.nan
        out["CI95_Lower"].append(mean - half)
        out["CI95_Upper"].append(mean + half)
        rsd = sd / abs(mean) * 100 if len(vals) > 1 and mean else math.nan
        out["RelativeStdDevPct"].append(rsd)
        out["StableMeasurement"].append(None if math.isnan(rsd) else rsd < options["stable_rsd_pct"])
        out["Normalized"].append(False)
        out["Geomean"].append(math.nan)
        out["Median"].append(statistics.median(vals) if vals else math.nan)
        out["P05"].append(min(vals) if vals else math.nan)
        out["P95"].append(max(vals) if vals else math.nan)
        out["TotalRuns"].append(len(rows))
        out["OutliersMild"].append(0)
        out["OutliersSevere"].append(0)
    baseline = options["normalize_against"]
    if baseline is not None:
        base = {}
        for i in range(len(out["Annotation"])):
            if out["Annotation"][i] == baseline:
                base[(out["Metric"][i], *(out[p][i] for p in params))] = out["AvgValue"][i]
        out["NormalizationValue"] = []
        for i in range(len(out["Annotation"])):
            b = base[(out["Metric"][i], *(out[p][i] for p in params))]
            out["AvgValue"][i] = out["AvgValue"][i] / b
            out["Normalized"][i] = baseline
            out["NormalizationValue"].append(b)
    for i in range(len(out["Annotation"])):
        same = [out["AvgValue"][j] for j in range(len(out["Annotation"]))
                if (out["Annotation"][j], out["Metric"][j]) == (out["Annotation"][i], out["Metric"][i])]
        out["Geomean"][i] = math.exp(statistics.fmean(math.log(v) for v in same)) if all(v > 0 for v in same) else math.nan
    return out


@pytest.fixture
def fake_backend():
    backend = FakeBackend()
    previous = _backend.set_backend(backend)
    yield backend
    _backend.set_backend(previous)


@pytest.fixture
def fake_core(monkeypatch):
    monkeypatch.setattr(_core, "process_raw", fake_process_raw)
    return fake_process_raw


@pytest.fixture
def silent():
    return kprof.VerbosityLevel.SILENT
