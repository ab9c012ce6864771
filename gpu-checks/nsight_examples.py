#!/usr/bin/env python3
"""Runs nsight-python's examples, unchanged, on kprof, and records what each one did.

    python gpu-checks/nsight_examples.py EXAMPLES_DIR OUT_DIR [--mode each,together,pytest|all]
                                         [--only 00,07] [--timeout S] [--backend MODULE:FACTORY]

EXAMPLES_DIR holds nsight-python's ``NN_*.py`` examples (its ``examples/`` folder, read only: the
examples run from a scratch copy, since some write beside themselves). ``import nsight`` gives
kprof through kprof's opt-in alias (``kprof.nsight_alias``, replacing a real nsight in these
processes only). Modes:

* ``each``: one process per example, as ``python NN_x.py`` in the examples' folder;
* ``together``: all examples in one process, imported as ``examples.NN_x`` and ``main()`` called
  in turn, as nsight-python's ``test_examples.py`` does;
* ``pytest``: nsight-python's ``test_examples.py`` itself, run by pytest in one process (its tests
  of skipped examples deselected; skipped when pytest is not installed).

An example whose imports are missing (``triton``, ``cuda.tile``, ``cuda.core``, ``torch``, ...) is
skipped with that reason. OUT_DIR gets, per mode and example, ``stdout.txt``/``stderr.txt``, the
files the example wrote (``files/``: its plots and CSV files) and every table it produced
(``tables/<function>-<k>.processed.csv`` and ``.raw.csv``), and ``summary.json`` and
``summary.md``: outcome, reason, wall time. Exit status 1 when an example failed.

``--backend MODULE:FACTORY`` installs ``FACTORY()`` as kprof's measurement backend in the
example processes (the offline tests' recorded backend; never on the GPU machine).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import importlib.util
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
EXAMPLE = re.compile(r"^\d\d_\w+\.py$")
IGNORED = ("__pycache__",)
MODES = ("each", "together", "pytest")


# -- the examples and what they import ----------------------------------------------------


def discover(examples: Path, only: list[str] | None = None) -> list[Path]:
    """The ``NN_*.py`` files of ``examples``, in order; ``only`` keeps those whose name or number is listed."""
    found = sorted(p for p in examples.iterdir() if EXAMPLE.match(p.name))
    if only:
        found = [p for p in found if p.stem in only or p.name[:2] in only]
    return found


def imports(path: Path) -> list[str]:
    """The modules an example needs, other than the standard library and nsight: those it imports,
    and matplotlib where it passes a ``plot_callback`` (a matplotlib Figure; kprof draws its plots
    without matplotlib otherwise)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
        elif isinstance(node, ast.keyword) and node.arg == "plot_callback":
            names.append("matplotlib")
    keep = []
    for name in names:
        top = name.split(".")[0]
        if top == "nsight" or top in sys.stdlib_module_names or name in keep:
            continue
        keep.append(name)
    return keep


def missing_module(modules: list[str]) -> str | None:
    """The first of ``modules`` this interpreter cannot import, else None."""
    for name in modules:
        try:
            if importlib.util.find_spec(name) is None:
                return name
        except (ImportError, ValueError):
            return name
    return None


# -- inside an example process --------------------------------------------------------------


def prepare(backend: str | None, tables: Path) -> dict[str, Any]:
    """The alias, the backend, and a hook that writes every table a benchmark returns."""
    import kprof.analyze
    import kprof.nsight_alias

    note = {"kprof": kprof.__version__, "replaced_nsight": None}
    if not kprof.nsight_alias.installed():
        real = kprof.nsight_alias.real_nsight()
        note["replaced_nsight"] = real
        kprof.nsight_alias.install(replace=real is not None)
    if backend:
        from kprof import _backend

        module, factory = backend.split(":")
        _backend.set_backend(getattr(importlib.import_module(module), factory)())
    profile = kprof.analyze._profile
    counts: dict[str, int] = {}

    def recorded(func: Any, sig: Any, *args: Any) -> Any:
        results = profile(func, sig, *args)
        k = counts[sig.func_name] = counts.get(sig.func_name, -1) + 1
        tables.mkdir(parents=True, exist_ok=True)
        results.to_dataframe().to_csv(tables / f"{sig.func_name}-{k}.processed.csv", index=False)
        results.raw().to_csv(tables / f"{sig.func_name}-{k}.raw.csv", index=False)
        return results

    kprof.analyze._profile = recorded
    return note


