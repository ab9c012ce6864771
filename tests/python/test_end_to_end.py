"""The whole decorator path on the FakeBackend, with a fake _core.process_raw."""

from __future__ import annotations

import csv
import io
import inspect
import operator
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import kprof
from bench_support import SILENT, make_bench
from kprof import ConfigError, BackendError
from kprof import _backend, _core


NSIGHT_ORDER = [
    "Annotation", "Metric", "n", "dtype", "AvgValue", "StdDev", "MinValue", "MaxValue", "NumRuns",
    "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit", "CI95_Lower", "CI95_Upper",
    "RelativeStdDevPct", "StableMeasurement", "Normalized", "Geomean",
]
KPROF_EXTRA = ["Benchmark", "Median", "P05", "P95", "TotalRuns", "OutliersMild", "OutliersSevere"]
RAW_ORDER = ["Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit",
             "n", "dtype", "Benchmark", "Run"]


def test_dataframe_schema_and_dtypes(fake_backend, fake_core):
    df = make_bench()().to_dataframe()
    assert list(df.columns) == NSIGHT_ORDER + KPROF_EXTRA
    assert len(df) == 4
    for c in ("AvgValue", "StdDev", "MinValue", "MaxValue", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct",
              "Geomean", "ComputeClock", "MemoryClock", "Median", "P05", "P95"):
        assert df[c].dtype == np.float64, c
    for c in ("NumRuns", "TotalRuns", "OutliersMild", "OutliersSevere"):
        assert df[c].dtype == np.int64, c
    assert df["StableMeasurement"].dtype == pd.BooleanDtype()
    assert df["n"].dtype == np.int64
    assert pd.api.types.is_string_dtype(df["dtype"])
    for c in ("Annotation", "Metric", "Kernel", "GPU", "Host", "Unit", "Benchmark"):
        assert pd.api.types.is_string_dtype(df[c]), c
    # first-occurrence order: configs in the user's order, annotations in program order
    assert list(zip(df.Annotation, df.n)) == [("base", 1024), ("impl", 1024), ("base", 4096), ("impl", 4096)]
    row = df.iloc[0]
    assert row.AvgValue == pytest.approx(1001.5)  # 1000 + runs 0..3
    assert row.NumRuns == 4 and row.Unit == "ns" and row.Kernel == "kernel_base"
    assert row.Normalized is False or row.Normalized == False  # noqa: E712
    assert row.Benchmark == "bench"


def test_raw_table(fake_backend, fake_core):
    raw = make_bench()().raw()
    assert list(raw.columns) == RAW_ORDER
    assert len(raw) == 2 * 2 * 4
    assert raw["Value"].dtype == np.float64 and raw["Run"].dtype == np.int64
    assert sorted(set(raw.Run)) == [0, 1, 2, 3]


def test_options_handed_to_backend(fake_backend, fake_core):
    make_bench(warmup=2, order="sequential", combine_kernel_metrics="sum", ignore_kernel_list="x",
               target_rsd=1.5, max_runs=50)()
    o = fake_backend.options
    assert set(o) == set(_backend.OPTION_KEYS) - {"output_prefix"}  # only with output_csv=True
    assert o["runs"] == 4 and o["warmup"] == 2 and o["order"] == "sequential"
    assert o["metrics"] == ["gpu__time_duration.sum"]
    assert o["combine_kernel_metrics"] == "sum" and o["ignore_kernel_list"] == ["x"]
    assert o["target_rsd"] == 1.5 and o["max_runs"] == 50 and o["time_budget"] is None
    assert o["cache_control"] == "all" and o["clock_control"] == "none" and o["thermal_mode"] == "auto"
    assert o["verbosity"] == 0
    assert fake_backend.name == "bench"
    assert fake_backend.configs == [[("n", 1024), ("dtype", "fp32")], [("n", 4096), ("dtype", "fp16")]]
    make_bench(combine_kernel_metrics=operator.add)()
    assert fake_backend.options["combine_kernel_metrics"] is operator.add


