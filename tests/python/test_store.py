"""The results store from Python: ``@kprof.analyze.kernel(store=...)`` and
``ProfileResults.save_to_store``, read back through the ``kprof`` CLI (history, export)."""

from __future__ import annotations

import csv
import io
import os

import pytest

import kprof
from kprof import BackendError, ConfigError, _core

SILENT = kprof.VerbosityLevel.SILENT


def make_bench(**kw):
    @kprof.analyze.kernel(configs=[(1024,), (4096,)], runs=4, verbosity=SILENT, **kw)
    def bench(n):
        with kprof.annotate("impl"):
            pass

    return bench


def cli(*args):
    """Runs the kprof CLI in-process; returns (exit code, stdout)."""
    out = io.StringIO()
    # cli_main prints from Rust, to the process's stdout: capture it with a pipe-free file.
    import tempfile

    with tempfile.TemporaryFile(mode="w+") as f:
        fd = os.dup(1)
        try:
            os.dup2(f.fileno(), 1)
            code = _core.cli_main(["kprof", *args])
        finally:
            os.dup2(fd, 1)
            os.close(fd)
        f.seek(0)
        out.write(f.read())
    return code, out.getvalue()


def test_kernel_store_keyword_stores_every_call(fake_backend, fake_core, tmp_path):
    db = tmp_path / "kprof.db"
    bench = make_bench(store=str(db))
    first = bench()
    second = bench()
    assert first.store_run_id == 1 and second.store_run_id == 2
    code, out = cli("store", "export", "--db", str(db))
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 4  # 2 runs x 2 configs
    assert {r["Config"] for r in rows} == {"n=1024", "n=4096"}
    assert rows[0]["Benchmark"] == "bench" and rows[0]["Host"] == "fakehost"
    assert float(rows[0]["Mean"]) == pytest.approx(1001.5)  # the fake values 1000 + runs 0..3


def test_save_to_store_tags_commit_and_history(fake_backend, fake_core, tmp_path):
    db = tmp_path / "kprof.db"
    results = make_bench()()
    assert results.save_to_store(db, tags={"gpu": "fake", "ci": 1}, commit="abcdef1234") == 1
    assert results.save_to_store(db, commit="bcdef12345") == 2
    code, out = cli("history", "--db", str(db), "--series", "n=4096")
    assert code == 0, out
    assert "abcdef1234" in out and "bcdef12345" in out and "+0.00%" in out
    code, out = cli("store", "export", "--db", str(db), "--raw", "--series", "n=1024")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [float(r["Value"]) for r in rows[:4]] == [1000.0, 1001.0, 1002.0, 1003.0]
    assert rows[0]["Tags"] == "ci=1;gpu=fake"


def test_store_default_path_and_errors(fake_backend, fake_core, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KPROF_STORE", str(tmp_path / "env.db"))
    results = make_bench()()
    results.save_to_store()
    assert (tmp_path / "env.db").exists()
    with pytest.raises(ConfigError, match="commit"):
        results.save_to_store(commit="not-a-sha")
    with pytest.raises(ConfigError, match="tags"):
        results.save_to_store(tags=["gpu=h200"])
    with pytest.raises(ConfigError, match="store must be"):
        make_bench(store=42)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database at all, but long enough to look like a header" * 4)
    before = junk.read_bytes()
    with pytest.raises(BackendError, match="not an SQLite database"):
        results.save_to_store(junk)
    assert junk.read_bytes() == before
