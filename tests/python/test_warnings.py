"""Warnings a user sees: only what they should act on, each attributed to their own line.

A session of several benchmarks replayed from the H200 recording of the tutorial's sgemm sweep
(``replay_backend.py``) warns about nothing; the engine's warnings of a benchmark (delivered as
``kprof._core.run_benchmark`` delivers them, through ``kprof._warn.engine_warnings``) and kprof's
own warnings name the user's call, never a line of kprof (whose source line under the warning
would be ``table = backend.run_benchmark(...)``). That the engine says an expected NaN energy once
per process is checked in ``crates/kprof/src/runner/tests/conditions.rs``.
"""

from __future__ import annotations

import os
import warnings

import pytest

import kprof
from kprof import _backend, _warn
from replay_backend import ReplayBackend

SILENT = kprof.VerbosityLevel.SILENT


class EngineWarnings(ReplayBackend):
    """The replay, with engine warnings delivered after each benchmark as the engine's door does."""

    def __init__(self, messages):
        super().__init__()
        self.messages = messages

    def run_benchmark(self, name, func, configs, options, progress):
        table = super().run_benchmark(name, func, configs, options, progress)
        _warn.engine_warnings(self.messages)
        return table


@pytest.fixture
def replayed():
    def install(backend=None):
        previous = _backend.set_backend(backend or ReplayBackend())
        installed.append(previous)

    installed = []
    yield install
    for previous in installed:
        _backend.set_backend(previous)


def _sgemm(**options):
    @kprof.kernel(configs=[512, 1024, 2048], runs=5, thermal_mode="off", verbosity=SILENT, **options)
    def sgemm(n: int) -> None:
        with kprof.annotate("matmul"):
            pass

    return sgemm


def test_a_replayed_session_of_several_benchmarks_warns_about_nothing(replayed, tmp_path):
    replayed()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        for step in range(4):
            df = _sgemm(output_csv=True, output_prefix=f"{tmp_path}/step{step}/")().to_dataframe()
            assert len(df) == 3
    assert [str(w.message) for w in seen] == []


def test_engine_warnings_name_the_users_call_once_per_benchmark(replayed):
    replayed(EngineWarnings(["energy: 3 run(s) shorter than the update period ...", "thermal guard: waited 1.0 s"]))
    bench = _sgemm()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        bench()
        bench()
    assert len(seen) == 2, [str(w.message) for w in seen]
    for w in seen:
        assert w.category is RuntimeWarning
        assert os.path.abspath(w.filename) == os.path.abspath(__file__), w.filename
        assert str(w.message).startswith("kprof: energy: 3 run(s)") and "thermal guard" in str(w.message)


def test_kprofs_own_warnings_name_the_users_call(replayed):
    replayed()

    @kprof.kernel(configs=[512], runs=2, thermal_mode="off", verbosity=SILENT)
    def returns(n: int) -> int:
        with kprof.annotate("matmul"):
            pass
        return 1

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        returns()
    assert [os.path.basename(w.filename) for w in seen] == [os.path.basename(__file__)], [
        (w.filename, str(w.message)) for w in seen
    ]
