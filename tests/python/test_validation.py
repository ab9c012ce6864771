"""Every option error of @kernel, raised when the decorator is applied (before any GPU work)."""

from __future__ import annotations

import operator
import re

import pytest

import kprof
from kprof import ConfigError, ProfilerError
from kprof.analyze import kernel


def body(n):
    pass


def check(exc, message, **opts):
    with pytest.raises(exc, match=re.escape(message)) as info:
        kernel(**opts)(body)
    assert isinstance(info.value, ProfilerError)
    return info.value


@pytest.mark.parametrize(
    "opts, message",
    [
        (dict(runs=0), "runs must be an integer >= 1, got 0"),
        (dict(runs=-3), "runs must be an integer >= 1, got -3"),
        (dict(runs=2.5), "runs must be an integer >= 1, got 2.5"),
        (dict(runs=True), "runs must be an integer >= 1, got True"),
        (dict(warmup=-1), "warmup must be an integer >= 0, got -1"),
        (dict(verbosity=7), "verbosity must be a kprof.VerbosityLevel (SILENT=0, INFO=3, DEBUG=4), got 7"),
        (dict(verbosity="loud"), "verbosity must be a kprof.VerbosityLevel (SILENT=0, INFO=3, DEBUG=4), got 'loud'"),
        (dict(clock_control="fast"), "clock_control must be one of 'none', 'base'; got 'fast'"),
        (dict(cache_control="some"), "cache_control must be one of 'all', 'none'; got 'some'"),
        (dict(replay_mode="app"), "replay_mode must be one of 'kernel', 'range', 'application'; got 'app'"),
        (dict(thermal_mode="hot"), "thermal_mode must be one of 'auto', 'manual', 'off'; got 'hot'"),
        (dict(order="random"), "order must be one of 'interleaved', 'sequential'; got 'random'"),
        (dict(duration_source="ncu"), "duration_source must be one of 'auto', 'records', 'counters'; got 'ncu'"),
        (dict(duration_source="counters", backend="cuda-events"),
         "duration_source='counters' takes gpu__time_duration.sum from the hardware counters"),
        # The engine's own validation, when the decorator is applied.
        (dict(duration_source="counters", replay_mode="range"),
         'duration source "counters" needs kernel or application replay: in range replay'),
        (dict(backend="nvbit"), "backend must be one of 'cupti', 'cuda-events', 'ncu'; got 'nvbit'"),
        (dict(thermal_wait=20, thermal_cont=10),
         "thermal_cont (10) must be greater than thermal_wait (20): profiling pauses at thermal_wait"),
        (dict(thermal_wait=15, thermal_cont=15), "thermal_cont (15) must be greater than thermal_wait (15)"),
        (dict(thermal_wait="x"), "thermal_wait must be a number of degrees C or None, got 'x'"),
        (dict(thermal_timeout=0), "thermal_timeout must be a positive number of seconds or None, got 0"),
        (dict(thermal_device=-1), "thermal_device must be a CUDA device ordinal (int >= 0) or None, got -1"),
        (dict(derive_metric=5), "derive_metric must be callable, got int 5"),
        (dict(derive_metric="tflops"), "derive_metric must be callable, got str 'tflops'"),
        (dict(normalize_against=""), "normalize_against must be an annotation name (a non-empty string), got ''"),
        (dict(normalize_against=3), "normalize_against must be an annotation name (a non-empty string), got 3"),
        (dict(metrics=[]), "metrics is empty; give at least one metric name"),
        (dict(metrics=[""]), "metrics must hold non-empty strings, got '' in ['']"),
        (dict(metrics=5), "metrics must be a string or a list of strings, got 5"),
        (dict(metrics=["gpu__time_duration.sum", " gpu__time_duration.sum"]),
         "metrics lists 'gpu__time_duration.sum' twice"),
        (dict(ignore_kernel_list=[3]), "ignore_kernel_list must hold non-empty strings, got 3 in [3]"),
        (dict(combine_kernel_metrics="avg"),
         "combine_kernel_metrics='avg' is not a reducer; use one of 'sum', 'mean', 'max', 'min', 'first', 'last' "
         "or a callable of 2 arguments"),
        (dict(combine_kernel_metrics=3),
         "combine_kernel_metrics must be a reducer name or a callable of 2 arguments, got 3"),
        (dict(combine_kernel_metrics=lambda x: x), "must accept 2 positional arguments"),
        (dict(combine_kernel_metrics=lambda x, y, z: x), "must accept 2 positional arguments"),
        (dict(output_prefix=3), "output_prefix must be a path prefix (str) or None, got 3"),
        (dict(output_csv="yes"), "output_csv must be True or False, got 'yes'"),
        (dict(target_rsd=-1), "target_rsd must be a positive number (percent) or None, got -1"),
        (dict(target_ci=0), "target_ci must be a positive number (percent of the mean) or None, got 0"),
        (dict(time_budget=float("inf"), target_rsd=1), "time_budget must be a positive number (seconds) or None"),
        (dict(max_runs=0, target_rsd=1), "max_runs must be an integer >= 1, got 0"),
        (dict(runs=10, max_runs=5, target_rsd=1), "max_runs (5) is smaller than runs (10); runs is the minimum"),
        (dict(max_runs=50), "max_runs=50 only bounds adaptive runs; set target_rsd or target_ci as well"),
        (dict(time_budget=10), "time_budget=10.0 only bounds adaptive runs; set target_rsd or target_ci as well"),
        (dict(configs=[]), "configs is empty; give at least one config"),
        (dict(configs="abc"), "configs must be an iterable of configs (a list, a generator, ...), got 'abc'"),
        (dict(configs=5), "configs must be an iterable of configs (a list, a generator, ...), got 5"),
        (dict(metrics=["dram__bytes_read.sum"], backend="cuda-events"),
         "metrics ['dram__bytes_read.sum'] are hardware counters (CUPTI Range Profiler); backend='cuda-events'"),
        (dict(l2_flush="memset"), "l2_flush must be one of 'read', 'discard', 'write'; got 'memset'"),
        (dict(l2_flush=None), "l2_flush must be one of 'read', 'discard', 'write'; got 'None'"),
        (dict(l2_flush_bytes=0), "l2_flush_bytes must be a positive number of bytes (at least the L2) or None, got 0"),
        (dict(l2_flush_bytes=1.5e9), "l2_flush_bytes must be a positive number of bytes (at least the L2) or None, got"),
        (dict(l2_flush_bytes=True), "l2_flush_bytes must be a positive number of bytes (at least the L2) or None, got True"),
        (dict(counter_pass_records="on"), "counter_pass_records must be True or False, got 'on'"),
        (dict(l2_flush="write", backend="ncu"), "l2_flush, l2_flush_bytes and counter_pass_records are options of"),
    ],
)
def test_config_errors(opts, message):
    err = check(ConfigError, message, **opts)
    assert isinstance(err, ValueError)