def error_text(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()


def child_one(script: Path, out: Path, backend: str | None) -> int:
    """Runs one example as ``__main__`` (cwd: its folder); writes ``result.json`` in ``out``."""
    import runpy

    result: dict[str, Any] = prepare(backend, out / "tables")
    sys.argv = [str(script)]
    sys.path.insert(0, str(script.parent))
    start = time.perf_counter()
    try:
        runpy.run_path(str(script), run_name="__main__")
        result.update(outcome="ok")
    except (Exception, SystemExit) as e:  # noqa: BLE001  (recorded; the status says it)
        traceback.print_exc()
        result.update(outcome="failed", reason=error_text(e))
    result["main_s"] = round(time.perf_counter() - start, 3)
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return 0 if result["outcome"] == "ok" else 1


def child_together(work: Path, out: Path, names: list[str], backend: str | None) -> int:
    """Imports ``examples.<name>`` from ``work`` and calls ``main()``, for every name, in one process."""
    tables = out / "tables-pending"
    note = prepare(backend, tables)
    sys.path.insert(0, str(work))
    folder = work / "examples"
    status = 0
    results = []
    for name in names:
        dest = out / name
        dest.mkdir(parents=True, exist_ok=True)
        before = snapshot(folder)
        start = time.perf_counter()
        with (
            open(dest / "stdout.txt", "w") as so,
            open(dest / "stderr.txt", "w") as se,
            contextlib.redirect_stdout(so),
            contextlib.redirect_stderr(se),
        ):
            try:
                importlib.import_module(f"examples.{name}").main()
                entry = {"example": name, "outcome": "ok"}
            except (Exception, SystemExit) as e:  # noqa: BLE001  (recorded; the status says it)
                traceback.print_exc()
                entry = {"example": name, "outcome": "failed", "reason": error_text(e)}
                status = 1
        entry["main_s"] = round(time.perf_counter() - start, 3)
        collect(folder, before, dest / "files")
        if tables.exists():
            shutil.move(str(tables), str(dest / "tables"))
        results.append({**note, **entry})
        (out / "results.json").write_text(json.dumps(results, indent=1))
    return status


# -- the driver ----------------------------------------------------------------------------


def snapshot(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if not any(part in IGNORED for part in p.parts)}


def collect(folder: Path, before: set[Path], dest: Path) -> list[str]:
    """Moves the files that appeared in ``folder`` since ``before`` into ``dest``; their names."""
    moved = []
    for p in sorted(snapshot(folder) - before):
        if p.is_file():
            target = dest / p.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(p), str(target))
            moved.append(str(p.relative_to(folder)))
    return moved


def scratch_copy(examples: Path, tmp: Path) -> Path:
    """A writable copy of the examples folder as ``tmp/examples`` (a package, as in nsight-python)."""
    dest = tmp / "examples"
    shutil.copytree(examples, dest, ignore=shutil.ignore_patterns(*IGNORED))
    for p in [dest, *dest.rglob("*")]:
        p.chmod(p.stat().st_mode | 0o200)
    (dest / "__init__.py").touch()
    return dest


def child_command(*args: str, backend: str | None) -> list[str]:
    return [sys.executable, str(HERE), *args, *(["--backend", backend] if backend else [])]


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


def run_each(examples: list[Path], out: Path, args: argparse.Namespace) -> list[dict]:
    rows = []
    for script in examples:
        dest = out / "each" / script.stem
        dest.mkdir(parents=True, exist_ok=True)
        row: dict[str, Any] = {"example": script.stem, "mode": "each"}
        with tempfile.TemporaryDirectory(prefix="nsight-examples-") as tmp:
            work = scratch_copy(script.parent, Path(tmp))
            before = snapshot(work)
            cmd = child_command("--child-one", str(work / script.name), str(dest), backend=args.backend)
            start = time.perf_counter()
            with open(dest / "stdout.txt", "w") as so, open(dest / "stderr.txt", "w") as se:
                try:
                    rc = subprocess.run(
                        cmd, check=False, cwd=work, stdout=so, stderr=se, timeout=args.timeout
                    ).returncode
                except subprocess.TimeoutExpired:
                    rc = None
            row["wall_s"] = round(time.perf_counter() - start, 3)
            collect(work, before, dest / "files")
        result = dest / "result.json"
        if rc is None:
            row.update(outcome="failed", reason=f"timed out after {args.timeout} s")
        elif result.exists():
            row.update(json.loads(result.read_text()))
            result.unlink()
        else:
            row.update(outcome="failed", reason=f"the process ended with status {rc} before reporting")
        row["files"], row["tables"] = listing(dest / "files"), listing(dest / "tables")
        rows.append(row)
        print(f"each      {script.stem:32} {row['outcome']:8} {row['wall_s']:8.2f} s  {row.get('reason', '')}")
    return rows


