"""Ctrl-C on a real sweep, on the GPU machine: how long a sweep takes to stop, and what it keeps.

The sweep is the one reported lost to Ctrl-C: ``@kprof.analyze.kernel(configs=[8192..8197],
order="sequential", thermal_mode="off", output_csv=True)`` over ``torch.randn(n, n)`` and
``a @ a`` in one annotate region, the script's own ``signal.signal(SIGINT,
signal.default_int_handler)``. It runs in a child process (its own process group, as a terminal's
foreground job); the child logs every call of the function (start and end, size, call number,
counter pass or not) and this script sends SIGINT to the child's process group when the log shows
the moment asked for:

  warmup    the first call (the first configuration's warm-up run)
  first     the first configuration's 6th timing pass
  later     a timing pass of the third configuration (the first two finished)
  counter   a counter pass of the second configuration
  rest      right after a timing pass ends (the GPU's synchronization and rest follow)
  devices   the sweep with devices="all" (worker processes), in a run of the second configuration
  kprof-run ``kprof run -- python app.py`` (matmuls in an NVTX range) after 30 of them: kprof exits
            within 1 s with the tables of what ran (KPROF names the binary; default .carry/bin/kprof)

Each case passes when the child exits within 1 s of the signal with KeyboardInterrupt, and the raw
CSV it keeps (the engine's partial file, or the scale-out caller's merged one) holds every run that
finished before the signal: a configuration finished before it has all its runs, and the one
interrupted the runs before the one in flight (whose counter pass may have ended as the signal came:
kept or not).

    python gpu-checks/ctrl_c.py OUT [--runs N] [--cases warmup,first,...]   # OUT/ctrl_c.json; exit 1 on a failure
"""

from __future__ import annotations

import csv
import glob
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

SIZES = [8192, 8193, 8194, 8195, 8196, 8197]

CHILD = r'''
import os, signal, sys, time
import torch
import kprof

signal.signal(signal.SIGINT, signal.default_int_handler)
RUNS, PREFIX, LOG, MODE = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
calls = {}


def note(*fields):
    with open(LOG, "a") as log:  # opened per line: scale-out workers get the function by value or by name
        log.write(" ".join(map(str, fields)) + "\n")


def mm(n):
    k = calls[n] = calls.get(n, 0) + 1
    counter = int(kprof.in_counter_pass())
    note("start", f"{time.monotonic():.6f}", n, k, counter, os.getpid())
    a = torch.randn(n, n, device="cuda")
    with kprof.annotate("matmul"):
        _ = a @ a
    note("end", f"{time.monotonic():.6f}", n, k, counter, os.getpid())


extra = {"devices": "all"} if MODE == "devices" else {}
sweep = kprof.analyze.kernel(configs=SIZES, runs=RUNS, order="sequential", thermal_mode="off", output_csv=True,
                             output_prefix=PREFIX, **extra)(mm)

if __name__ == "__main__":
    note("ready", f"{time.monotonic():.6f}")
    sweep()
    note("done", f"{time.monotonic():.6f}")
'''.replace("SIZES", repr(SIZES))


