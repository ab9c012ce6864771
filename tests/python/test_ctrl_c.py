"""Ctrl-C stops a benchmark of the engine (``kprof._core.run_benchmark``) promptly, with the
script's own KeyboardInterrupt, whichever Python code or engine wait it lands in.

Without a GPU the engine runs the real run loop with the ncu child's backend (``KPROF_NCU_CHILD``
set, ``KPROF_NCU_CHILD_TRACE`` so that no CUDA driver is needed): the closure, the progress
calls, the GPU's rests between long runs and the cancellation checks are the ones a GPU run goes
through. Each case runs in its own process (signals, one profiler per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

CHILD = """
import functools, json, os, signal, sys, threading, time, types
from kprof import _core

signal.signal(signal.SIGINT, signal.default_int_handler)
mode = sys.argv[1]
calls = []


class Progress:
    def advance(self, i):
        pass

    def set_total(self, n):
        if mode == "progress":
            raise KeyboardInterrupt


def func(i):
    calls.append(i)
    time.sleep(0.01)  # the engine flushes (and reports progress) every 50 ms of runs
    if mode == "raise" and len(calls) == 4:
        raise KeyboardInterrupt
    if mode == "exit" and len(calls) == 4:
        raise SystemExit(3)


progress = Progress()
if mode == "signal":
    # No Python code runs while the engine measures: the closure and the progress calls are C
    # functions (about 50 ms of work per run, which earns the GPU's rest after it), so only the
    # engine's own poll can run the SIGINT handler before the sweep ends.
    func = functools.partial(sum, range(3_000_000))
    progress = types.SimpleNamespace(advance=abs, set_total=abs)
    sent = {}

    def ctrl_c():
        time.sleep(1.0)
        sent["at"] = time.monotonic()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=ctrl_c, daemon=True).start()

options = {"runs": 40, "warmup": 1, "order": "sequential", "backend": "ncu", "thermal_mode": "off"}
t0 = time.monotonic()
out = {"raised": None}
try:
    _core.run_benchmark("f", func, [[("n", 1)], [("n", 2)]], options, progress)
except BaseException as e:
    out["raised"] = type(e).__name__
    out["code"] = getattr(e, "code", None)
end = time.monotonic()
out["calls"] = len(calls)
out["elapsed"] = end - t0
if mode == "signal":
    out["after_signal"] = end - sent["at"] if "at" in sent else None
print("RESULT " + json.dumps(out))
"""


def _run(tmp_path, mode: str) -> dict:
    script = tmp_path / "child.py"
    script.write_text(textwrap.dedent(CHILD))
    env = dict(os.environ, KPROF_NCU_CHILD="f#0", KPROF_NCU_CHILD_TRACE=str(tmp_path / "trace.txt"))
    p = subprocess.run([sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    return json.loads(lines[-1][len("RESULT ") :])


def test_a_keyboard_interrupt_raised_by_the_function_ends_the_sweep_and_propagates(tmp_path):
    out = _run(tmp_path, "raise")
    assert out["raised"] == "KeyboardInterrupt", out
    # The warm-up, three runs, then the interrupted one: nothing after it.
    assert out["calls"] == 4, out


def test_system_exit_raised_by_the_function_ends_the_sweep_with_its_code(tmp_path):
    out = _run(tmp_path, "exit")
    assert (out["raised"], out["code"]) == ("SystemExit", 3), out
    assert out["calls"] == 4, out


def test_a_keyboard_interrupt_in_the_progress_report_is_not_swallowed(tmp_path):
    out = _run(tmp_path, "progress")
    assert out["raised"] == "KeyboardInterrupt", out
    # The first report comes with the first flush of recorded runs (50 ms), long before 82 calls.
    assert out["calls"] < 30, out


def test_ctrl_c_while_only_the_engine_runs_stops_it_within_a_second(tmp_path):
    out = _run(tmp_path, "signal")
    assert out["raised"] == "KeyboardInterrupt", out
    assert out["after_signal"] is not None and out["after_signal"] < 1.0, out
    # 82 runs of about 50 ms each, with as much rest after each, would take 8 s.
    assert out["elapsed"] < 4.0, out