def run_together(examples: list[Path], out: Path, args: argparse.Namespace) -> list[dict]:
    dest = out / "together"
    dest.mkdir(parents=True, exist_ok=True)
    names = [p.stem for p in examples]
    if not names:
        return []
    with tempfile.TemporaryDirectory(prefix="nsight-examples-") as tmp:
        scratch_copy(examples[0].parent, Path(tmp))
        cmd = child_command("--child-together", tmp, str(dest), *names, backend=args.backend)
        start = time.perf_counter()
        with open(dest / "process-stdout.txt", "w") as so, open(dest / "process-stderr.txt", "w") as se:
            try:
                rc = subprocess.run(
                    cmd,
                    check=False,
                    cwd=Path(tmp) / "examples",
                    stdout=so,
                    stderr=se,
                    timeout=args.timeout * len(names),
                ).returncode
            except subprocess.TimeoutExpired:
                rc = None
        wall = round(time.perf_counter() - start, 3)
    results = dest / "results.json"
    done = {r["example"]: r for r in json.loads(results.read_text())} if results.exists() else {}
    if results.exists():
        results.unlink()
    rows = []
    for name in names:
        row = {"example": name, "mode": "together", "process_wall_s": wall, **done.get(name, {})}
        if name not in done:
            why = "timed out" if rc is None else f"the process ended with status {rc}"
            row.update(outcome="failed", reason=f"{why} before this example finished")
        row["wall_s"] = row.get("main_s")
        row["files"], row["tables"] = listing(dest / name / "files"), listing(dest / name / "tables")
        rows.append(row)
        print(f"together  {name:32} {row['outcome']:8} {row['wall_s'] or 0:8.2f} s  {row.get('reason', '')}")
    return rows


def run_pytest(examples: list[Path], out: Path, args: argparse.Namespace) -> list[dict]:
    """nsight-python's ``test_examples.py`` in one pytest process; one row per example from its JUnit report."""
    names = [p.stem for p in examples]
    if not names:
        return []
    if missing_module(["pytest"]):
        return [
            {"example": n, "mode": "pytest", "outcome": "skipped", "reason": "needs pytest (not installed)"}
            for n in names
        ]
    dest = out / "pytest"
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nsight-examples-") as tmp:
        work = scratch_copy(examples[0].parent, Path(tmp))
        cmd = child_command("--child-pytest", tmp, str(dest), *names, backend=args.backend)
        start = time.perf_counter()
        with open(dest / "stdout.txt", "w") as so, open(dest / "stderr.txt", "w") as se:
            try:
                subprocess.run(cmd, check=False, cwd=work, stdout=so, stderr=se, timeout=args.timeout * len(names))
            except subprocess.TimeoutExpired:
                pass
        wall = round(time.perf_counter() - start, 3)
    cases = junit_cases(dest / "junit.xml")
    rows = []
    for name in names:
        row = {"example": name, "mode": "pytest", "process_wall_s": wall, "files": [], "tables": []}
        row.update(cases.get(name) or {"outcome": "failed", "reason": "not in pytest's report"})
        rows.append(row)
        print(f"pytest    {name:32} {row['outcome']:8} {row.get('wall_s') or 0:8.2f} s  {row.get('reason', '')}")
    return rows


def junit_cases(path: Path) -> dict[str, dict]:
    """Outcome and time per example (``test_NN_x`` -> ``NN_x``) from pytest's JUnit XML report."""
    import xml.etree.ElementTree as ET

    if not path.exists():
        return {}
    cases = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "").removeprefix("test_")
        problem = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        entry: dict[str, Any] = {"wall_s": round(float(case.get("time", 0)), 3), "outcome": "ok"}
        if problem is not None:
            outcome = "skipped" if problem.tag == "skipped" else "failed"
            entry.update(outcome=outcome, reason=(problem.get("message") or problem.tag).strip()[:500])
        cases[name] = entry
    return cases