def test_counter_metrics_and_range_replay_reach_the_backend(fake_backend, fake_core):
    metrics = ["gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum"]
    make_bench(metrics=metrics, replay_mode="range")()
    o = fake_backend.options
    assert o["metrics"] == metrics and o["replay_mode"] == "range"
    assert o["duration_source"] == "auto"
    make_bench(metrics=metrics)()
    assert fake_backend.options["replay_mode"] == "application", "the in-process default"
    from kprof.analyze import _validate

    base = dict(inspect.signature(kprof.analyze.kernel).parameters)
    opts = {k: v.default for k, v in base.items() if k != "_func"}
    assert _validate({**opts, "backend": "ncu"}).replay_mode == "kernel", "ncu's own default under ncu"
    assert _validate(opts).replay_mode == "application"
    make_bench(metrics=metrics, replay_mode="application", duration_source="counters")()
    assert fake_backend.options["duration_source"] == "counters"


def test_derive_metric_rows(fake_backend, fake_core):
    def tflops(t, n, dtype):
        return 2 * n ** 3 / (t * 1e-9) / 1e12, "TFLOP/s"

    res = make_bench(derive_metric=tflops)()
    raw = res.raw()
    assert list(raw.Metric.unique()) == ["gpu__time_duration.sum", "tflops"]
    first = raw.iloc[0]
    derived = raw[(raw.Metric == "tflops") & (raw.Annotation == first.Annotation) & (raw.Run == first.Run)
                  & (raw.n == first.n)].iloc[0]
    assert derived.Value == pytest.approx(2 * first.n ** 3 / (first.Value * 1e-9) / 1e12)
    assert derived.Unit == "TFLOP/s" and derived.Kernel == first.Kernel
    df = res.to_dataframe()
    assert len(df) == 8
    assert set(df[df.Metric == "tflops"].Unit) == {"TFLOP/s"}


def test_derive_metric_dict_and_missing_unit(fake_backend, fake_core):
    def metrics(t, n, dtype):
        return {"us": (t / 1e3, "us"), "bare": t}

    with pytest.warns(RuntimeWarning, match="returned no unit for 'bare'"):
        raw = make_bench(derive_metric=metrics)().raw()
    assert list(raw.Metric.unique()) == ["gpu__time_duration.sum", "us", "bare"]
    assert raw[raw.Metric == "bare"].Unit.isna().all()


def test_derive_metric_checks_are_kprof_cores(fake_backend, fake_core):
    """The derived values go through kprof-core's derived metrics (`transforms::derive_samples`):
    a measured metric's name or two units for one derived metric are refused when profiling."""

    def clash(t, n, dtype):
        return {"gpu__time_duration.sum": (t, "ns")}

    with pytest.raises(ConfigError, match="derive_metric: derived metric \"gpu__time_duration.sum\" .* has the name "
                                          "of a metric already in the results"):
        make_bench(derive_metric=clash)()
    units = iter(["us", "ms", "s"] * 100)

    def fickle(t, n, dtype):
        return t, next(units)

    with pytest.raises(ConfigError, match="derive_metric: .*unit"):
        make_bench(derive_metric=fickle)()
    # The missing-unit warning points at the caller of the profiled function.
    with pytest.warns(RuntimeWarning, match="returned no unit") as seen:
        make_bench(derive_metric=lambda t, n, d: t)()
    assert seen[0].filename == __file__


def test_derive_metric_lambda_and_errors(fake_backend, fake_core):
    with pytest.warns(RuntimeWarning, match="returned no unit"):
        raw = make_bench(derive_metric=lambda t, n, d: t * 2)().raw()
    assert "<lambda>" in set(raw.Metric)

    def broken(t, n, dtype):
        raise ZeroDivisionError("oops")

    with pytest.raises(ZeroDivisionError) as info:
        make_bench(derive_metric=broken)()
    assert any("raised by derive_metric broken" in note for note in info.value.__notes__)

    def bad(t, n, dtype):
        return "x"

    with pytest.raises(ConfigError, match="derive_metric bad returned 'x' for 'bad'; it must return a number"), \
            pytest.warns(RuntimeWarning):
        make_bench(derive_metric=bad)()


def test_normalize_against(fake_backend, fake_core):
    df = make_bench(normalize_against="base")().to_dataframe()
    assert list(df.columns) == NSIGHT_ORDER[:-1] + ["NormalizationValue", "Geomean"] + KPROF_EXTRA
    assert set(df.Normalized) == {"base"}
    impl = df[(df.Annotation == "impl") & (df.n == 1024)].iloc[0]
    assert impl.AvgValue == pytest.approx(2001.5 / 1001.5)
    assert impl.NormalizationValue == pytest.approx(1001.5)