@pytest.mark.parametrize(
    "opts, message",
    [
        (dict(plot_type="pie"), "plot_type must be 'line' or 'bar'"),
        (dict(show_aggregate="median"), "show_aggregate must be None, 'avg' or 'geomean'"),
        (dict(filename="plot.pdf"), "kprof writes .png or .svg images"),
        (dict(plot_width=-1), "plot_width must be a positive number"),
        (dict(metric=["a", "b"]), "metric must be one metric name"),
    ],
)
def test_plot_options_checked_when_applied(opts, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        kprof.analyze.plot(**opts)


@pytest.mark.parametrize(
    "opts",
    [
        dict(),
        dict(metrics="gpu__time_duration.sum"),  # a bare string is one metric
        dict(metrics=[" gpu__time_duration.sum "]),
        dict(combine_kernel_metrics=operator.add),
        dict(combine_kernel_metrics=max),
        dict(combine_kernel_metrics=lambda x, y: x + y),
        dict(combine_kernel_metrics=lambda *xs: sum(xs)),
        *[dict(combine_kernel_metrics=r) for r in kprof.analyze.REDUCERS],
        dict(thermal_mode="off"),
        dict(thermal_mode="auto"),
        dict(info_collectors=[]),
        dict(clock_control="none", cache_control="none", replay_mode="kernel"),
        dict(verbosity=kprof.VerbosityLevel.DEBUG),
        dict(verbosity=0),
        dict(order="sequential", warmup=0),
        dict(target_rsd=1.0, max_runs=100, time_budget=30),
        dict(target_ci=0.5),
        dict(ignore_kernel_list="dummy_kernel"),
        # Counter metrics: names are checked by the engine on the host when the function runs.
        dict(metrics=["sm__throughput.avg.pct_of_peak_sustained_elapsed"]),
        dict(metrics=["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]),
        dict(metrics="dram__bytes_read.sum", replay_mode="range"),
        dict(replay_mode="range"),
        dict(metrics="dram__bytes_write.sum", replay_mode="application"),
        dict(duration_source="counters", replay_mode="application"),
        dict(duration_source="counters", backend="ncu"),
        dict(l2_flush="discard", l2_flush_bytes=1 << 30, counter_pass_records=True),
        dict(l2_flush="write", cache_control="none"),
    ],
)
def test_accepted(opts):
    wrapped = kernel(**opts)(body)
    assert wrapped.__name__ == "body"
    assert wrapped.__wrapped__ is body


def test_metrics_string_means_one_metric():
    wrapped = kernel(metrics="gpu__time_duration.sum")(body)
    assert wrapped._kprof_settings.metrics == ("gpu__time_duration.sum",)


def test_positional_option_is_rejected():
    with pytest.raises(ConfigError, match="@kernel takes keyword-only options"):
        kernel(5)


def test_decorator_forms():
    def f():
        pass

    for wrapped in (kernel(f), kernel()(f), kernel(runs=3)(f)):
        assert callable(wrapped) and wrapped.__name__ == "f"
    assert kernel(runs=3)(f)._kprof_settings.runs == 3
    assert kprof.kernel is kernel
    assert kprof.analyze.kernel is kernel


def test_validation_happens_before_the_backend(fake_backend):
    with pytest.raises(ConfigError):
        kernel(runs=0)(body)
    assert fake_backend.calls == 0


def test_exception_hierarchy():
    assert kprof.ProfilerException is kprof.ProfilerError
    for cls in (kprof.ConfigError, kprof.AnnotationError, kprof.NotAvailableYetError, kprof.BackendError):
        assert issubclass(cls, kprof.ProfilerError)
    assert issubclass(kprof.ConfigError, ValueError)
    assert issubclass(kprof.AnnotationError, ValueError)
    assert issubclass(kprof.NotAvailableYetError, NotImplementedError)
    assert issubclass(kprof.BackendError, RuntimeError)


def test_verbosity_levels():
    V = kprof.VerbosityLevel
    assert (V.SILENT, V.INFO, V.DEBUG) == (0, 3, 4)
    assert [m.name for m in V] == ["SILENT", "INFO", "DEBUG"]


@pytest.mark.parametrize(
    "opts, message",
    [
        (dict(clock_control="base"), "clock_control='base' (locking clocks) needs backend='ncu'"),
        (dict(ncu_options={"set": "full"}), "ncu_options needs backend='ncu'"),
        (dict(backend="ncu", target_rsd=2.0), "do not work with backend='ncu'"),
        (dict(backend="ncu", ignore_kernel_list=["k"]), "ignore_kernel_list is not supported with backend='ncu'"),
        (dict(backend="ncu", ncu_options={"sett": "full"}), "ncu_options has unknown key(s) ['sett']"),
        (dict(backend="ncu", ncu_options={"sections": "X"}), "must be a list of strings"),
        (dict(backend="ncu", ncu_options={"launch_count": -1}), "must be an int >= 0"),
        (dict(backend="ncu", ncu_options={"target_processes": "some"}), "'all' or 'application-only'"),
    ],
)
def test_ncu_only_options(opts, message):
    check(ConfigError, message, **opts)


def test_ncu_backend_accepts_its_options():
    for opts in (
        dict(backend="ncu"),
        dict(backend="ncu", clock_control="base", replay_mode="application", cache_control="none"),
        dict(backend="ncu", metrics=["dram__bytes_read.sum", "gpu__time_duration.sum"]),
        dict(backend="ncu", ncu_options={"set": "full", "sections": ["SpeedOfLight"], "launch_count": 3}),
    ):
        kernel(**opts)(body)


@pytest.mark.parametrize("given, expected", [
    (dict(), dict(l2_flush="read", l2_flush_bytes=None, counter_pass_records=False)),
    (dict(l2_flush="discard", l2_flush_bytes=256 << 20, counter_pass_records=True),
     dict(l2_flush="discard", l2_flush_bytes=256 << 20, counter_pass_records=True)),
])
def test_measurement_options_in_the_backend_options(given, expected, fake_backend, fake_core):
    kernel(configs=[1], runs=1, verbosity=0, **given)(body)()
    o = fake_backend.options
    assert {k: o[k] for k in expected} == expected


@pytest.mark.parametrize("opts, message", [
    (dict(kernel_trace="parallel"), "kernel_trace must be one of 'concurrent', 'serial'; got 'parallel'"),
    (dict(graph_trace="all"), "graph_trace must be one of 'graph', 'nodes'; got 'all'"),
    (dict(kernel_trace=None), "kernel_trace must be one of 'concurrent', 'serial'; got 'None'"),
    (dict(attribution="thread"), "attribution must be one of 'order', 'records'; got 'thread'"),
])
def test_configure_checks_its_values(opts, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        kprof.configure(**opts)


def test_configure_before_the_engine_starts_accepts_every_value():
    try:
        kprof.configure(kernel_trace="serial", graph_trace="graph")
        kprof.configure(kernel_trace="concurrent", graph_trace="nodes")
        kprof.configure(attribution="records")
        kprof.configure(attribution="order")
    finally:
        kprof.configure()  # back to the defaults for the rest of the session


def test_release_counters_warns_when_cupti_must_stay_attached(monkeypatch):
    """CUPTI left attached because graphs instantiated under it may be alive: one warning that says
    why and what it costs; detached (or no profiler ended): silent."""
    import warnings

    from kprof import _measurement

    monkeypatch.setattr(_measurement._core, "release_counters", lambda: "graphs")
    with pytest.warns(UserWarning, match="CUPTI stays attached.*CUDA graphs instantiated"):
        kprof.release_counters()
    for state in ("detached", None, "in-use"):
        monkeypatch.setattr(_measurement._core, "release_counters", lambda s=state: s)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert kprof.release_counters() is None


def test_release_counters_is_public_and_harmless_without_a_session():
    # Nothing is open on a machine without a GPU: the call returns and can be repeated.
    assert "release_counters" in kprof.__all__
    assert kprof.release_counters() is None
    assert kprof.release_counters() is None
