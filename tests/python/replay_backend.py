"""The fixture-replay backend of the scale-out tests: no GPU, everything else real.

It runs the benchmark loop as the engine does (warm-ups, measured runs, the user's function with
its ``kprof.annotate`` regions, ``progress.advance`` after every measured run) and gives each region
the duration recorded on the H200 for that size and run
(``tests/fixtures/h200-python-tutorial-steps/sgemm-raw.csv``: the cuBLAS sgemm sweep n = 512..8192, 10 runs each; the k-th region of a run gets k + 1 times it),
with the recording's kernel names and clocks; sizes not in the recording get n ns.

Workers install it through ``KPROF_WORKER_BACKEND=replay_backend:ReplayBackend`` (this folder on
``PYTHONPATH``). Switches, from the environment of the worker:

* ``REPLAY_TIME_SCALE``: sleep ``scale x recorded ns`` seconds per measured run (the sweep's real
  cost ratio: the 8192 matmul is ~700 times the 512 one);
* ``REPLAY_LOG``: append ``pid cuda_visible_devices n run time`` per measured run to this file;
* ``REPLAY_KILL=n:marker``: the first worker to measure run 1 of size n creates ``marker`` and
  kills itself with SIGKILL (mid-piece: run 0 is done);
* ``REPLAY_RAISE=n:k:marker``: the first k attempts at size n raise RuntimeError (counted in
  ``marker``); k = -1 always raises;
* ``REPLAY_GPU_MODELS=0:NVIDIA H200,1:NVIDIA H100``: the GPU name per CUDA_VISIBLE_DEVICES entry.
"""

from __future__ import annotations

import csv
import fcntl
import math
import os
import signal
import socket
import time

from kprof import _backend

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDING = os.path.join(HERE, "..", "fixtures", "h200-python-tutorial-steps", "sgemm-raw.csv")
GPU = "NVIDIA H200"


def recording() -> dict[int, list[dict]]:
    """The recorded rows by n, in run order."""
    by_n: dict[int, list[dict]] = {}
    with open(RECORDING, newline="") as f:
        for row in csv.DictReader(f):
            by_n.setdefault(int(row["n"]), []).append(row)
    for rows in by_n.values():
        rows.sort(key=lambda r: int(r["Run"]))
    return by_n


def recorded_value(n: int, run: int, region: int = 0) -> float:
    rows = recording().get(n)
    base = float(rows[run % len(rows)]["Value"]) if rows else float(n)
    return base * (region + 1)


def _bump(marker: str) -> int:
    """Increments the count in ``marker`` (across processes) and returns the count before."""
    with open(marker, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        before = len(f.read())
        f.write("x")
        return before


def _device() -> str:
    return os.environ.get("CUDA_VISIBLE_DEVICES", "")


class ReplayBackend:
    def __init__(self):
        self._recording = None
        self._rows: list[tuple] = []
        self._names: dict[str, int] = {}
        self._table = recording()

    def fingerprint(self) -> dict:
        dev = _device()
        models = dict(item.split(":", 1) for item in os.environ.get("REPLAY_GPU_MODELS", "").split(",") if ":" in item)
        return {
            "gpu_name": models.get(dev, GPU),
            "uuid": f"GPU-replay-{socket.gethostname()}-{dev or 'any'}",
            "nvml_index": int(dev) if dev.isdigit() else None,
            "hostname": socket.gethostname(),
        }

    def _enter_region(self, name):
        pass

    def _exit_region(self, name, failed):
        if self._recording is None:
            return
        i, n, run = self._recording
        k = self._names.setdefault(name, len(self._names))
        self._rows.append((name, math.nan if failed else recorded_value(n, run, k), i, n, run))

    def _faults(self, n: int, run: int) -> None:
        kill = os.environ.get("REPLAY_KILL")
        if kill and run == 1:
            size, marker = kill.split(":", 1)
            if int(size) == n and _bump(marker) == 0:
                os.kill(os.getpid(), signal.SIGKILL)
        fail = os.environ.get("REPLAY_RAISE")
        if fail and run == 0:
            size, times, marker = fail.split(":", 2)
            if int(size) == n and (int(times) < 0 or _bump(marker) < int(times)):
                raise RuntimeError(f"replayed failure at n={n} on CUDA_VISIBLE_DEVICES={_device()!r}")

    def run_benchmark(self, name, func, configs, options, progress):
        self._rows = []
        scale = float(os.environ.get("REPLAY_TIME_SCALE", "0") or 0)
        log = os.environ.get("REPLAY_LOG")
        sizes = [dict(c).get("n", i) for i, c in enumerate(configs)]
        for i in range(len(configs)):
            for _ in range(options["warmup"]):
                func(i)
        if options["order"] == "interleaved":
            schedule = [(i, r) for r in range(options["runs"]) for i in range(len(configs))]
        else:
            schedule = [(i, r) for i in range(len(configs)) for r in range(options["runs"])]
        for i, r in schedule:
            n = sizes[i]
            self._faults(n, r)
            self._recording = (i, n, r)
            try:
                func(i)
            finally:
                self._recording = None
            if scale:
                time.sleep(scale * recorded_value(n, r))
            if log:
                with open(log, "a") as f:
                    f.write(f"{os.getpid()} {_device() or '-'} {n} {r} {time.time():.3f}\n")
            progress.advance(i)
        cols = {c: [] for c in (*_backend.RAW_COLUMNS, "_config", "DurationSource")}
        for ann, value, i, n, run in self._rows:
            rec = (self._table.get(n) or [{}])[run % max(1, len(self._table.get(n) or [1]))]
            cols["Annotation"].append(ann)
            cols["Value"].append(value)
            cols["Metric"].append(options["metrics"][0])
            cols["Kernel"].append(rec.get("Kernel", f"kernel_{ann}"))
            cols["GPU"].append(self.fingerprint()["gpu_name"])
            cols["Host"].append(socket.gethostname())
            cols["ComputeClock"].append(float(rec.get("ComputeClock", 1980000.0)))
            cols["MemoryClock"].append(float(rec.get("MemoryClock", 3201000.0)))
            cols["Unit"].append("ns")
            cols["Benchmark"].append(name)
            cols["Run"].append(run)
            cols["_config"].append(i)
            cols["DurationSource"].append("records")
        return cols
