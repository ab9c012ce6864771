"""What the scale-out tests share: the benchmark (the seed's 5-size matmul sweep), the set-up behind
conftest.py's ``replay`` fixture (the replay backend, tests/python/replay_backend.py, in every
worker), and readers of its run log."""

from __future__ import annotations

import collections
import contextlib
import os
import signal
import threading
import time
from dataclasses import dataclass

import kprof
from kprof import _backend

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [512, 1024, 2048, 4096, 8192]
RUNS = 10
SILENT = kprof.VerbosityLevel.SILENT


def matmul(n: int) -> None:
    """The sweep's function (its regions' durations come from the replay backend)."""
    with kprof.annotate("matmul"):
        pass


@kprof.analyze.kernel(configs=SIZES, runs=RUNS, verbosity=SILENT, devices=[0, 1])
def top_level_sweep(n: int) -> None:
    """A decorated function at the top of an importable module: workers can import it by name."""
    with kprof.annotate("matmul"):
        pass


#: A second wrapper of the same function with other settings: by name, each call's own is found.
top_level_sweep_5_runs = kprof.analyze.kernel(configs=SIZES, runs=5, verbosity=SILENT, devices=[0, 1])(
    top_level_sweep.__wrapped__
)


@dataclass(frozen=True)
class Run:
    pid: int
    device: str
    n: int
    run: int
    t: float


class Replay:
    def __init__(self, tmp_path, log):
        self.tmp_path, self.log = tmp_path, log

    def runs(self) -> list[Run]:
        if not self.log.exists():
            return []
        out = []
        for line in self.log.read_text().splitlines():
            pid, dev, n, run, t = line.split()
            out.append(Run(int(pid), dev, int(n), int(run), float(t)))
        return out

    def complete(self, runs: int = RUNS) -> collections.Counter:
        """n -> how many times all its runs were measured in one process (a finished piece)."""
        seen = collections.defaultdict(set)
        for r in self.runs():
            seen[(r.pid, r.n)].add(r.run)
        return collections.Counter(n for (_, n), rs in seen.items() if len(rs) == runs)

    def marker(self, name: str) -> str:
        return str(self.tmp_path / name)


def install_replay(tmp_path, monkeypatch) -> Replay:
    """Workers started from now on replay the H200 recording (KPROF_WORKER_BACKEND) and log their
    runs (the ``replay`` fixture of conftest.py)."""
    monkeypatch.setenv("KPROF_WORKER_BACKEND", "replay_backend:ReplayBackend")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    for name in ("REPLAY_KILL", "REPLAY_RAISE", "REPLAY_TIME_SCALE", "REPLAY_GPU_MODELS"):
        monkeypatch.delenv(name, raising=False)
    log = tmp_path / "runs.log"
    monkeypatch.setenv("REPLAY_LOG", str(log))
    return Replay(tmp_path, log)


def reference_raw(runs: int = RUNS) -> dict[str, list]:
    """The sweep measured in this process on the same replay backend (no scale-out)."""
    from replay_backend import ReplayBackend

    previous = _backend.set_backend(ReplayBackend())
    log = os.environ.pop("REPLAY_LOG", None)  # the log holds the workers' runs only
    try:
        return kprof.analyze.kernel(configs=SIZES, runs=runs, verbosity=SILENT)(matmul)().raw_columns()
    finally:
        _backend.set_backend(previous)
        if log is not None:
            os.environ["REPLAY_LOG"] = log


def by_run(raw: dict[str, list], columns=("Value", "Kernel", "GPU", "Unit", "Metric", "Annotation")) -> dict:
    """(n, Run) -> the row's values in ``columns``."""
    return {(raw["n"][i], raw["Run"][i]): tuple(raw[c][i] for c in columns) for i in range(len(raw["n"]))}


def assert_matches_reference(results) -> None:
    """Same schema (plus the worker columns, last) and the same values as one process measures."""
    raw = results.raw_columns()
    ref = reference_raw()
    assert list(raw)[: len(ref)] == list(ref) and list(raw)[len(ref):] == list(kprof.results.WORKER_COLUMNS)
    assert by_run(raw) == by_run(ref)
    df = results.to_dataframe()
    ref_df = kprof.ProfileResults(ref, ["n"], benchmark="matmul").to_dataframe()
    assert list(df.columns) == [*ref_df.columns, *kprof.results.WORKER_COLUMNS]
    assert df["n"].tolist() == SIZES
    assert df["AvgValue"].tolist() == ref_df["AvgValue"].tolist()
    assert df["CI95_Upper"].tolist() == ref_df["CI95_Upper"].tolist()
    assert (df["NumRuns"] == RUNS).all() and (df["Failure"] == "").all()


@contextlib.contextmanager
def ctrl_c_when(condition):
    """Ctrl-C once ``condition()`` holds (checked every 50 ms while the block runs, however long):
    SIGINT to the main thread (as a terminal sends it), which raises KeyboardInterrupt there. Yields
    the watcher; its ``at`` is the time it sent it.

    For the duration, SIGINT's handler is Python's own (``signal.default_int_handler``): a Python
    started with SIGINT ignored keeps it ignored (it installs its handler only over SIG_DFL), as is
    every process of a suite started as a background command of a shell without job control
    (``scripts/test.sh > log &`` in a script): there neither a SIGINT nor
    ``_thread.interrupt_main()`` raises anything. The signal is only sent inside the ``with`` block."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    lock, over = threading.Lock(), threading.Event()
    main = threading.main_thread().ident

    def watch():
        while not over.is_set():
            if condition():
                with lock:
                    if not over.is_set():
                        watcher.at = time.time()
                        signal.pthread_kill(main, signal.SIGINT)
                return
            over.wait(0.05)

    watcher = threading.Thread(target=watch, name="ctrl-c", daemon=True)
    watcher.at = None
    watcher.start()
    try:
        yield watcher
    finally:
        with lock:
            over.set()
        watcher.join()
        signal.signal(signal.SIGINT, previous)


def ctrl_c_after_three_pieces(call, out, replay):
    """Runs ``call()`` (a sweep that writes its pieces under ``out``) and presses Ctrl-C once three
    pieces are finished; checks that the call raised KeyboardInterrupt and that nothing was measured
    more than 1 s after the Ctrl-C (1.2 s later); returns the rows kept in the partial raw CSV (one
    file)."""
    import pytest

    with ctrl_c_when(lambda: pieces_done(out, 3)) as watcher, pytest.raises(KeyboardInterrupt):
        call()
    time.sleep(1.2)
    late = [r for r in replay.runs() if r.t > watcher.at + 1.0]
    assert not late, f"runs measured more than 1 s after Ctrl-C: {late}"
    partial = list(out.glob("partial-*/matmul-raw.csv"))
    assert len(partial) == 1, partial
    return kprof.load(str(partial[0])).raw()


def pieces_done(folder_glob_root, n: int) -> bool:
    """Whether at least ``n`` piece files exist under ``folder_glob_root``."""
    return len(list(folder_glob_root.glob("**/pieces/*.csv"))) >= n
