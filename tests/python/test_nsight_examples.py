"""nsight-python's own examples, unchanged, against kprof's API, without a GPU.

The examples are read from ``../shared/peers/nsight-python/examples`` beside the repository
(skipped when absent). Two checks:

* every ``nsight.*`` name they use resolves in kprof, and every call of one accepts the
  positional and keyword arguments the example passes (parsed with ``ast``);
* every example runs end to end through ``gpu-checks/nsight_examples.py`` (the GPU machine's
  runner), one process each and all in one process, with kprof's real processing, tables, CSV
  files and plots, measured by ``nsight_examples_backend.py`` and with stand-ins for torch,
  Triton, cuTile and cuda.core (``nsight_examples_stubs/``).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import kprof
import pandas as pd
import pytest
from nsight_examples_checks import problems

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
EXAMPLES = REPO.parent / "shared" / "peers" / "nsight-python" / "examples"
RUNNER = REPO / "gpu-checks" / "nsight_examples.py"
STUBS = HERE / "nsight_examples_stubs"
BACKEND = "nsight_examples_backend:ExamplesBackend"

pytestmark = pytest.mark.skipif(
    not EXAMPLES.is_dir(), reason=f"nsight-python's examples are not beside the repository ({EXAMPLES})"
)


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("[0-9][0-9]_*.py")) if EXAMPLES.is_dir() else []


# -- the API the examples use -----------------------------------------------------------------


def _chain(node: ast.AST) -> list[str] | None:
    """``nsight.a.b`` as ``["a", "b"]`` (``[]`` for ``nsight`` itself); None for anything else."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "nsight":
        return parts[::-1]
    return None


def _resolve(parts: list[str]) -> Any:
    obj: Any = kprof
    for i, p in enumerate(parts):
        if not hasattr(obj, p):
            raise AttributeError(f"kprof has no {'.'.join(['nsight', *parts[: i + 1]])}")
        obj = getattr(obj, p)
    return obj


def api_problems(source: str, filename: str = "<example>") -> tuple[list[str], int]:
    """What of kprof's API an example's source uses but kprof lacks or refuses; and how many
    names and calls were checked."""
    tree = ast.parse(source, filename=filename)
    problems: list[str] = []
    checked = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(getattr(node, "ctx", None), ast.Store):
            parts = _chain(node)
            if parts is None or not parts:
                continue
            checked += 1
            try:
                _resolve(parts)
            except AttributeError as e:
                problems.append(f"line {node.lineno}: {e}")
        if isinstance(node, ast.Call):
            parts = _chain(node.func)
            if not parts:
                continue
            checked += 1
            problems += _call_problems(node, parts)
    return sorted(set(problems)), checked


def _call_problems(node: ast.Call, parts: list[str]) -> list[str]:
    try:
        target = _resolve(parts)
        sig = inspect.signature(target)
    except (AttributeError, TypeError, ValueError):
        return []  # reported as a missing name, or a class without a signature
    name = "nsight." + ".".join(parts)
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        return []
    try:
        sig.bind_partial(*[None] * len(node.args), **{k.arg: None for k in node.keywords})
    except TypeError as e:
        return [f"line {node.lineno}: {name}(...) is refused by kprof: {e}"]
    return []


@pytest.mark.parametrize("path", example_files(), ids=lambda p: p.stem)
def test_every_nsight_name_and_argument_an_example_uses_exists_in_kprof(path: Path) -> None:
    problems, checked = api_problems(path.read_text(encoding="utf-8"), str(path))
    assert checked > 0, f"{path.name} uses no nsight API?"
    assert not problems, "\n".join(problems)


def test_the_api_check_reports_what_kprof_lacks() -> None:
    source = """
import nsight
@nsight.analyze.plot("x.png", no_such_plot_option=1)
@nsight.analyze.kernel(configs=[1], no_such_kernel_option=2)
def f(n):
    with nsight.annotate("a", "b", "c"):
        nsight.no_such_function()
print(nsight.CollectionScope.NO_SUCH_SCOPE)
"""
    problems, _ = api_problems(source)
    text = "\n".join(problems)
    for what in (
        "no_such_plot_option",
        "no_such_kernel_option",
        "nsight.annotate",
        "nsight.no_such_function",
        "nsight.CollectionScope.NO_SUCH_SCOPE",
    ):
        assert what in text, text


def test_there_are_nsight_pythons_fourteen_examples() -> None:
    assert [p.name[:2] for p in example_files()] == [f"{i:02d}" for i in range(14)]


# -- the examples, run end to end ----------------------------------------------------------


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("nsight-examples")
    env = dict(os.environ)
    paths = [str(STUBS), str(HERE), *filter(None, [env.get("PYTHONPATH")])]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["MPLBACKEND"] = "Agg"
    cmd = [sys.executable, str(RUNNER), str(EXAMPLES), str(out), "--backend", BACKEND, "--timeout", "300"]
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=1800)
    summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    return out, summary, proc


def _rows(summary: dict, mode: str) -> dict[str, dict]:
    return {r["example"]: r for r in summary.get("rows", []) if r["mode"] == mode}


@pytest.mark.parametrize("mode", ["each", "together", "pytest"])
def test_every_example_runs_unchanged(offline_run, mode: str) -> None:
    out, summary, proc = offline_run
    rows = _rows(summary, mode)
    assert sorted(rows) == [p.stem for p in example_files()], proc.stdout + proc.stderr
    bad = {
        name: r.get("reason") or _tail(out / mode / name / "stderr.txt")
        for name, r in rows.items()
        if r["outcome"] != "ok" and not _skipped_for_matplotlib(r)
    }
    assert not bad, json.dumps(bad, indent=1)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _tail(path: Path) -> str:
    return path.read_text()[-2000:] if path.exists() else f"(no {path.name})"


