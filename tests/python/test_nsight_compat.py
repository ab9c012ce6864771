"""``import kprof as nsight`` runs the seed tutorial's decorator style (steps 2, 3 and 5), without a GPU.

The bodies are the seed's, with torch replaced by a stand-in (the FakeBackend fabricates times).
"""

from __future__ import annotations

import inspect
import textwrap

import pandas as pd

import kprof as nsight

SILENT = nsight.VerbosityLevel.SILENT
ADD = lambda x, y: x + y  # noqa: E731  (the seed's reducer)


class _Tensor:
    def __matmul__(self, other):
        return self

    def __add__(self, other):
        return self

    def half(self):
        return self


def randn(*shape, device=None):
    return _Tensor()


def test_step2_one_matmul(fake_backend, fake_core):
    @nsight.analyze.kernel(thermal_mode="off", combine_kernel_metrics=ADD)
    def first_matmul(n: int) -> None:
        a = randn(n, n, device="cuda")
        b = randn(n, n, device="cuda")
        with nsight.annotate("matmul"):
            _ = a @ b

    df = first_matmul(2048).to_dataframe()
    assert len(df) == 1
    r = df.iloc[0]
    assert (r["Annotation"], r["n"], r["Metric"], r["Unit"]) == ("matmul", 2048, "gpu__time_duration.sum", "ns")
    assert r["NumRuns"] == 1
    assert r["StableMeasurement"] is pd.NA  # one run: no spread to judge
    for c in ("Kernel", "GPU", "ComputeClock", "MemoryClock"):
        assert c in df.columns


def test_step3_noisy_or_not(fake_backend, fake_core):
    @nsight.analyze.kernel(configs=[1 << 14, 1 << 24], runs=20, thermal_mode="off", verbosity=SILENT,
                           combine_kernel_metrics=ADD)
    def noisy_or_not(n: int) -> None:
        x = randn(n, device="cuda")
        y = randn(n, device="cuda")
        a = randn(2048, 2048, device="cuda")
        with nsight.annotate("vector add"):
            _ = x + y
        with nsight.annotate("matmul 2048"):
            _ = a @ a

    df = noisy_or_not().to_dataframe()
    cols = ["Annotation", "n", "AvgValue", "StdDev", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct",
            "StableMeasurement"]
    out = df[cols].copy()
    assert out.to_string(index=False)
    tiny = df[(df.Annotation == "vector add") & (df.n == 1 << 14)].iloc[0]
    assert tiny["NumRuns"] == 20
    assert df[df.Annotation == "matmul 2048"].RelativeStdDevPct.max() >= 0


SIZES = [(512,), (1024,), (2048,), (4096,)]


def tflops(time_ns: float, n: int) -> tuple[float, str]:
    return 2 * n ** 3 / (time_ns * 1e-9) / 1e12, "TFLOP/s"


def make_precision_body():
    def precision(n: int) -> None:  # a fresh function object for each decorator
        a = randn(n, n, device="cuda")
        b = randn(n, n, device="cuda")
        a16, b16 = a.half(), b.half()
        with nsight.annotate("fp32"):
            _ = a @ b
        with nsight.annotate("fp16"):
            _ = a16 @ b16

    return precision


def test_step5_sweep_derive_and_normalise(fake_backend, fake_core):
    precision_tflops = nsight.analyze.kernel(configs=SIZES, runs=5, derive_metric=tflops, thermal_mode="off",
                                             verbosity=SILENT, combine_kernel_metrics=ADD)(make_precision_body())
    precision_ratio = nsight.analyze.kernel(configs=SIZES, runs=5, normalize_against="fp32", thermal_mode="off",
                                            verbosity=SILENT, combine_kernel_metrics=ADD)(make_precision_body())
    df = precision_tflops().to_dataframe()
    tf = df[df.Metric == "tflops"].pivot(index="n", columns="Annotation", values="AvgValue")
    assert list(tf.index) == [512, 1024, 2048, 4096]
    assert textwrap.indent(tf[["fp32", "fp16"]].to_string(float_format=lambda v: f"{v:,.2f}"), "  ")
    rd = precision_ratio().to_dataframe()
    fp16 = rd[rd.Annotation == "fp16"][["n", "AvgValue", "StdDev", "Unit", "Normalized"]]
    assert list(fp16.Normalized) == ["fp32"] * 4
    assert (rd[rd.Annotation == "fp32"].AvgValue == 1.0).all()


def test_nsight_names_exist():
    assert nsight.ProfilerException is nsight.ProfilerError
    assert nsight.analyze.ignore_failures
    with nsight.analyze.ignore_failures():
        raise RuntimeError("swallowed, as nsight.analyze.ignore_failures does")
    params = inspect.signature(nsight.analyze.kernel).parameters
    nsight_11 = ["configs", "runs", "derive_metric", "normalize_against", "verbosity", "metrics",
                 "ignore_kernel_list", "clock_control", "cache_control", "replay_mode", "thermal_mode",
                 "thermal_wait", "thermal_cont", "thermal_timeout", "thermal_device", "combine_kernel_metrics",
                 "output_prefix", "output_csv", "info_collectors"]
    assert list(params)[1:20] == nsight_11
    assert all(params[p].kind is inspect.Parameter.KEYWORD_ONLY for p in nsight_11)
    defaults = {p: params[p].default for p in params}
    assert defaults["runs"] == 1 and defaults["verbosity"] == nsight.VerbosityLevel.INFO
    assert list(defaults["metrics"]) == ["gpu__time_duration.sum"]
    assert (defaults["clock_control"], defaults["cache_control"], defaults["replay_mode"],
            defaults["thermal_mode"], defaults["output_csv"]) == ("none", "all", None, "auto", False)
    # replay_mode=None: application replay in-process, ncu's kernel replay under backend="ncu"
    # (docs/python-differences.md); durations from the counters when available.
    assert defaults["duration_source"] == "auto"
    assert (defaults["warmup"], defaults["order"], defaults["backend"]) == (1, "interleaved", "cupti")


def test_pandas_is_imported_when_a_benchmark_is_decorated_not_at_import():
    import subprocess
    import sys

    # Not at import (the console command imports the package); when a benchmark is decorated, as
    # nsight-python does at its import, so that no measured call pays pandas' import.
    code = (
        "import sys, kprof; before = 'pandas' in sys.modules\n"
        "@kprof.analyze.kernel(configs=[(1,)])\n"
        "def f(n): pass\n"
        "print(before, 'IPython' in sys.modules, 'pandas' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True"]
