"""Info collectors (nsight-python 1.1's experimental API) and the thermal options, over the
FakeBackend; the processed aggregation runs through the real ``_core.process_raw``."""

from __future__ import annotations

import math
import re
import threading
import warnings

import pytest

import kprof
from kprof import CollectionScope, ConfigError, InfoCollector


def test_public_names():
    assert [s.value for s in CollectionScope] == ["once", "config", "run", "annotation"]
    assert kprof.experimental.collect is kprof.collectors.collect
    assert kprof.experimental.CollectionScope is CollectionScope


def test_every_scope_and_form(fake_backend, fake_core):
    calls = []

    @kprof.experimental.collect(scope=CollectionScope.ONCE)
    def driver():
        calls.append("once")
        return "580.159.04"

    @kprof.experimental.collect(scope="config")
    def twice_n(n):
        calls.append(("config", n))
        return 2 * n

    def per_run(*args):
        calls.append(("run", args))
        return 1000 + len(calls)

    def per_annotation(name, n):
        calls.append(("annotation", name, n))
        return len(name) * 10 + n

    @kprof.kernel(
        configs=[1, 2],
        runs=3,
        warmup=1,
        info_collectors=[
            driver,
            twice_n,
            ("RunTick", per_run, "run"),
            InfoCollector("AnnInfo", per_annotation, CollectionScope.ANNOTATION),
        ],
    )
    def bench(n):
        with kprof.annotate("ab"):
            pass
        with kprof.annotate("c"):
            pass

    res = bench()
    assert calls.count("once") == 1
    assert [c for c in calls if c[0] == "config"] == [("config", 1), ("config", 2)]
    runs = [c for c in calls if c[0] == "run"]
    assert len(runs) == 6 and runs[0][1] == (1,)  # measured runs only; *args gets the config
    ann = [c for c in calls if c[0] == "annotation"]
    assert len(ann) == 12  # 2 annotations x 6 measured runs, none for warm-ups
    raw = res.raw_columns()
    for i in range(len(raw["Annotation"])):
        n, ann_name = raw["n"][i], raw["Annotation"][i]
        assert raw["driver"][i] == "580.159.04"
        assert raw["twice_n"][i] == 2 * n
        assert raw["AnnInfo"][i] == len(ann_name) * 10 + n
        assert isinstance(raw["RunTick"][i], int)
    # Both annotations of one run share the run's value.
    by_run = {}
    for i in range(len(raw["Annotation"])):
        by_run.setdefault((raw["n"][i], raw["Run"][i]), set()).add(raw["RunTick"][i])
    assert all(len(v) == 1 for v in by_run.values()) and len(by_run) == 6

    out = res.to_dict()
    for col in ("twice_n_Avg", "twice_n_Std", "twice_n_Min", "twice_n_Max", "RunTick_Avg", "AnnInfo_Max"):
        assert col in out, sorted(out)
    assert out["driver"] == ["580.159.04"] * len(out["Annotation"])
    row = [i for i in range(len(out["Annotation"])) if out["Annotation"][i] == "ab" and out["n"][i] == 2][0]
    assert out["AnnInfo_Avg"][row] == 22 and out["twice_n_Min"][row] == 4
    assert math.isnan(out["twice_n_Std"][row]) or out["twice_n_Std"][row] in (0, None)


def test_a_raising_collector_gives_none_and_one_warning(fake_backend, fake_core):
    def broken(n):
        raise RuntimeError("sensor gone")

    @kprof.kernel(configs=[1, 2], runs=3, info_collectors=[("Broken", broken, "run")])
    def bench(n):
        with kprof.annotate("a"):
            pass

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = bench()
    mine = [x for x in w if "Broken" in str(x.message)]
    assert len(mine) == 1 and issubclass(mine[0].category, RuntimeWarning)
    assert "sensor gone" in str(mine[0].message)
    assert res.raw_columns()["Broken"] == [None] * 6
    assert "Broken" in res.to_dict()  # all missing: one column, not X_Avg


