"""kprof.annotate: nesting, duplicate names in one run, failures, backend hooks."""

from __future__ import annotations

import math
import re
import threading

import pytest

import kprof
from kprof import AnnotationError

SILENT = kprof.VerbosityLevel.SILENT


def test_context_manager_calls_backend_hooks(fake_backend):
    with kprof.annotate("a"):
        pass
    assert fake_backend.events == [("enter", "a"), ("exit", "a", False)]


def test_decorator_form(fake_backend):
    @kprof.annotate("mm")
    def mm(x):
        return x * 2

    assert mm(3) == 6
    assert mm(4) == 8  # outside a profiled run a name may repeat
    assert fake_backend.events == [("enter", "mm"), ("exit", "mm", False)] * 2


def test_nesting_is_rejected(fake_backend):
    with pytest.raises(AnnotationError, match=re.escape(
        "annotate('inner') is nested inside annotate('outer'); annotations cannot be nested in one thread"
    )) as info:
        with kprof.annotate("outer"):
            with kprof.annotate("inner"):
                pass
    assert isinstance(info.value, ValueError)  # nsight-python raises ValueError
    assert fake_backend.events == [("enter", "outer"), ("exit", "outer", True)]
    with kprof.annotate("again"):  # the state was reset
        pass


def test_nesting_in_another_thread_is_allowed(fake_backend):
    errors = []

    def other():
        try:
            with kprof.annotate("thread"):
                pass
        except Exception as e:  # pragma: no cover
            errors.append(e)

    with kprof.annotate("main"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert errors == []


def test_bad_names():
    for bad in ("", "  ", None, 3):
        with pytest.raises(AnnotationError, match="annotate\\(\\) needs a non-empty string name"):
            kprof.annotate(bad)
    with pytest.raises(AnnotationError, match="ignore_failures must be True or False"):
        kprof.annotate("a", ignore_failures="yes")


def test_duplicate_name_in_one_run(fake_backend, fake_core):
    @kprof.kernel(configs=[1], verbosity=SILENT)
    def f(n):
        with kprof.annotate("mm"):
            pass
        with kprof.annotate("mm"):
            pass

    with pytest.raises(AnnotationError, match=re.escape(
        "annotation name 'mm' is used twice in one run; each annotation in a run needs its own name"
    )):
        f()


def test_names_are_cleared_between_runs(fake_backend, fake_core):
    @kprof.kernel(configs=[1, 2], runs=3, warmup=2, verbosity=SILENT)
    def f(n):
        with kprof.annotate("a"):
            pass
        with kprof.annotate("b"):
            pass

    df = f().raw()
    assert len(df) == 2 * 3 * 2


def test_failure_propagates_and_backend_is_told(fake_backend, fake_core):
    @kprof.kernel(configs=[1], verbosity=SILENT, warmup=0)
    def f(n):
        with kprof.annotate("boom"):
            raise KeyError("bad")

    with pytest.raises(KeyError, match="bad"):
        f()
    assert fake_backend.events[-1] == ("exit", "boom", True)


def test_ignore_failures_records_nan(fake_backend, fake_core):
    calls = {"n": 0}

    @kprof.kernel(configs=[1], runs=3, warmup=0, verbosity=SILENT)
    def f(n):
        calls["n"] += 1
        with kprof.annotate("flaky", ignore_failures=True):
            if calls["n"] == 2:
                raise RuntimeError("out of memory")
        with kprof.annotate("after"):
            pass

    with pytest.warns(RuntimeWarning, match=re.escape(
        "annotate('flaky', ignore_failures=True) swallowed RuntimeError: out of memory; this run's value is NaN"
    )):
        res = f()
    raw = res.raw()
    flaky = raw[raw.Annotation == "flaky"]
    assert [math.isnan(v) for v in flaky.Value] == [False, True, False]
    assert ("exit", "flaky", True) in fake_backend.events
    assert len(raw[raw.Annotation == "after"]) == 3  # the run went on after the swallowed failure
    df = res.to_dataframe()
    row = df[df.Annotation == "flaky"].iloc[0]
    assert row.NumRuns == 2 and row.TotalRuns == 3


def test_ignore_failures_does_not_swallow_base_exceptions(fake_backend):
    with pytest.raises(KeyboardInterrupt):
        with kprof.annotate("k", ignore_failures=True):
            raise KeyboardInterrupt
    assert fake_backend.events[-1] == ("exit", "k", True)


def test_engine_hooks_are_no_ops_outside_a_benchmark():
    from kprof import _backend

    assert type(_backend.get_backend()).__name__ == "CuptiBackend"
    with kprof.annotate("fine"):
        pass


def test_in_counter_pass_tells_the_function_its_counter_pass():
    # A backend that, like the engine with durations from the counters, calls the function again
    # after every recorded run for its counter pass.
    from conftest import FakeBackend
    from kprof import _backend

    class CounterPassBackend(FakeBackend):
        counter = False

        def _in_counter_pass(self):
            return self.counter

        def run_benchmark(self, name, func, configs, options, progress):
            def twice(i):
                func(i)
                if self._recording is not None:
                    recording, self._recording, self.counter = self._recording, None, True
                    try:
                        func(i)
                    finally:
                        self._recording, self.counter = recording, False

            return super().run_benchmark(name, twice, configs, options, progress)

    seen = []

    def bench(n):
        seen.append(kprof.in_counter_pass())
        with kprof.annotate("r"):
            pass

    previous = _backend.set_backend(CounterPassBackend())
    try:
        kprof.analyze.kernel(configs=[1, 2], runs=2, warmup=1, verbosity=SILENT)(bench)()
    finally:
        _backend.set_backend(previous)
    # Per configuration: one warm-up call, then (timing, counter pass) per recorded run.
    assert seen == [False, False] + [False, True] * 4, seen
    assert kprof.in_counter_pass() is False, "outside a profiled call"
    # The engine's own answer outside a measured call.
    from kprof import _core

    assert _core.in_counter_pass() is False
    assert "in_counter_pass" in kprof.__all__
