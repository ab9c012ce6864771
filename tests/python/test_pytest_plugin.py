"""kprof's pytest plugin (kprof/pytest_plugin.py) through real pytest runs (``pytester``): the
benchmarks replay the H200 sgemm recording (replay_backend.py), slowed by a factor that each
inner run sets, so the store, the gate and the summaries are checked without a GPU."""

from __future__ import annotations

import importlib.metadata
import json
import os

import pytest

from kprof import _core

pytest_plugins = ("pytester",)

HERE = os.path.dirname(os.path.abspath(__file__))

# Installed from the wheel, the entry point loads the plugin; from a source tree, -p does.
_ENTRY = any(ep.value == "kprof.pytest_plugin" for ep in importlib.metadata.entry_points(group="pytest11"))
PLUGIN = [] if _ENTRY else ["-p", "kprof.pytest_plugin"]

CONFTEST = """
import sys
sys.path.insert(0, {here!r})
from kprof import _backend
from replay_backend import ReplayBackend

class Slowed(ReplayBackend):
    def run_benchmark(self, name, func, configs, options, progress):
        cols = super().run_benchmark(name, func, configs, options, progress)
        cols["Value"] = [v * {factor} for v in cols["Value"]]
        return cols

_previous = []

def pytest_configure(config):
    _previous.append(_backend.set_backend(Slowed()))

def pytest_unconfigure(config):
    _backend.set_backend(_previous.pop())
"""

BENCH = """
import pytest

@pytest.mark.parametrize("n", [512, 1024, 2048])
def test_sgemm(gpu_bench, n):
    results = gpu_bench(lambda: None, name="matmul", runs=10)
    assert len(results) == 1

@pytest.mark.kprof(runs=4)
def test_plain(gpu_bench):
    results = gpu_bench(lambda: None)
    assert results.to_dict()["NumRuns"] == [4]
"""


def run(pytester: pytest.Pytester, factor: float, *args: str) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST.format(here=HERE, factor=factor))
    pytester.makepyfile(test_bench=BENCH)
    return pytester.runpytest(*PLUGIN, *args)


def test_benchmarks_report_a_table_and_parameters_become_configurations(pytester):
    result = run(pytester, 1.0, "--kprof-json", "summary.json")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*kprof benchmarks*", "*ProfileResults 'test_bench.py::test_sgemm' (3 rows)*"])
    summary = json.loads((pytester.path / "summary.json").read_text())
    names = [b["benchmark"] for b in summary["benchmarks"]]
    assert names == ["test_bench.py::test_sgemm", "test_bench.py::test_plain"]
    sgemm = summary["benchmarks"][0]
    assert [r["n"] for r in sgemm["rows"]] == [512, 1024, 2048]
    assert {r["Annotation"] for r in sgemm["rows"]} == {"matmul"}
    assert len(sgemm["tests"]) == 3 and "compare" not in sgemm
    assert summary["regressions"] == 0


def test_store_then_compare_fails_the_run_on_a_regression(pytester):
    db = "kprof.db"  # relative to the test run's folder
    first = run(pytester, 1.0, "--kprof-store", db)
    first.assert_outcomes(passed=4)
    assert first.ret == 0

    slow = run(
        pytester, 1.1, "--kprof-store", db, "--kprof-compare", "best",
        "--kprof-json", "slow.json", "--kprof-markdown", "slow.md",
    )
    slow.assert_outcomes(passed=4)  # no test failed, the run did
    assert slow.ret == 1
    slow.stdout.fnmatch_lines(["*vs best: matmul / n=512 / gpu__time_duration.sum: +10.00% regression*"])
    summary = json.loads((pytester.path / "slow.json").read_text())
    sgemm = summary["benchmarks"][0]
    assert sgemm["compare"]["exit_code"] == 1
    assert {r["verdict"] for r in sgemm["compare"]["rows"]} == {"regression"}
    assert summary["regressions"] == 1
    md = (pytester.path / "slow.md").read_text()
    assert md.startswith("## kprof: 2 benchmark(s), 1 with a significant regression")
    assert "### kprof compare: regression" in md and "| 🔴 |" in md
    assert "**test_bench.py::test_plain**" in md

    # Back to the recorded speed: against the last stored run (the slow one) an improvement.
    back = run(pytester, 1.0, "--kprof-store", db, "--kprof-compare", "last")
    assert back.ret == 0, back.stdout.str()
    back.stdout.fnmatch_lines(["*vs last: matmul / n=1024 / gpu__time_duration.sum: -9.09% improvement*"])
    # Every run was stored: three per benchmark.
    export = ["kprof", "store", "export", "--db", str(pytester.path / db), "-o", str(pytester.path / "runs.csv")]
    assert _core.cli_main(export) == 0
    stored = (pytester.path / "runs.csv").read_text().splitlines()[1:]
    assert len({line.split(",")[0] for line in stored}) == 6


def test_the_default_store_is_kprof_db_of_the_run_folder(pytester, monkeypatch):
    monkeypatch.delenv("KPROF_STORE", raising=False)
    assert run(pytester, 1.0, "--kprof-store", "kprof.db").ret == 0
    result = run(pytester, 1.1, "--kprof-compare", "last")  # no --kprof-store: ./kprof.db
    assert result.ret == 1, result.stdout.str()
    assert "not compared" not in result.stdout.str()


def test_compare_threshold_is_compares_own_option(pytester):
    db = str(pytester.path / "kprof.db")
    assert run(pytester, 1.0, "--kprof-store", db).ret == 0
    result = run(pytester, 1.1, "--kprof-compare", "best", "--kprof-store", db, "--kprof-compare-option=--threshold=20%")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*vs best: matmul / n=512 / gpu__time_duration.sum: +10.00% same*"])


def test_without_a_gpu_benchmarks_are_skipped_with_one_reason(pytester):
    available, _ = _core.engine_available()
    if available:
        pytest.skip("a GPU is usable here: the skip is checked on machines without one")
    pytester.makepyfile(test_bench=BENCH)
    result = pytester.runpytest(*PLUGIN, "-rs")
    result.assert_outcomes(skipped=4)
    assert result.ret == 0
    reasons = [line for line in result.stdout.lines if line.startswith("SKIPPED")]
    assert len(reasons) == 1 and "[4]" in reasons[0], result.stdout.str()
    assert "kprof: no usable GPU:" in reasons[0]
    after = result.stdout.lines[result.stdout.lines.index(reasons[0]) + 1]
    assert not after.startswith("  "), "the reason continues on another line"
    result.stdout.fnmatch_lines(["*benchmarks skipped: kprof: no usable GPU:*"])


def test_the_engines_reason_is_put_on_one_line():
    from kprof.pytest_plugin import one_line

    why = "libcuda could not be loaded; tried 2 location(s):\n  - libcuda.so.1 -- not found\nfix: install the driver"
    assert one_line(why) == "libcuda could not be loaded; tried 2 location(s); fix: install the driver"