def test_normalize_against_unknown_annotation(fake_backend, fake_core):
    res = make_bench(normalize_against="torch")()
    with pytest.raises(ConfigError, match=re.escape(
        "normalize_against='torch' names no annotation of this run; the annotations are ['base', 'impl']"
    )):
        res.to_dataframe()


def test_run_order_and_warmup(fake_backend, fake_core):
    order = []

    @kprof.kernel(configs=[1, 2], runs=2, warmup=1, verbosity=SILENT)
    def f(n):
        order.append(n)

    f()
    assert order == [1, 2, 1, 2, 1, 2]  # warm-up of each config, then interleaved runs
    order.clear()
    kprof.kernel(configs=[1, 2], runs=2, warmup=0, order="sequential", verbosity=SILENT)(f.__wrapped__)()
    assert order == [1, 1, 2, 2]


def test_return_value_warns_once(fake_backend, fake_core):
    @kprof.kernel(configs=[1], runs=3, verbosity=SILENT)
    def f(n):
        return 42

    with pytest.warns(RuntimeWarning, match="f\\(\\) returned int; kprof discards the return value") as w:
        f()
    assert len([x for x in w if "discards" in str(x.message)]) == 1


def test_engine_without_a_gpu_gives_one_clear_error():
    """On a machine without the NVIDIA driver the CUPTI engine says what is missing and the fix."""
    from kprof import _backend
    from kprof.exceptions import BackendError

    available, why = _core.engine_available()
    if available:
        pytest.skip(f"a CUDA driver is present here ({why})")

    @kprof.kernel(configs=[1], verbosity=SILENT)
    def f(n):
        pass

    assert type(_backend.get_backend()).__name__ == "CuptiBackend"
    with pytest.raises(BackendError, match="libcuda could not be loaded") as err:
        f()
    assert "install the NVIDIA driver" in str(err.value)


def test_processed_statistics_come_from_the_core(fake_backend):
    """The processed table is kprof-core's: Student-t CIs (df = n-1), sample std dev, percentiles."""
    df = make_bench()().to_dataframe()
    row = df[(df.Annotation == "impl") & (df.n == 4096)].iloc[0]
    values = [1000.0 * 2 * 2 + run for run in range(4)]  # FakeBackend: 1000*(k+1)*(i+1) + run
    mean = sum(values) / 4
    sd = (sum((v - mean) ** 2 for v in values) / 3) ** 0.5
    t975_df3 = 3.182446305284263  # scipy.stats.t.ppf(0.975, 3)
    assert row.AvgValue == pytest.approx(mean)
    assert row.StdDev == pytest.approx(sd)
    assert row.CI95_Lower == pytest.approx(mean - t975_df3 * sd / 2)
    assert row.CI95_Upper == pytest.approx(mean + t975_df3 * sd / 2)
    assert row.Median == pytest.approx(4001.5)
    assert row.NumRuns == 4 and row.TotalRuns == 4


def test_bad_backend_tables(fake_backend, fake_core, monkeypatch):
    bench = make_bench()
    orig = fake_backend.run_benchmark

    def drop(col):
        def run(*a):
            t = orig(*a)
            del t[col]
            return t
        return run

    monkeypatch.setattr(fake_backend, "run_benchmark", drop("_config"))
    with pytest.raises(BackendError, match=re.escape("the backend's raw table has no column(s) ['_config']")):
        bench()

    def short(*a):
        t = orig(*a)
        t["Run"] = t["Run"][:-1]
        return t

    monkeypatch.setattr(fake_backend, "run_benchmark", short)
    with pytest.raises(BackendError, match="the backend's raw columns differ in length"):
        bench()

    def bad_index(*a):
        t = orig(*a)
        t["_config"][0] = 9
        return t

    monkeypatch.setattr(fake_backend, "run_benchmark", bad_index)
    with pytest.raises(BackendError, match="_config 9, not an index into 2 configs"):
        bench()


def test_process_raw_contract_checked(fake_backend, monkeypatch):
    monkeypatch.setattr(_core, "process_raw", lambda raw, options: {"Annotation": []})
    with pytest.raises(BackendError, match="_core.process_raw returned no column\\(s\\) \\['Metric'"):
        make_bench()().to_dataframe()