def test_collector_sessions_survive_reentry_and_threads(fake_backend, fake_core):
    """A collector that enters an annotation itself is not called back into (the session is
    busy), and annotations entered by another thread during a run are collected."""
    seen = []

    def tick(n):
        with kprof.annotate("from_collector"):
            pass
        return n

    def where(name, n):
        seen.append(name)
        return name

    @kprof.kernel(configs=[1], runs=2, info_collectors=[("tick", tick, "run"), ("where", where, "annotation")])
    def bench(n):
        t = threading.Thread(target=lambda: kprof.annotate("side").__enter__().__exit__(None, None, None))
        t.start()
        t.join()

    raw = bench().raw_columns()
    assert seen == ["side", "side"]
    assert {a: w for a, w in zip(raw["Annotation"], raw["where"])} == {"side": "side", "from_collector": None}
    assert set(raw["tick"]) == {1}


@pytest.mark.parametrize(
    "collectors, message",
    [
        ([("AvgValue", lambda: 1, "once")], 'info collector name "AvgValue" is reserved: it is one of nsight-python\'s reserved column names'),
        ([("SMClockMHz", lambda: 1, "run")], 'info collector name "SMClockMHz" is reserved: it is a run-condition column'),
        ([("BootstrapMean_Lower", lambda: 1, "once")], 'info collector name "BootstrapMean_Lower" is reserved: it is a column of kprof\'s result tables'),
        ([("Warning", lambda: 1, "once")], 'info collector name "Warning" is reserved: it is a column kprof\'s engine writes'),
        ([("TemperatureC_Avg", lambda: 1, "run")], '"TemperatureC_Avg" is reserved: it is the aggregate _Avg of kprof\'s run-condition column TemperatureC'),
        ([("x", lambda: 1, "run"), ("x", lambda: 2, "once")], '"x" is used by more than one collector'),
        ([("x", lambda: 1, "run"), ("x_Avg", lambda: 2, "run")], '"x_Avg" is reserved: it is the aggregate _Avg column of the collector "x"'),
        ([("x", lambda: 1, "sometimes")], "scope must be a kprof.CollectionScope or one of"),
        ([("_config", lambda: 1, "once")], "the configuration index column"),
        ([lambda: 1], "is not a collector"),
        ("abc", "info_collectors must be a list of collectors"),
    ],
)
def test_bad_collectors_are_clear_errors(collectors, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        kprof.kernel(info_collectors=collectors)(lambda n: None)


def test_a_collector_named_like_a_parameter_is_an_error():
    with pytest.raises(ConfigError, match='info collector name "n" collides with a parameter of the benchmark'):
        kprof.kernel(info_collectors=[("n", lambda: 1, "once")])(lambda n: None)


def test_thermal_options_reach_the_backend(fake_backend, fake_core):
    @kprof.kernel(configs=[1], thermal_mode="manual", thermal_wait=8, thermal_cont=25, thermal_timeout=60,
                  thermal_device=0)
    def bench(n):
        with kprof.annotate("a"):
            pass

    bench()
    o = fake_backend.options
    assert (o["thermal_mode"], o["thermal_wait"], o["thermal_cont"], o["thermal_timeout"], o["thermal_device"]) == (
        "manual", 8.0, 25.0, 60.0, 0)


def test_condition_columns_from_the_backend_are_kept_and_aggregated(fake_backend, fake_core, monkeypatch):
    original = fake_backend.run_benchmark

    def with_conditions(name, func, configs, options, progress):
        table = original(name, func, configs, options, progress)
        n = len(table["Annotation"])
        table["SMClockMHz"] = [1980.0 - 10 * r for r in table["Run"]]
        table["Throttled"] = [1.0 if r == 0 else 0.0 for r in table["Run"]]
        table["ThrottleReasons"] = ["0x0"] * n
        table["DeviceOrdinal"] = [0.0] * n  # constant engine extras stay out of the Python tables
        return table

    monkeypatch.setattr(fake_backend, "run_benchmark", with_conditions)

    @kprof.kernel(configs=[1, 2], runs=4)
    def bench(n):
        with kprof.annotate("a"):
            pass

    res = bench()
    raw = res.raw_columns()
    assert "SMClockMHz" in raw and "DeviceOrdinal" not in raw
    out = res.to_dict()
    assert out["SMClockMHz_Max"] == [1980.0, 1980.0] and out["SMClockMHz_Min"] == [1950.0, 1950.0]
    assert out["ThrottledRuns"] == [1.0, 1.0]
    assert out["ThrottleReasons"] == ["0x0", "0x0"]