def child_pytest(work: Path, out: Path, names: list[str], backend: str | None) -> int:
    """pytest on ``work/examples/test_examples.py``, selecting the tests of the examples in ``names``."""
    import pytest

    prepare(backend, out / "tables")
    test_file = work / "examples" / "test_examples.py"
    selected = " or ".join(f"test_{n}" for n in names)
    argv = ["-q", "-p", "no:cacheprovider", f"--junitxml={out / 'junit.xml'}", "-k", selected, str(test_file)]
    return int(pytest.main(argv))


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in ("kprof", "torch", "triton", "pandas", "matplotlib", "cuda.tile", "cuda.core"):
        try:
            out[name] = getattr(importlib.import_module(name), "__version__", "installed")
        except Exception:  # noqa: BLE001  (absent or broken: recorded as absent)
            out[name] = None
    return out


def write_summary(out: Path, rows: list[dict], args: argparse.Namespace) -> None:
    """``summary.json`` and ``summary.md``; rows of modes not run this time are kept from an earlier
    summary in ``out`` (the modes may run in separate calls)."""
    previous = out / "summary.json"
    if previous.exists():
        kept = [r for r in json.loads(previous.read_text()).get("rows", []) if r["mode"] not in args.mode]
        rows = sorted(kept + rows, key=lambda r: (MODES.index(r["mode"]), r["example"]))
    summary = {"examples_dir": str(args.examples), "backend": args.backend, "versions": versions(), "rows": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    lines = ["| example | mode | outcome | wall s | reason / files |", "|---|---|---|---|---|"]
    for r in rows:
        wall = "" if r.get("wall_s") is None else f"{r['wall_s']:.2f}"
        what = r.get("reason") or ", ".join(r.get("files", []))
        lines.append(f"| {r['example']} | {r['mode']} | {r['outcome']} | {wall} | {what} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")


def modes(text: str) -> list[str]:
    """``--mode``: a comma-separated list of :data:`MODES`, or ``all``."""
    chosen = list(MODES) if text == "all" else [m for m in text.split(",") if m]
    unknown = [m for m in chosen if m not in MODES]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"modes are {', '.join(MODES)} or all, got {text!r}")
    return [m for m in MODES if m in chosen]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("examples", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--mode", type=modes, default=list(MODES), help="each, together, pytest, or all (comma-separated)")
    p.add_argument("--only", type=lambda s: s.split(","), default=None)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per example")
    p.add_argument("--backend", default=None, help="MODULE:FACTORY (offline tests only)")
    args = p.parse_args(argv)
    args.examples = args.examples.resolve()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    runnable = []
    for script in discover(args.examples, args.only):
        absent = missing_module(imports(script))
        if absent is None:
            runnable.append(script)
            continue
        for mode in args.mode:
            rows.append(
                {
                    "example": script.stem,
                    "mode": mode,
                    "outcome": "skipped",
                    "reason": f"needs {absent} (not installed)",
                }
            )
        print(f"skipped   {script.stem:32} needs {absent} (not installed)")
    runners = {"each": run_each, "together": run_together, "pytest": run_pytest}
    for mode in args.mode:
        rows += runners[mode](runnable, out, args)
    write_summary(out, rows, args)
    return 1 if any(r["outcome"] == "failed" for r in rows) else 0


def child_main(argv: list[str]) -> int:
    backend = None
    if "--backend" in argv:
        i = argv.index("--backend")
        backend, argv = argv[i + 1], argv[:i] + argv[i + 2 :]
    if argv[0] == "--child-one":
        return child_one(Path(argv[1]), Path(argv[2]), backend)
    if argv[0] == "--child-pytest":
        return child_pytest(Path(argv[1]), Path(argv[2]), argv[3:], backend)
    return child_together(Path(argv[1]), Path(argv[2]), argv[3:], backend)


if __name__ == "__main__":
    if sys.argv[1:2] in (["--child-one"], ["--child-together"], ["--child-pytest"]):
        sys.exit(child_main(sys.argv[1:]))
    sys.exit(main())
