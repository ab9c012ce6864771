"""ProfileResults.to_trace: a measured timeline written as Chrome trace-event JSON by kprof-core's
writer. The backend replays the H200 sgemm recording (replay_backend.py) and lays each run's
region and kernel out on a clock, as the engine's records would, with a counter metric beside the
durations."""

from __future__ import annotations

import json
import os
import sys
import threading

import pytest

import kprof
from kprof import _backend, _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_backend import ReplayBackend  # noqa: E402

COUNTER = "dram__bytes_read.sum"


class TracingReplay(ReplayBackend):
    """The replay backend, plus a timeline (one kernel per region on stream 7 of GPU 0) and a
    counter value per region; ``engine_form``: the timeline as the CUPTI engine gives it (a
    ``kprof._core.Timeline``, configurations as text)."""

    def __init__(self, engine_form: bool):
        super().__init__()
        self.engine_form = engine_form

    def run_benchmark(self, name, func, configs, options, progress):
        cols = super().run_benchmark(name, func, configs, options, progress)
        t = 1_000_000_000
        kernels, regions = [], []
        for i in range(len(cols["Annotation"])):
            ns = int(cols["Value"][i])
            config = cols["_config"][i]
            if self.engine_form:
                config = ", ".join(f"{k}={v}" for k, v in configs[config])
            common = {"config": config, "run": cols["Run"][i]}
            regions.append({"thread": threading.get_ident(), "name": cols["Annotation"][i],
                            "start_ns": t, "end_ns": t + ns + 300, **common})
            kernels.append({"device": 0, "stream": 7, "name": cols["Kernel"][i], "start_ns": t + 100,
                            "end_ns": t + 100 + ns, "region": cols["Annotation"][i], **common})
            t += ns + 10_000
        for c in list(cols):
            cols[c] = cols[c] + (
                [COUNTER] * len(cols[c]) if c == "Metric"
                else [4.0 * v for v in cols[c]] if c == "Value"
                else ["byte"] * len(cols[c]) if c == "Unit"
                else list(cols[c])
            )
        timeline = {"kernels": kernels, "regions": regions}
        cols["_timeline"] = _core.Timeline(json.dumps(timeline)) if self.engine_form else timeline
        return cols


@pytest.fixture(params=[False, True], ids=["dict", "engine-json"])
def tracing(request):
    previous = _backend.set_backend(TracingReplay(request.param))
    yield
    _backend.set_backend(previous)


def test_the_trace_has_every_kernel_region_and_counter_on_named_tracks(tracing, tmp_path):
    @kprof.kernel(configs=[512, 1024], runs=3, verbosity=0)
    def sgemm(n):
        with kprof.annotate("matmul"):
            pass

    results = sgemm()
    path = results.to_trace(tmp_path / "trace.json")
    doc = json.loads(open(path).read())
    events = doc["traceEvents"]
    meta = [e for e in events if e["ph"] == "M"]
    rest = [e for e in events if e["ph"] != "M"]
    assert events[: len(meta)] == meta  # the names first
    names = {(m["pid"], m["tid"] if m["name"] == "thread_name" else None): m["args"]["name"] for m in meta}
    slices = [e for e in rest if e["ph"] == "X"]
    kernels = [e for e in slices if e["cat"] == "kernel"]
    regions = [e for e in slices if e["cat"] == "region"]
    counters = [e for e in rest if e["ph"] == "C"]
    assert len(kernels) == len(regions) == len(counters) == 6  # 2 configs x 3 runs
    # Ordered, every slice closed (a duration, inside the trace) and on a named process and track.
    ts = [e["ts"] for e in rest]
    assert ts == sorted(ts) and ts[0] == 0
    for e in slices:
        assert e["dur"] >= 0
        assert (e["pid"], None) in names and (e["pid"], e["tid"]) in names, e
    assert {names[(k["pid"], None)] for k in kernels} == {"GPU 0"}
    assert {names[(k["pid"], k["tid"])] for k in kernels} == {"stream 7"}
    assert {names[(r["pid"], None)] for r in regions} == {"regions"}
    # Each kernel lies inside its region; the configuration is named.
    for k, r in zip(kernels, regions):
        assert r["ts"] <= k["ts"] and k["ts"] + k["dur"] <= r["ts"] + r["dur"]
        assert k["args"]["config"] == r["args"]["config"] and k["args"]["run"] == r["args"]["run"]
    assert {k["args"]["config"] for k in kernels} == {"n=512", "n=1024"}
    # The counter values: the table's, at the start of their regions.
    assert {c["name"] for c in counters} == {COUNTER}
    assert sorted(c["ts"] for c in counters) == sorted(r["ts"] for r in regions)
    by_config = {}
    for c, r in zip(sorted(counters, key=lambda e: e["ts"]), regions):
        by_config.setdefault(r["args"]["config"], []).append(c["args"]["value"])
    dur = results.to_dict()
    means = {f"n={n}": v for n, m, v in zip(dur["n"], dur["Metric"], dur["AvgValue"]) if m == COUNTER}
    for config, values in by_config.items():
        assert sum(values) / len(values) == pytest.approx(means[config])


def test_results_without_a_timeline_say_so(tmp_path):
    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures", "h200-python-tutorial-steps", "sgemm-raw.csv")
    results = kprof.load(fixture)
    with pytest.raises(kprof.ConfigError, match="hold no timeline"):
        results.to_trace(tmp_path / "trace.json")
    assert not (tmp_path / "trace.json").exists()


def test_counter_values_that_are_not_numbers_are_left_out(tmp_path):
    from kprof import timeline

    regions = [{"thread": 1, "name": "r", "start_ns": 100 * (i + 1), "end_ns": 100 * (i + 1) + 50, "config": 0, "run": i}
               for i in range(2)]
    raw = {"Annotation": ["r", "r"], "Metric": [COUNTER, COUNTER], "Value": [1.0, float("nan")], "Run": [0, 1]}
    trace = timeline.complete({"kernels": [], "regions": regions}, raw, [0, 0], [[("n", 8)]])
    assert [(c["ts_ns"], c["value"]) for c in trace.counters] == [(100, 1.0)]
    doc = json.loads(open(trace.write(tmp_path / "t.json")).read())
    assert [e["args"]["value"] for e in doc["traceEvents"] if e["ph"] == "C"] == [1.0]