def test_process_raw_input(fake_backend, monkeypatch):
    seen = {}

    def capture(raw, options):
        seen["raw"], seen["options"] = raw, options
        return {}

    monkeypatch.setattr(_core, "process_raw", capture)
    with pytest.raises(BackendError):
        make_bench(normalize_against="base")().to_dataframe()
    assert list(seen["raw"]) == RAW_ORDER
    assert seen["options"] == {"params": ["n", "dtype"], "normalize_against": "base", "stable_rsd_pct": 2.0}
    assert all(isinstance(v, float) for v in seen["raw"]["Value"])


def test_output_csv_asks_the_engine_for_per_config_raw_files(fake_backend, fake_core, tmp_path):
    make_bench(output_csv=True, output_prefix=str(tmp_path) + "/")()
    prefix = fake_backend.options["output_prefix"]
    assert prefix.startswith(str(tmp_path) + "/partial-") and prefix.endswith("-")


def test_output_csv_file_names(fake_backend, fake_core, tmp_path, capsys):
    prefix = str(tmp_path / "out" / "exp_")
    bench = make_bench(output_csv=True, output_prefix=prefix)
    r0 = bench()
    r1 = bench()
    names = sorted(os.listdir(tmp_path / "out"))
    assert bench._kprof_tag == "bench_support.make_bench._locals_.bench"
    # files carry the function's __name__ (as nsight-python's); the number counts the calls of
    # functions of that name in this process, as nsight's run id
    k = int(r0.files[0].rsplit("-", 1)[1][: -len(".csv")])
    tag = "bench"
    assert names == sorted([
        f"exp_profiled_data-{tag}-{k}.csv", f"exp_processed_data-{tag}-{k}.csv",
        f"exp_profiled_data-{tag}-{k + 1}.csv", f"exp_processed_data-{tag}-{k + 1}.csv",
    ])
    assert r1.files[0].endswith(f"-{k + 1}.csv")
    with open(r0.files[1], newline="") as f:
        rows = list(csv.reader(f))
    assert rows[0] == NSIGHT_ORDER + KPROF_EXTRA
    assert len(rows) == 5
    with open(r0.files[0], newline="") as f:
        assert next(csv.reader(f)) == RAW_ORDER
    # a second function with the same __name__ in another scope does not collide
    other = make_bench(output_csv=True, output_prefix=prefix)
    r2 = other()
    assert len(os.listdir(tmp_path / "out")) == 6  # re-decorated: numbering continues, no overwrite
    assert r2.files[0].endswith(f"-{k + 2}.csv")


def test_output_csv_names_files_by_the_function_name_and_leaves_no_partial_files(fake_backend, fake_core, tmp_path):
    def big(n):
        with kprof.annotate("a"):
            pass

    big.__module__ = "__main__"
    big.__qualname__ = "big"
    bench = kprof.kernel(configs=[1], output_csv=True, output_prefix=str(tmp_path) + "/", thermal_mode="off")(big)
    # What the engine leaves while it runs: the per-configuration raw CSV and its sidecar.
    real_run = fake_backend.run_benchmark

    def run_and_leave_partials(name, func, configs, options, progress):
        for suffix in ("raw.csv", "raw.env.json"):
            with open(f"{options['output_prefix']}{name}-{suffix}", "w") as f:
                f.write("x")
        return real_run(name, func, configs, options, progress)

    fake_backend.run_benchmark = run_and_leave_partials
    res = bench()
    names = sorted(os.listdir(tmp_path))
    assert not [n for n in names if "partial" in n], names
    assert os.path.basename(res.files[0]).startswith("profiled_data-big-"), names
    assert not [n for n in names if "main__" in n], names


def test_output_csv_default_dir_and_info_messages(fake_backend, fake_core, capsys):
    @kprof.kernel(configs=[1], output_csv=True, verbosity=kprof.VerbosityLevel.INFO, thermal_mode="off")
    def g(n):
        with kprof.annotate("a"):
            pass

    res = g()
    err = capsys.readouterr().err
    assert all(os.path.exists(p) for p in res.files)
    assert os.path.basename(os.path.dirname(res.files[0])).startswith("kprof_")
    assert f"kprof: wrote {res.files[0]}" in err and "1/1 runs" in err


def test_no_thermal_note_now_that_the_guard_is_active(fake_backend, fake_core, capsys):
    @kprof.kernel(configs=[1], verbosity=kprof.VerbosityLevel.INFO)
    def h(n):
        pass

    h()
    assert "has no effect yet" not in capsys.readouterr().err
    assert fake_backend.options["thermal_mode"] == "auto" and fake_backend.options["thermal_wait"] is None


