"""The file-safety and display review: the Python package's result files: kprof.load, save to JSON, the writer rule shared
with the CLI (missing folders created, symbolic links followed, devices written in place, failures
naming the path), the repr's RSD, the typing files, the tutorial without torch."""

from __future__ import annotations

import importlib.resources
import os
import subprocess
import sys

import pytest

import kprof
from bench_support import make_bench
from kprof.results import _fmt_pct


HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")


def _same_table(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for name in ("Annotation", "Metric", "NumRuns"):
        assert a[name] == b[name], name
    for x, y in zip(a["AvgValue"], b["AvgValue"]):
        assert x == pytest.approx(y, rel=1e-12)


def test_save_json_and_load_it_back(fake_backend, tmp_path):
    res = make_bench()()
    path = res.save(tmp_path / "out" / "r.json")  # the folder is created
    back = kprof.load(path)
    assert isinstance(back, kprof.ProfileResults)
    assert back.params == res.params and back.benchmark == res.benchmark
    _same_table(back.to_dict(), res.to_dict())


def test_load_a_raw_csv_and_a_normalised_json(fake_backend, tmp_path):
    raw_csv = os.path.join(FIXTURES, "nsight-python-csv-handwritten", "profiled_data-matmul-0.csv")
    res = kprof.load(raw_csv)
    assert res.params == ["n", "dtype"] and len(res) > 0
    normalised = make_bench(normalize_against="base")()
    path = normalised.save(str(tmp_path / "n.json"))
    back = kprof.load(path)
    _same_table(back.to_dict(), normalised.to_dict())
    assert set(back.to_dict()["Normalized"]) == set(normalised.to_dict()["Normalized"])


def test_load_refuses_a_processed_table_and_names_missing_files(tmp_path):
    with pytest.raises(kprof.ConfigError, match="processed table"):
        kprof.load(os.path.join(FIXTURES, "nsight-python-csv-handwritten", "processed_data-matmul-0.csv"))
    with pytest.raises(OSError, match="nope.csv"):
        kprof.load(tmp_path / "nope.csv")


def test_python_writers_create_folders_follow_links_and_name_failures(fake_backend, tmp_path):
    res = make_bench()()
    deep = tmp_path / "a" / "b" / "p.csv"
    assert res.save(deep) == str(deep) and deep.is_file()
    target = tmp_path / "target.csv"
    target.write_text("old")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    res.save(link)
    assert link.is_symlink() and target.read_text().startswith("Annotation,")
    res.plot(str(tmp_path / "plots" / "x.svg"))
    assert (tmp_path / "plots" / "x.svg").is_file()
    if os.path.exists("/dev/full"):
        # The writer behind save/plot/report: a full device is an error naming it, not replaced.
        with pytest.raises(OSError, match="/dev/full.*No space left"):
            kprof._core.write_file("/dev/full", b"x")
        assert not os.path.isfile("/dev/full")


def test_csv_files_come_from_the_one_writer_of_kprof_core(fake_backend, tmp_path, capfd):
    """The raw and processed CSVs of the decorator are kprof-core's (the engine's, the CLI's): the
    raw file puts extra columns before the parameters (nsight-python's layout), and `kprof
    summarize` of that raw file writes the very bytes ``save(".csv")`` wrote."""
    ticks = iter(range(1000, 10**6))
    res = make_bench(
        output_csv=True,
        output_prefix=str(tmp_path / "run_"),
        info_collectors=[("driver", lambda: "580.65", "once"), ("tick", lambda *c: next(ticks), "run")],
    )()
    raw_path = res.files[0]
    with open(raw_path, "rb") as f:
        raw_bytes = f.read()
    header = raw_bytes.split(b"\n", 1)[0].decode()
    assert header.split(",") == [*kprof._core.NSIGHT_RAW_COLUMNS, "driver", "tick", "n", "dtype", "Benchmark", "Run"]
    assert b"\r\n" not in raw_bytes
    mine = tmp_path / "python.csv"
    res.save(mine)
    cli = tmp_path / "cli.csv"
    code = kprof._core.cli_main(["kprof", "summarize", raw_path, "--params", "n,dtype", "-o", str(cli)])
    capfd.readouterr()
    assert code == 0
    assert mine.read_bytes() == cli.read_bytes()
    # The processed file has the collectors' aggregates before CI95_Lower, as nsight-python.
    head = mine.read_text().splitlines()[0].split(",")
    assert head.index("driver") < head.index("tick_Avg") < head.index("CI95_Lower")
    assert res.files[1] != str(mine) and open(res.files[1], "rb").read() == mine.read_bytes()


def test_save_refuses_unknown_extensions(fake_backend, tmp_path):
    with pytest.raises(kprof.ConfigError, match=".csv or .json"):
        make_bench()().save(tmp_path / "x.txt")


def test_repr_rsd_has_two_decimals(fake_backend):
    assert _fmt_pct(1.952) == "1.95" and _fmt_pct(2.0) == "2.00"
    assert _fmt_pct(float("nan")) == "NaN"
    text = repr(make_bench()())
    assert "RSD%" in text


def test_the_package_is_typed():
    files = importlib.resources.files("kprof")
    assert files.joinpath("py.typed").is_file()
    stub = files.joinpath("_core.pyi")
    assert stub.is_file()
    text = stub.read_text()
    for name in dir(kprof._core):
        if not name.startswith("__"):
            assert name in text, f"_core.{name} missing from _core.pyi"


def test_kernel_help_documents_nsight_options():
    doc = kprof.analyze.kernel.__doc__
    for option in ("configs", "runs", "metrics", "derive_metric", "normalize_against", "ignore_kernel_list",
                   "combine_kernel_metrics", "clock_control", "cache_control", "output_prefix", "output_csv",
                   "info_collectors", "verbosity", "thermal_mode"):
        assert f"``{option}``" in doc, option


def test_tutorial_without_torch_says_what_to_install():
    try:
        import torch  # noqa: F401

        pytest.skip("torch is installed")
    except ModuleNotFoundError:
        pass
    tutorial = os.path.join(HERE, "..", "..", "examples", "tutorial.py")
    p = subprocess.run([sys.executable, tutorial], capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "Traceback" not in p.stderr and "pip install torch" in p.stderr, p.stderr


def test_the_pip_cli_searches_this_environments_site_packages(monkeypatch, capsys):
    import kprof.cli

    monkeypatch.delenv("KPROF_PYTHON_SITE_PACKAGES", raising=False)
    assert kprof.cli.main(["kprof", "--version"]) == 0
    import site

    dirs = os.environ["KPROF_PYTHON_SITE_PACKAGES"].split(os.pathsep)
    assert any(d in dirs for d in site.getsitepackages()), dirs


def test_adaptive_progress_starts_at_the_policys_cap(fake_backend):
    """With adaptive stopping the bar's total is the most runs the policy may
    take (the engine then lowers it through set_total as configs stop), not runs x configs."""
    totals = []
    real = fake_backend.run_benchmark

    def spy(name, func, configs, options, progress):
        totals.append(progress.total)
        out = real(name, func, configs, options, progress)
        progress.set_total(progress.done)  # what the engine's hook does once every config stopped
        totals.append((progress.done, progress.total))
        return out

    fake_backend.run_benchmark = spy
    make_bench(target_rsd=1.0, max_runs=30)()
    assert totals[0] == 2 * 30
    done, total = totals[1]
    assert done == total == 2 * 4
    totals.clear()
    make_bench()()
    assert totals[0] == 2 * 4


def _durations_raw(sources: list) -> dict:
    n = len(sources)
    return {
        "Annotation": ["a"] * n,
        "Value": [100.0 + i for i in range(n)],
        "Metric": ["gpu__time_duration.sum"] * n,
        "Kernel": ["k"] * n,
        "GPU": ["H200"] * n,
        "Host": ["vm"] * n,
        "ComputeClock": [None] * n,
        "MemoryClock": [None] * n,
        "Unit": ["ns"] * n,
        "n": [1] * n,
        "Benchmark": ["b"] * n,
        "Run": list(range(n)),
        "DurationSource": sources,
    }


def test_printed_tables_say_which_durations_they_hold(capsys):
    counters = kprof.ProfileResults(_durations_raw(["counters", "counters"]), ["n"])
    line = counters.durations_line()
    assert line.startswith("durations: Nsight Compute's gpu__time_duration"), line
    assert line.endswith('use duration_source="records"'), line
    assert repr(counters).splitlines()[1] == line
    records = kprof.ProfileResults(_durations_raw(["records"]), ["n"])
    assert records.durations_line().startswith("durations: CUPTI kernel records")
    assert records.durations_line().endswith('use duration_source="auto"')
    records._print_data(None)
    assert capsys.readouterr().out.splitlines()[0] == records.durations_line()
    # No duration rows: no line.
    other = _durations_raw(["counters"])
    other["Metric"] = ["dram__bytes_read.sum"]
    assert kprof.ProfileResults(other, ["n"]).durations_line() is None
