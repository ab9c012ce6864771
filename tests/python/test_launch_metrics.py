"""ncu's ``launch__sm_count`` from the device (kprof/_launch_metrics.py), without a GPU."""

from __future__ import annotations

import math

import kprof
import pytest
from kprof import _backend
from nsight_examples_backend import SM_COUNT, ExamplesBackend

SILENT = kprof.VerbosityLevel.SILENT


@pytest.fixture
def backend_of():
    previous = []

    def install(**kwargs) -> ExamplesBackend:
        b = ExamplesBackend(**kwargs)
        previous.append(_backend.set_backend(b))
        return b

    yield install
    for p in reversed(previous):
        _backend.set_backend(p)


def _bench(**options):
    @kprof.analyze.kernel(configs=[(1,), (2,)], runs=3, verbosity=SILENT, **options)
    def f(n: int) -> None:
        with kprof.annotate("a"):
            pass
        with kprof.annotate("b"):
            pass

    return f


def test_the_engine_measures_the_others_and_each_region_gets_the_sm_count(backend_of):
    b = backend_of()
    metrics = ["smsp__inst_executed.sum", "launch__sm_count"]
    df = _bench(metrics=metrics)().to_dataframe()
    assert b.options["metrics"] == ["smsp__inst_executed.sum"]
    launch = df[df.Metric == "launch__sm_count"]
    assert len(launch) == 4 and set(launch.Annotation) == {"a", "b"}
    assert (launch.AvgValue == SM_COUNT).all() and (launch.Unit == "SM").all()
    assert len(df[df.Metric == "smsp__inst_executed.sum"]) == 4


def test_derive_metric_gets_the_launch_metric_in_its_place(backend_of):
    backend_of()
    seen = []

    def per_sm(inst: float, sms: float, n: int) -> tuple[float, str]:
        seen.append(sms)
        return inst / sms, "inst/SM"

    df = _bench(metrics=["smsp__inst_executed.sum", "launch__sm_count"], derive_metric=per_sm)().to_dataframe()
    assert seen and set(seen) == {SM_COUNT}
    row = df[(df.Metric == "per_sm") & (df.Annotation == "a") & (df.n == 1)].iloc[0]
    assert row.AvgValue == pytest.approx(1000.0 * 1.001 / SM_COUNT)


@pytest.mark.parametrize(
    "combine, expected", [(None, 2 * SM_COUNT), ("max", SM_COUNT), (lambda x, y: x + y + 1, 2 * SM_COUNT + 1)]
)
def test_a_region_of_several_kernels_combines_as_its_other_metrics(backend_of, combine, expected):
    backend_of(kernels_per_region=2)
    df = _bench(metrics=["launch__sm_count"], combine_kernel_metrics=combine)().to_dataframe()
    assert set(df.Metric) == {"launch__sm_count"}  # the engine's placeholder duration rows are gone
    assert (df.AvgValue == expected).all()


def test_without_the_device_count_the_values_are_nan_with_a_warning(fake_backend):
    with pytest.warns(RuntimeWarning, match="sm_count"):
        df = _bench(metrics=["launch__sm_count"])().to_dataframe()
    assert all(math.isnan(v) for v in df.AvgValue)


def test_ncu_measures_launch_metrics_itself():
    from kprof._launch_metrics import LaunchMetrics

    assert LaunchMetrics.of(["launch__sm_count"], None, "ncu") is None
    assert LaunchMetrics.of(["gpu__time_duration.sum"], None, "cupti") is None