def _skipped_for_matplotlib(row: dict) -> bool:
    """plot_callback needs matplotlib (kprof draws without it); the only skip allowed here, and
    only where matplotlib is not installed (scripts/test-python.sh installs it)."""
    absent = importlib.util.find_spec("matplotlib") is None
    return absent and row["outcome"] == "skipped" and "matplotlib" in row.get("reason", "")


def _plot_files(path: Path) -> list[str]:
    """The image files an example's ``@nsight.analyze.plot`` decorators name."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and _chain(node.func) == ["analyze", "plot"]:
            args = [*node.args[:1], *(k.value for k in node.keywords if k.arg == "filename")]
            names += [a.value for a in args if isinstance(a, ast.Constant)]
    return names


@pytest.mark.parametrize("mode", ["each", "together"])
def test_the_examples_write_their_plots_and_tables(offline_run, mode: str) -> None:
    out, summary, _ = offline_run
    for path in example_files():
        row = _rows(summary, mode)[path.stem]
        if _skipped_for_matplotlib(row):
            continue
        for image in _plot_files(path):
            assert image in row["files"], (path.stem, image, row["files"])
            assert (out / mode / path.stem / "files" / image).stat().st_size > 1000
        processed = [t for t in row["tables"] if t.endswith(".processed.csv")]
        assert processed, (path.stem, row["tables"])
        for t in processed:
            df = pd.read_csv(out / mode / path.stem / "tables" / t)
            assert len(df) and {"Annotation", "Metric", "AvgValue", "NumRuns", "Unit"} <= set(df.columns)


def _table(out: Path, mode: str, example: str, name: str) -> pd.DataFrame:
    return pd.read_csv(out / mode / example / "tables" / name)


def test_output_csv_writes_nsights_two_files(offline_run) -> None:
    out, summary, _ = offline_run
    files = _rows(summary, "each")["11_output_csv"]["files"]
    for kind in ("profiled_data", "processed_data"):
        name = f"example11_{kind}-analyze_memory_ops_with_csv-0.csv"
        assert name in files, files
        df = pd.read_csv(out / "each" / "11_output_csv" / "files" / name)
        assert set(df.Metric) == {
            "smsp__sass_inst_executed_op_shared_ld.sum",
            "smsp__sass_inst_executed_op_shared_st.sum",
        }
        assert set(df.Annotation) == {"matmul-operator", "torch-matmul"}
    stdout = (out / "each" / "11_output_csv" / "stdout.txt").read_text()
    assert "File: example11_processed_data-analyze_memory_ops_with_csv-0.csv" in stdout


def test_derived_metrics_of_several_metrics_and_the_sm_count(offline_run) -> None:
    out, _, _ = offline_run
    df = _table(out, "each", "09_advanced_metric_custom", "benchmark_avg_insts-0.processed.csv")
    sms = df[df.Metric == "launch__sm_count"]
    assert len(sms) == 4 and (sms.AvgValue == 132).all()
    ld = df[df.Metric == "smsp__sass_inst_executed_op_shared_ld.sum"].set_index(["Annotation", "n"]).AvgValue
    per_sm = df[df.Metric == "ld_insts_per_sm"].set_index(["Annotation", "n"]).AvgValue
    assert (per_sm - ld / 132).abs().max() < 1e-6
    assert {"st_insts_per_sm", "insts_total", "insts_per_sm"} <= set(df.Metric)


def test_info_collectors_at_every_scope(offline_run) -> None:
    out, _, _ = offline_run
    df = _table(out, "each", "13_custom_info_collectors", "benchmark_with_custom_info-0.processed.csv")
    for column in (
        "driver_version",
        "cuda_version",
        "run_timestamp",
        "matrix_elements_Avg",
        "exec_order_Min",
        "ann_info",
    ):
        assert column in df.columns, list(df.columns)
    assert str(df.driver_version.iloc[0]) == "13.0"
    assert set(df.ann_info) == {f"{a}_n{n}" for a, n in zip(df.Annotation, df.n)}
    assert (df.matrix_elements_Avg == df.n * df.n).all()
    files = _rows(json.loads((out / "summary.json").read_text()), "each")["13_custom_info_collectors"]["files"]
    assert "13_custom_info_collectors.png" in files


def test_normalize_against_then_speedup(offline_run) -> None:
    out, _, _ = offline_run
    df = _table(out, "each", "07_triton_minimal", "benchmark_triton_variants-0.processed.csv")
    speedup = df[df.Metric == "speedup"]
    assert (speedup[speedup.Annotation == "torch"].AvgValue == 1.0).all()
    # The backend times the second region at twice the first: Triton's speedup is 0.5.
    assert (speedup[speedup.Annotation == "triton"].AvgValue.sub(0.5).abs() < 1e-3).all()
    assert set(speedup.Normalized) == {"torch"}


def test_the_gpu_recordings_checks_pass_on_the_offline_run_and_can_fail(offline_run, tmp_path) -> None:
    out, summary, _ = offline_run
    assert problems(out) == []
    broken = dict(summary)
    broken["rows"] = [
        {**r, "outcome": "failed", "reason": "x"} if r["example"].startswith("03") else r for r in summary["rows"]
    ]
    (tmp_path / "summary.json").write_text(json.dumps(broken))
    found = problems(tmp_path)
    assert any(p.startswith("each/03_custom_metrics: failed") for p in found), found