def events(log_path: str) -> list[tuple]:
    out = []
    if os.path.exists(log_path):
        with open(log_path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 5 and p[0] in ("start", "end") and line.endswith("\n"):
                    out.append((p[0], float(p[1]), int(p[2]), int(p[3]), int(p[4])))
    return out


def trigger(case: str, event: tuple, earlier: list[tuple]) -> bool:
    """Whether `event` (after `earlier`) is the moment of `case`."""
    kind, _, n, k, counter = event
    if case == "warmup":
        return True
    if case == "first":  # the 6th recorded run's timing pass (the 7th call without counters)
        return kind == "start" and n == SIZES[0] and counter == 0 and 1 + sum(
            1 for e in earlier if e[0] == "start" and e[2] == SIZES[0] and e[4] == 0) >= 7
    if case == "later":
        return kind == "start" and n == SIZES[2] and counter == 0 and k >= 4
    if case == "counter":
        return kind == "start" and n == SIZES[1] and counter == 1 and k >= 5
    if case == "rest":
        return kind == "end" and n == SIZES[0] and counter == 0 and k >= 6
    if case == "devices":  # a worker's run of the second configuration
        return kind == "start" and n == SIZES[1] and k >= 4
    raise ValueError(case)


def raw_rows(prefix: str) -> tuple[str | None, dict[int, int]]:
    """The raw CSV the interrupted call kept, and its duration rows per size."""
    files = [f for f in glob.glob(os.path.join(prefix, "**", "*raw*.csv"), recursive=True)
             if "profiled_data" not in os.path.basename(f)]
    if not files:
        return None, {}
    path = max(files, key=os.path.getmtime)
    counts: dict[int, int] = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("Metric") == "gpu__time_duration.sum" and row.get("n"):
                counts[int(float(row["n"]))] = counts.get(int(float(row["n"])), 0) + 1
    return path, counts


def interrupt_when(child: subprocess.Popen, moment: Callable[[], bool], deadline: float) -> tuple:
    """Sends SIGINT to `child`'s process group once `moment()` holds (polled until `deadline` on
    the monotonic clock, or the child's exit), waits for it (killed after 120 s): (when the
    signal was sent or None, when the child was gone, its stdout, its stderr)."""
    sent = None
    while child.poll() is None and time.monotonic() < deadline and sent is None:
        if moment():
            os.killpg(child.pid, signal.SIGINT)
            sent = time.monotonic()
        else:
            time.sleep(0.002)
    try:
        child.wait(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    exited = time.monotonic()
    stdout, stderr = child.communicate()
    return sent, exited, stdout, stderr


def run_case(case: str, out: str, runs: int) -> dict:
    folder = os.path.join(out, case)
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "sweep.py")
    with open(script, "w") as f:
        f.write(CHILD)
    log_path = os.path.join(folder, "calls.log")
    prefix = os.path.join(folder, "results") + os.sep
    mode = "devices" if case == "devices" else "single"
    t_start = time.monotonic()
    child = subprocess.Popen([sys.executable, script, str(runs), prefix, log_path, mode],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen = 0

    def moment_reached() -> bool:
        nonlocal seen
        ev = events(log_path)
        fire = any(trigger(case, ev[i], ev[:i]) for i in range(seen, len(ev)))
        seen = len(ev)
        return fire

    sent, exited, stdout, stderr = interrupt_when(child, moment_reached, t_start + 600)
    ev = events(log_path)
    # The child logs time.monotonic() too (one clock for the machine).
    before = [e for e in ev if sent is not None and e[1] <= sent]
    # Recorded runs whose timing pass started before the signal (the first call of a size is its
    # warm-up); all but the last finished, and the last too when its counter pass had ended.
    started = {n: max(0, sum(1 for e in before if e[0] == "start" and e[2] == n and e[4] == 0) - 1) for n in SIZES}
    path, rows = raw_rows(prefix)
    after_s = None if sent is None else exited - sent
    last = before[-1] if before else None
    checks = {
        "signal sent": sent is not None,
        "exited within 1 s": after_s is not None and after_s <= 1.0,
        "KeyboardInterrupt": "KeyboardInterrupt" in stderr and child.returncode != 0,
    }
    if case != "warmup":
        checks["raw CSV kept"] = path is not None
        # Configurations finished before the signal: all their runs. The interrupted one: its
        # finished runs (the run whose counter pass ended as the signal came may be missing).
        done = [n for n in SIZES if started[n] >= runs and any(e[2] > n for e in before)]
        current = next((n for n in reversed(SIZES) if started[n]), None)
        checks["finished configurations complete"] = all(rows.get(n, 0) == runs for n in done)
        if current is not None and current not in done and case != "devices":
            # The run in flight is dropped; one whose counter pass ended as the signal came may be kept.
            checks["interrupted configuration's finished runs kept"] = (
                started[current] - 2 <= rows.get(current, 0) <= started[current])
    return {
        "case": case,
        "ok": all(checks.values()),
        "checks": checks,
        "after_signal_s": after_s,
        "returncode": child.returncode,
        "last_call_before_signal": last,
        "runs_started_before_signal": started,
        "raw_csv": path,
        "raw_rows": rows,
        "stderr_tail": stderr.strip().splitlines()[-6:],
    }


APP = r'''
import sys, time
import torch

LOG = sys.argv[1]
a = torch.randn(8192, 8192, device="cuda")
for k in range(100000):
    with open(LOG, "a") as log:
        log.write(f"start {time.monotonic():.6f} {k}\n")
    torch.cuda.nvtx.range_push("matmul")
    _ = a @ a
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
'''


def run_kprof_run_case(out: str) -> dict:
    """Ctrl-C on `kprof run -- python app.py` (a loop of matmuls in an NVTX range, as a terminal's
    foreground job): both get SIGINT; kprof must exit within 1 s with the tables of what ran."""
    folder = os.path.join(out, "kprof-run")
    os.makedirs(folder, exist_ok=True)
    app, log_path, res = (os.path.join(folder, n) for n in ("app.py", "calls.log", "results"))
    with open(app, "w") as f:
        f.write(APP)
    kprof = os.environ.get("KPROF", os.path.join(os.getcwd(), ".carry", "bin", "kprof"))
    child = subprocess.Popen([kprof, "run", "--out", res, "--", sys.executable, app, log_path], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    def thirty_calls() -> bool:
        return os.path.exists(log_path) and open(log_path).read().count("start ") >= 30

    sent, exited, stdout, stderr = interrupt_when(child, thirty_calls, time.monotonic() + 120)
    after_s = None if sent is None else exited - sent
    raw = glob.glob(os.path.join(res, "**", "raw*.csv"), recursive=True)
    rows = sum(1 for path in raw for line in open(path) if "matmul" in line)
    checks = {"signal sent": sent is not None, "exited within 1 s": after_s is not None and after_s <= 1.0,
              "tables written": rows > 0}
    return {"case": "kprof-run", "ok": all(checks.values()), "checks": checks, "after_signal_s": after_s,
            "returncode": child.returncode, "last_call_before_signal": None, "raw_csv": raw, "raw_rows": rows,
            "stdout_tail": stdout.strip().splitlines()[-8:], "stderr_tail": stderr.strip().splitlines()[-6:]}


def main() -> int:
    out = sys.argv[1]
    runs = int(sys.argv[sys.argv.index("--runs") + 1]) if "--runs" in sys.argv else 20
    os.makedirs(out, exist_ok=True)
    results = []
    cases: tuple[str, ...] = ("warmup", "first", "later", "counter", "rest", "devices", "kprof-run")
    if "--cases" in sys.argv:
        cases = tuple(sys.argv[sys.argv.index("--cases") + 1].split(","))
    for case in cases:
        r = run_kprof_run_case(out) if case == "kprof-run" else run_case(case, out, runs)
        results.append(r)
        after = "-" if r["after_signal_s"] is None else f"{r['after_signal_s']:.2f} s"
        failed = [k for k, v in r["checks"].items() if not v]
        print(f"{case:8s} {'PASS' if r['ok'] else 'FAIL'}  exit {after} after SIGINT, rc {r['returncode']}, "
              f"rows {r['raw_rows']}, last call {r['last_call_before_signal']}"
              + (f"  failed: {failed}" if failed else ""), flush=True)
    with open(os.path.join(out, "ctrl_c.json"), "w") as f:
        json.dump(results, f, indent=2)
    ok = all(r["ok"] for r in results)
    print(f"ctrl_c: {sum(r['ok'] for r in results)}/{len(results)} cases passed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