def test_save(fake_backend, fake_core, tmp_path):
    res = make_bench()()
    path = res.save(tmp_path / "p.csv")
    text = open(path).read()
    assert text.splitlines()[0].split(",") == NSIGHT_ORDER + KPROF_EXTRA
    back = pd.read_csv(path)
    assert list(back.AvgValue) == pytest.approx(list(res.to_dataframe().AvgValue))
    # .json: kprof's JSON result file, read back by kprof.load.
    json_path = res.save(tmp_path / "p.json")
    assert list(kprof.load(json_path).to_dataframe().AvgValue) == pytest.approx(list(res.to_dataframe().AvgValue))
    with pytest.raises(ConfigError, match="unknown file type '.txt'; use a .csv or .json path"):
        res.save(tmp_path / "p.txt")


def test_repr_and_html(fake_backend, fake_core):
    res = make_bench(normalize_against="base")()
    text = repr(res)
    lines = text.splitlines()
    assert lines[0] == "ProfileResults 'bench' (4 rows)"
    assert lines[1].split() == ["Annotation", "Metric", "n", "dtype", "AvgValue", "CI95", "RSD%", "NumRuns",
                                "Unit", "Normalized", "Stable"]
    assert "gpu__time_duration.sum" in lines[3] and "1024" in lines[3]
    html = res._repr_html_()
    assert html.startswith("<div><b>ProfileResults</b> bench") and "<table>" in html and "<td>impl</td>" in html
    assert len(res) == 4


def test_to_polars(fake_backend, fake_core):
    res = make_bench()()
    try:
        import polars  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="to_polars\\(\\) needs polars: pip install polars"):
            res.to_polars()
    else:  # pragma: no cover - polars is not installed in CI
        df = res.to_polars()
        assert df.columns == NSIGHT_ORDER + KPROF_EXTRA


def test_to_dataframe_returns_a_new_frame(fake_backend, fake_core):
    res = make_bench()()
    a = res.to_dataframe()
    a["AvgValue"] = 0.0
    assert (res.to_dataframe().AvgValue > 0).all()
    assert res.to_dict()["Annotation"][0] == "base"


def test_progress_counts_runs(fake_backend, fake_core):
    from kprof.progress import ProgressReporter

    stream = io.StringIO()
    p = ProgressReporter("mm", n_configs=2, runs=3, verbosity=kprof.VerbosityLevel.INFO, stream=stream, mode="lines")
    for i in (0, 1, 0, 1, 0, 1):
        p.advance(i)
    p.close()
    out = stream.getvalue().splitlines()
    assert out[-1].startswith("kprof mm [####################] 6/6 runs, 2/2 configs, elapsed ")
    assert out[-1].endswith("ETA done")


def test_progress_tty_and_silent():
    from kprof.progress import ProgressReporter

    t = [0.0]
    stream = io.StringIO()
    p = ProgressReporter("mm", 1, 4, stream=stream, mode="tty", clock=lambda: t[0])
    t[0] = 1.0
    p.advance(0)
    assert stream.getvalue().startswith("\rkprof mm [#####---------------] 1/4 runs, 1/1 configs, elapsed 1.0s, ETA 3.0s")
    p.info("hello")
    p.debug("hidden at INFO")
    p.close()
    assert "hello\n" in stream.getvalue() and "hidden" not in stream.getvalue()
    assert stream.getvalue().endswith("\n")

    quiet = io.StringIO()
    p = ProgressReporter("mm", 1, 4, verbosity=kprof.VerbosityLevel.SILENT, stream=quiet)
    assert p.mode == "silent"
    p.advance(0)
    p.info("x")
    p.close()
    assert quiet.getvalue() == ""

    dbg = io.StringIO()
    p = ProgressReporter("mm", 1, 1, verbosity=kprof.VerbosityLevel.DEBUG, stream=dbg)
    assert p.mode == "lines"  # StringIO is not a TTY
    p.debug("config 0")
    assert "config 0\n" in dbg.getvalue()


def test_progress_notebook_detection(monkeypatch):
    import builtins

    from kprof.progress import in_notebook

    assert in_notebook() is False

    class ZMQInteractiveShell:
        pass

    monkeypatch.setattr(builtins, "get_ipython", lambda: ZMQInteractiveShell(), raising=False)
    assert in_notebook() is True


