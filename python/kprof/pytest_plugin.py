"""kprof's pytest plugin (the ``pytest11`` entry point ``kprof``): GPU benchmarks as tests.

The ``gpu_bench`` fixture measures a callable with kprof's engine and any option of
:func:`kprof.kernel` (``runs``, ``target_rsd``, ``cache_control``, ``metrics``, ...); it asserts
nothing by itself and returns the :class:`kprof.ProfileResults`::

    @pytest.mark.parametrize("n", [1024, 4096])
    def test_matmul(gpu_bench, n):
        a = torch.randn(n, n, device="cuda")
        gpu_bench(lambda: a @ a, name="matmul", runs=20)

    def test_step(gpu_bench):
        def step():
            prepare()                          # not timed
            with gpu_bench.region("forward"):  # only the with block is timed
                model(x)
        gpu_bench(step, region=None)

The benchmark is the test (its node id without the parameters); the parameters of a parametrized
test become its configurations, so ``test_matmul[1024]`` and ``test_matmul[4096]`` are two
configurations of one benchmark. ``@pytest.mark.kprof(runs=..., ...)`` sets a test's defaults.

At the end of the run a table of every benchmark is printed. Command-line options:

* ``--kprof-store DB``: keep every benchmark's results in the results store, with the git
  commit of the current directory (``kprof history``);
* ``--kprof-compare best|last|<commit>|<tag>``: compare each benchmark with the store
  (``--kprof-store`` or ``$KPROF_STORE``) by ``kprof compare --against`` itself (its test, its
  threshold, its verdicts) before storing; a significant regression fails the run (exit 1);
* ``--kprof-json FILE``, ``--kprof-markdown FILE``: a summary of the results and comparisons
  (the Markdown for ``$GITHUB_STEP_SUMMARY`` or a pull-request comment).

Without a usable GPU (the CUPTI engine cannot load) every benchmark is skipped with one reason.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

#: The plugin's defaults for a benchmark (overridden by the marker and the call).
DEFAULT_OPTIONS: dict[str, Any] = {"runs": 10, "verbosity": 0}
SKIP_PREFIX = "kprof: no usable GPU"
_NAME = object()  # gpu_bench's region: the benchmark's name


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kprof", "GPU benchmarks with kprof (the gpu_bench fixture)")
    group.addoption("--kprof-store", metavar="DB", help="store every benchmark's results in this results store")
    group.addoption(
        "--kprof-compare",
        metavar="WHICH",
        help="compare each benchmark with the store (best, last, a commit or a tag); "
        "a significant regression fails the run",
    )
    group.addoption("--kprof-json", metavar="FILE", help="write the benchmarks' summary as JSON")
    group.addoption("--kprof-markdown", metavar="FILE", help="write the benchmarks' summary as Markdown")
    group.addoption(
        "--kprof-compare-option",
        action="append",
        default=[],
        metavar="ARG",
        help="an argument for kprof compare (e.g. --kprof-compare-option=--threshold=5%%); repeatable",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kprof(**options): default kprof options of the test's gpu_bench calls")
    config.stash[_SESSION] = Session()


@dataclass
class Benchmark:
    """The results of one benchmark: every call of every test item with that node id."""

    name: str
    results: list[Any] = field(default_factory=list)
    nodeids: list[str] = field(default_factory=list)


@dataclass
class Session:
    """What the plugin collects during a test run."""

    benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    unavailable: str | None = None
    checked: bool = False
    summary: dict[str, Any] = field(default_factory=dict)
    regressions: int = 0

    def gpu_reason(self) -> str | None:
        """Why benchmarks cannot run here (None: they can), asked once per run."""
        if not self.checked:
            self.checked = True
            self.unavailable = _unusable_reason()
        return self.unavailable


_SESSION = pytest.StashKey[Session]()


def _unusable_reason() -> str | None:
    """None when the installed backend can measure; else one line saying why not."""
    from kprof import _backend, _core

    if not isinstance(_backend.get_backend(), _backend.CuptiBackend):
        return None  # a test or replay backend measures without a GPU
    try:
        available, why = _core.engine_available()
    except Exception as e:  # the extension itself cannot tell: say why
        return f"{SKIP_PREFIX}: {type(e).__name__}: {e}"
    return None if available else f"{SKIP_PREFIX}: {one_line(why)}"


def one_line(why: str) -> str:
    """The engine's multi-line reason on one line: its sentences, without the indented list of
    the places searched."""
    lines = [line.strip().rstrip(":") for line in why.splitlines() if line.strip() and not line.startswith((" ", "\t"))]
    return "; ".join(lines)


def _config_value(v: Any) -> Any:
    """A test parameter as a configuration value: numbers, strings and booleans as they are,
    anything else by its text."""
    return v if isinstance(v, (bool, int, float, str)) or v is None else str(v)


class GpuBench:
    """The ``gpu_bench`` fixture: ``gpu_bench(fn, *args, name=..., region=..., **options)``."""

    def __init__(self, request: pytest.FixtureRequest, session: Session):
        self._request = request
        self._session = session
        node = request.node
        self.benchmark = node.nodeid.split("[", 1)[0]
        callspec = getattr(node, "callspec", None)
        self.params: dict[str, Any] = {k: _config_value(v) for k, v in (callspec.params if callspec else {}).items()}
        marker = node.get_closest_marker("kprof")
        self.defaults = {**DEFAULT_OPTIONS, **(marker.kwargs if marker else {})}
        #: The results of this test's calls, in order.
        self.results: list[Any] = []

    @staticmethod
    def region(name: str):
        """A ``with`` block whose GPU work is timed (``kprof.annotate``), inside a callable given
        with ``region=None``."""
        import kprof

        return kprof.annotate(name)

    def __call__(self, fn: Callable, *args: Any, name: str | None = None, region: Any = _NAME, **options: Any):
        """Measures ``fn(*args)`` with kprof (options as :func:`kprof.kernel`'s) and returns the
        results. The call is timed as one region named ``region`` (default: ``name``, else the
        callable's name); ``region=None`` times the callable's own ``gpu_bench.region`` blocks."""
        import kprof

        reason = self._session.gpu_reason()
        if reason is not None:
            pytest.skip(reason)
        label = name or getattr(fn, "__name__", "call")
        label = "call" if label == "<lambda>" else label
        timed = label if region is _NAME else region

        def call(*_config: Any) -> None:
            if timed is None:
                fn(*args)
            else:
                with kprof.annotate(timed):
                    fn(*args)

        names = list(self.params)
        call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names]
        )
        call.__name__ = self.benchmark
        opts = {**self.defaults, **options}
        if names:
            opts["configs"] = [tuple(self.params[n] for n in names)]
        results = kprof.kernel(**opts)(call)()
        self.results.append(results)
        bench = self._session.benchmarks.setdefault(self.benchmark, Benchmark(self.benchmark))
        bench.results.append(results)
        if self._request.node.nodeid not in bench.nodeids:
            bench.nodeids.append(self._request.node.nodeid)
        return results


@pytest.fixture
def gpu_bench(request: pytest.FixtureRequest) -> GpuBench:
    """Benchmarks a callable with kprof: ``gpu_bench(fn, *args, name=..., runs=10, ...)``."""
    return GpuBench(request, request.config.stash[_SESSION])


def merged(bench: Benchmark):
    """One :class:`kprof.ProfileResults` of every call of a benchmark whose tables have the same
    columns (the configurations of a parametrized test); a list, one per kind of table."""
    from kprof import ProfileResults

    groups: dict[tuple, list[Any]] = {}
    for r in bench.results:
        groups.setdefault((tuple(r._raw), tuple(r.params)), []).append(r)
    out = []
    for (columns, params), rs in groups.items():
        raw = {c: [v for r in rs for v in r._raw[c]] for c in columns}
        m = ProfileResults(raw, list(params), benchmark=bench.name)
        m.fingerprint = getattr(rs[0], "fingerprint", None)  # type: ignore[attr-defined]
        out.append(m)
    return out


def _kprof_cli(args: list[str], cwd: str) -> subprocess.CompletedProcess:
    """The ``kprof`` command of this interpreter's kprof (compare's own rules and exit codes)."""
    return subprocess.run(
        [sys.executable, "-m", "kprof.cli", *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def _file_name(name: str, i: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") + (f"-{i}" if i else "") + ".json"


def _compare(results, which: str, db: str | None, extra: list[str], markdown: bool, tmp: str, i: int) -> dict:
    """``kprof compare --against WHICH`` of one benchmark's results: its rows, exit code and
    message (and its Markdown when asked)."""
    path = os.path.join(tmp, _file_name(results.benchmark, i))
    results.save(path)
    # The store as `kprof compare` would find it from here (the command runs in `tmp`).
    store = os.path.abspath(db or os.environ.get("KPROF_STORE") or "kprof.db")
    base = ["compare", "--against", which, "--db", store, *extra, os.path.basename(path)]
    done = _kprof_cli([*base, "--format", "json"], tmp)
    out: dict[str, Any] = {"against": which, "exit_code": done.returncode, "message": done.stderr.strip()}
    try:
        out["rows"] = json.loads(done.stdout) if done.returncode in (0, 1) else []
    except json.JSONDecodeError:
        out["rows"] = []
    if markdown and done.returncode in (0, 1):
        out["markdown"] = _kprof_cli([*base, "--format", "markdown"], tmp).stdout
    return out


def _table_rows(results) -> list[dict[str, Any]]:
    """The processed rows of a results object, as JSON-ready dicts."""
    cols = results.to_dict()
    n = len(cols.get("Annotation", []))
    rows = []
    for i in range(n):
        row = {}
        for k, v in cols.items():
            x = v[i]
            if isinstance(x, float) and x != x:
                x = None
            row[k] = x if isinstance(x, (str, int, float, bool)) or x is None else str(x)
        rows.append(row)
    return rows


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Compares (before storing), stores, writes the summaries and fails the run on a regression."""
    state = session.config.stash.get(_SESSION, None)
    if state is None or not state.benchmarks:
        return
    opt = session.config.getoption
    which, db = opt("--kprof-compare"), opt("--kprof-store")
    entries = []
    with tempfile.TemporaryDirectory(prefix="kprof-pytest-") as tmp:
        for bench in state.benchmarks.values():
            for i, results in enumerate(merged(bench)):
                entry: dict[str, Any] = {
                    "benchmark": bench.name,
                    "tests": bench.nodeids,
                    "params": results.params,
                    "rows": _table_rows(results),
                }
                entry["text"] = repr(results)
                if which:
                    entry["compare"] = _compare(
                        results, which, db, opt("--kprof-compare-option"), bool(opt("--kprof-markdown")), tmp, i
                    )
                    if entry["compare"]["exit_code"] == 1:
                        state.regressions += 1
                if db:
                    entry["store_run_id"] = results.save_to_store(db, tags={"runner": "pytest"})
                entries.append(entry)
    state.summary = {"benchmarks": entries, "regressions": state.regressions}
    if opt("--kprof-json"):
        _write(opt("--kprof-json"), json.dumps(_without_text(state.summary), indent=2) + "\n")
    if opt("--kprof-markdown"):
        _write(opt("--kprof-markdown"), markdown_summary(entries))
    if state.regressions and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _without_text(summary: dict) -> dict:
    return {
        **summary,
        "benchmarks": [
            {k: ({kk: vv for kk, vv in v.items() if kk != "markdown"} if k == "compare" else v)
             for k, v in e.items() if k != "text"}
            for e in summary["benchmarks"]
        ],
    }


def _write(path: str, text: str) -> None:
    """Through kprof's one writer (atomic replacement, folders created)."""
    from kprof import _core

    _core.write_file(os.fspath(path), text.encode())


def _md_cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_summary(entries: list[dict]) -> str:
    """The Markdown summary: each benchmark's comparison as ``kprof compare --format markdown``
    prints it, or its results table when it was not compared."""
    regressions = sum(1 for e in entries if e.get("compare", {}).get("exit_code") == 1)
    head = f"## kprof: {len(entries)} benchmark(s)"
    if any("compare" in e for e in entries):
        head += f", {regressions} with a significant regression" if regressions else ", no regression"
    out = [head, ""]
    for e in entries:
        c = e.get("compare")
        if c and c.get("markdown"):
            out += [f"**{_md_cell(e['benchmark'])}**", "", c["markdown"].rstrip("\n"), ""]
            continue
        out += [f"**{_md_cell(e['benchmark'])}**", ""]
        if c:
            out += [f"(not compared: {_md_cell(c['message'] or 'exit code ' + str(c['exit_code']))})", ""]
        out += _results_markdown(e["rows"], e["params"]) + [""]
    return "\n".join(out)


def _results_markdown(rows: list[dict], params: list[str]) -> list[str]:
    if not rows:
        return ["(no rows)"]
    header = ["Annotation", *params, "Metric", "Mean", "CI95", "RSD %", "Runs"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        unit = f" {r.get('Unit')}" if r.get("Unit") else ""
        ci = f"[{_num(r.get('CI95_Lower'))}, {_num(r.get('CI95_Upper'))}]"
        cells = [r.get("Annotation"), *[r.get(p) for p in params], r.get("Metric"), _num(r.get("AvgValue")) + unit,
                 ci, _num(r.get("RelativeStdDevPct")), r.get("NumRuns")]
        lines.append("| " + " | ".join(_md_cell(c) for c in cells) + " |")
    return lines


def _num(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """The benchmarks' tables and comparisons at the end of the run."""
    state = config.stash.get(_SESSION, None)
    if state is None:
        return
    tr = terminalreporter
    if not state.benchmarks:
        if state.unavailable:
            tr.write_sep("-", "kprof")
            tr.write_line(f"benchmarks skipped: {state.unavailable}")
        return
    tr.write_sep("-", "kprof benchmarks")
    for e in state.summary.get("benchmarks", []):
        tr.write_line(e["text"])
        c = e.get("compare")
        if c is None:
            continue
        if c["exit_code"] not in (0, 1):
            tr.write_line(f"  not compared with {c['against']}: {c['message']}")
            continue
        for r in c["rows"]:
            change = r.get("change_pct")
            change = "-" if change is None else f"{change:+.2f}%"
            series = " / ".join(x for x in (r["annotation"], r["config"], r["metric"]) if x)
            tr.write_line(f"  vs {c['against']}: {series}: {change} {r['verdict']}", red=r["verdict"] == "regression")
    if state.regressions:
        tr.write_line(
            f"kprof: {state.regressions} benchmark(s) with a significant regression "
            f"against {config.getoption('--kprof-compare')}",
            red=True,
        )