def test_param_value_conversion():
    pv = _core.param_value
    assert pv(3) == ("int", 3)
    assert pv(True) == ("bool", True)
    assert pv(2.5) == ("float", 2.5)
    assert pv("fp16") == ("str", "fp16")
    assert pv(np.int32(7)) == ("int", 7)
    assert pv(np.float32(0.5)) == ("float", 0.5)
    assert pv(np.bool_(False)) == ("bool", False)
    assert pv(2 ** 70) == ("str", str(2 ** 70))
    assert pv((1, 2)) == ("str", "(1, 2)")
    assert pv(None) == ("str", "None")
    assert _core.convert_config([("n", 4), ("dt", np.float64(1.0))]) == [("n", 4), ("dt", 1.0)]
    with pytest.raises(TypeError, match="a config must be a sequence of \\(name, value\\) tuples"):
        _core.convert_config([["n", 4]])


def test_cli_version(capfd):
    assert _core.cli_main(["kprof", "--version"]) == 0
    assert capfd.readouterr().out == f"kprof {kprof.__version__}\n"
    assert _core.cli_main(["kprof"]) == 2  # no subcommand: usage on stderr
    assert "Usage" in capfd.readouterr().err


def test_version_carries_the_git_revision():
    from importlib.metadata import version

    v = kprof.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+(\+g[0-9a-f]{4,40})?", v), v
    assert v.split("+")[0] == version("kprof")
    repo = os.path.join(os.path.dirname(__file__), "..", "..")
    try:
        rev = subprocess.run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    except OSError:
        pytest.skip("git is not installed")
    if rev.returncode != 0 or os.environ.get("KPROF_GIT_REV"):
        pytest.skip("not a git checkout, or KPROF_GIT_REV overrides the revision")
    assert v.endswith("+g" + rev.stdout.strip()), (v, rev.stdout)


def test_cli_searches_the_folders_python_gives_it(tmp_path, capfd, monkeypatch):
    monkeypatch.delenv("KPROF_INJECT_PATH", raising=False)
    lib = tmp_path / "libkprof_inject.so"
    lib.write_bytes(b"")
    _core.cli_main(["kprof", "doctor"], [str(tmp_path / "nothing-here"), str(tmp_path)])
    out = capfd.readouterr().out
    assert f"kprof run: injection library {os.path.realpath(lib)}" in out, out


def test_inject_search_dirs_are_the_package_then_the_environment():
    from kprof import cli

    package = os.path.dirname(os.path.abspath(cli.__file__))
    # sys.prefix is the virtual environment, not the folder of the interpreter it links to.
    assert cli.inject_search_dirs() == [
        os.path.join(package, "lib"),
        os.path.join(sys.prefix, "bin"),
        os.path.join(sys.prefix, "lib"),
    ]


def test_console_script_finds_the_packaged_injection_library():
    exe = os.path.join(os.path.dirname(sys.executable), "kprof")
    packaged = os.path.join(os.path.dirname(os.path.abspath(kprof.__file__)), "lib", "libkprof_inject.so")
    if not os.path.exists(exe) or not os.path.exists(packaged):
        pytest.skip("needs the wheel from scripts/build-wheel.sh installed (it ships kprof/lib/libkprof_inject.so)")
    env = {k: v for k, v in os.environ.items() if k != "KPROF_INJECT_PATH"}
    done = subprocess.run([exe, "doctor"], capture_output=True, text=True, env=env)
    assert f"kprof run: injection library {os.path.realpath(packaged)}" in done.stdout, done.stdout


def test_console_script():
    exe = os.path.join(os.path.dirname(sys.executable), "kprof")
    if not os.path.exists(exe):
        pytest.skip("kprof console script not installed (run pytest against `pip install .`)")
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"kprof {kprof.__version__}"
    # The same CLI as the Rust binary: summarize an nsight-python raw CSV.
    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures", "nsight-python-csv-handwritten", "profiled_data-matmul-0.csv")
    done = subprocess.run([exe, "summarize", fixture], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "AvgValue" in done.stdout and "gpu__time_duration.sum" in done.stdout
    bad = subprocess.run([exe, "summarize", "/nonexistent.csv"], capture_output=True, text=True)
    assert bad.returncode == 1 and "/nonexistent.csv" in bad.stderr


def test_cuda_events_backend_is_handed_to_the_engine(fake_backend, fake_core):
    make_bench(backend="cuda-events")()
    assert fake_backend.options["backend"] == "cuda-events"
