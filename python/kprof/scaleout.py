"""Sweeps over several GPUs and clusters: ``@kprof.analyze.kernel(devices=..., executor=...)``.

**How a call runs.** The configurations become *pieces* (a configuration, or with
``runs_per_task`` a range of its runs), grouped into *tasks* of ``configs_per_task`` pieces. Tasks
go to workers from one queue, so a worker that finishes early takes the next task (configurations
differ in cost; nothing is split in advance). A worker runs each piece through the same code as a
call without scale-out (:func:`kprof.analyze.measure`: the installed backend, every option, info
collectors, derived metrics), writes it as a raw CSV under the call's folder (atomically, through
kprof's one writer) as soon as it is finished, and returns the rows. The caller merges the rows
into one table of the usual schema plus ``Device``, ``DeviceUUID`` and ``Failure``
(:data:`kprof.results.WORKER_COLUMNS`).

**Where tasks run.**

* ``devices="all" | [0, 2, ...]``: one worker process per entry (``multiprocessing`` spawn; an
  ordinal may repeat: ``[0, 0]`` is two workers sharing GPU 0). Each worker sets
  ``CUDA_VISIBLE_DEVICES`` to its GPU before it runs anything of yours, and stops with one clear
  error when CUDA was started while it imported your script. Ordinals are CUDA's as this process
  sees them (entries of its ``CUDA_VISIBLE_DEVICES`` when set); ``"all"`` is every GPU visible.
* ``executor=``: anything with ``submit(fn, *args) -> future`` whose futures have ``done()``,
  ``result()`` and ``cancel()``: a ``concurrent.futures.ProcessPoolExecutor``, a
  ``dask.distributed.Client`` (``kprof[dask]``), a submitit executor (``kprof[slurm]``; the first
  tasks go out as one Slurm job array through its ``map_array``). One task uses one GPU: the one
  the cluster gives it (Slurm's ``--gpus-per-task``, dask-cuda's workers).

**The function** travels to the workers with cloudpickle when it is installed (any function:
closures, ``__main__``), else by name: the module and the name that the decorated function has at
its top level (``__main__`` only to ``devices=`` and a ``ProcessPoolExecutor``, whose processes
run the script's top level again, as ``multiprocessing`` does). Anything else is one
:class:`kprof.ConfigError` before any work starts.

**Faults.** A piece whose worker dies (killed, lost: no heartbeat for ``worker_timeout`` seconds
on an executor) or that raises is tried once more, on another worker when there is one, then
reported as rows with ``Value`` NaN and the reasons in ``Failure``; a call where nothing could be
measured raises :class:`kprof.WorkerError`. Finished pieces are never measured again: they are
read back from their files. Ctrl-C kills kprof's workers at once (on an executor: the tasks stop
after their current run and queued ones are cancelled), writes the rows finished so far to one raw
CSV and says where, then raises ``KeyboardInterrupt``.

**Statistics** (:class:`kprof.ProfileResults`): ``Device``, ``DeviceUUID`` and ``Failure`` are part
of a row's key, so runs of different GPUs are never pooled; with ``pool_devices=True`` the runs of
one configuration on GPUs of the same model form one row, whose ``Device`` and ``DeviceUUID``
list them (``"0|1"``).

The environment variable ``KPROF_WORKER_BACKEND=module:factory`` installs ``factory()`` as the
backend of every worker (tests use it to replay recordings without a GPU).
"""

from __future__ import annotations

import builtins
import collections
import concurrent.futures
import contextlib
import dataclasses
import hashlib
import importlib
import logging
import math
import multiprocessing
import multiprocessing.connection
import os
import pickle
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Any

from . import _warn
from ._pieces import Piece, Task, TaskResult, _recover, _write_piece, make_pieces, read_piece
from .exceptions import ConfigError, WorkerError
from .timeline import TIMELINE_KEY

__all__ = ["ScaleOut", "check_options", "profile", "run_task", "WORKER_BACKEND_ENV"]

_log = logging.getLogger("kprof.scaleout")

#: Installs a backend in every worker: ``module:factory`` (``factory()`` is passed to ``set_backend``).
WORKER_BACKEND_ENV = "KPROF_WORKER_BACKEND"

_DEFAULTS = {"pool_devices": False, "runs_per_task": None, "configs_per_task": 1, "worker_timeout": 60.0}
_ATTEMPTS = 2  # a piece is tried once more after a failure
_STOP_FILE = "STOP"


@dataclass(frozen=True)
class ScaleOut:
    """The validated scale-out options of one decorator."""

    devices: str | tuple[int, ...] | None
    executor: Any
    pool_devices: bool
    runs_per_task: int | None
    configs_per_task: int
    worker_timeout: float


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def check_options(opts: dict, *, backend: str, runs: int, adaptive: bool, collectors: tuple) -> ScaleOut | None:
    """Validates ``devices``, ``executor``, ``pool_devices``, ``runs_per_task``,
    ``configs_per_task`` and ``worker_timeout`` (and how they combine with the other options)."""
    devices, executor = opts["devices"], opts["executor"]
    pool, per_runs, per_task, timeout = (opts[k] for k in _DEFAULTS)
    if not isinstance(pool, bool):
        raise ConfigError(f"pool_devices must be True or False, got {pool!r}")
    if per_runs is not None and (not _is_int(per_runs) or per_runs < 1):
        raise ConfigError(f"runs_per_task must be an integer >= 1 or None, got {per_runs!r}")
    if not _is_int(per_task) or per_task < 1:
        raise ConfigError(f"configs_per_task must be an integer >= 1, got {per_task!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"worker_timeout must be a positive number of seconds, got {timeout!r}")
    if devices is None and executor is None:
        for name, default in _DEFAULTS.items():
            if opts[name] != default:
                raise ConfigError(f"{name}={opts[name]!r} only applies with devices=... or executor=...")
        return None
    if devices is not None and executor is not None:
        raise ConfigError("give devices=... (workers on this machine's GPUs) or executor=... (tasks on an executor), not both")
    if devices is not None:
        if isinstance(devices, str):
            if devices != "all":
                raise ConfigError(f"devices must be 'all', a list of CUDA device ordinals such as [0, 2], or None; got {devices!r}")
        else:
            try:
                devices = tuple(devices)
            except TypeError:
                raise ConfigError(f"devices must be 'all', a list of CUDA device ordinals such as [0, 2], or None; got {devices!r}") from None
            if not devices or not all(_is_int(d) and d >= 0 for d in devices):
                raise ConfigError(f"devices must hold CUDA device ordinals (ints >= 0), at least one; got {list(devices)!r}")
        if timeout != _DEFAULTS["worker_timeout"]:
            raise ConfigError("worker_timeout applies to executor=...; kprof watches its own workers (devices=...) directly")
    else:
        if not callable(getattr(executor, "submit", None)):
            raise ConfigError(
                f"executor must have submit(fn, *args) -> future (a concurrent.futures executor, a dask.distributed.Client, "
                f"a submitit executor); got {type(executor).__name__}"
            )
        if isinstance(executor, concurrent.futures.ThreadPoolExecutor):
            raise ConfigError(
                "executor=ThreadPoolExecutor runs tasks in this process, and kprof measures one benchmark at a time per "
                "process; use a ProcessPoolExecutor (mp_context=multiprocessing.get_context('spawn')) or devices=..."
            )
    where = "devices=..." if executor is None else "executor=..."
    if backend == "ncu":
        raise ConfigError(f"{where} does not work with backend='ncu' (it relaunches the script under ncu); use backend='cupti'")
    if opts["thermal_device"] is not None:
        raise ConfigError(f"thermal_device cannot be given with {where}: each worker guards the GPU it measures on")
    if per_runs is not None and adaptive:
        raise ConfigError("runs_per_task splits a fixed number of runs; it does not work with target_rsd / target_ci")
    from .results import WORKER_COLUMNS

    clash = [c.name for c in collectors if c.name in WORKER_COLUMNS]
    if clash:
        raise ConfigError(f"info collector name(s) {clash} are the columns {where} adds; rename them")
    return ScaleOut(devices, executor, pool, per_runs, per_task, float(timeout))


# ---------------------------------------------------------------------------------------------
# the function and its settings, to the workers


def _kprof_wrapper(obj: Any) -> Any:
    """The ``@kernel`` wrapper in ``obj``'s chain of ``__wrapped__`` (``@plot`` stacked on it), or None."""
    for _ in range(8):
        if obj is None or hasattr(obj, "_kprof_settings"):
            return obj
        obj = getattr(obj, "__wrapped__", None)
    return None


def _top_level_name(func: Any, settings: Any) -> str | None:
    """The name under which the kprof wrapper of ``func`` with these ``settings`` (one function may
    have several) is bound at the top of its module."""
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    for name, value in list(vars(module).items()) if module is not None else ():
        wrapper = _kprof_wrapper(value) if callable(value) else None
        if wrapper is not None and wrapper.__wrapped__ is func and wrapper._kprof_settings is settings:
            return name
    return None


def _shared_gpus(ordinals: list[int]) -> list[int]:
    """The GPUs of ``devices=`` that several workers share (``[0, 0]``: GPU 0)."""
    return sorted({d for d in ordinals if ordinals.count(d) > 1})


class _GpuTurn:
    """Workers sharing a GPU take turns on it: each piece runs while its worker holds an exclusive
    lock on one file per shared GPU (``fcntl.flock``: the kernel drops it when the holder dies, so
    a killed worker never blocks the others), and its counter session is given back before the
    lock is (a GPU's counters serve one process at a time: CUPTI_ERROR_HARDWARE_BUSY otherwise,
    seen on the H200). Their kernels therefore never overlap, so they measure what one process
    alone would (the durations of two workers running at once on the H200 read up to 55 % long),
    with the same duration source and counters; they gain no throughput on that GPU."""

    def __init__(self, path: str | None):
        self._path, self._fd = path, None

    def __enter__(self):
        if self._path is not None:
            import fcntl

            self._fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        if self._fd is not None:
            import fcntl

            from . import _core

            try:
                _core.release_counters()
            finally:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
                self._fd = None


def worker_settings(settings: Any) -> Any:
    """The settings a worker measures with: the same options, without scale-out, files or store."""
    return dataclasses.replace(settings, scaleout=None, configs=None, output_csv=False, output_prefix=None, store=None)


def pack(func: Any, settings: Any, configs: list, main_ok: bool) -> bytes:
    """The payload of every task (see the module doc string); ConfigError when ``func`` can go to
    the workers neither by value nor by name. ``main_ok``: the workers run ``__main__`` again."""
    what = getattr(func, "__qualname__", None) or repr(func)
    try:
        import cloudpickle
    except ImportError:
        cloudpickle = None
    if cloudpickle is not None:
        try:
            return pickle.dumps(("value", cloudpickle.dumps((func, worker_settings(settings), configs))))
        except Exception as e:
            raise ConfigError(
                f"{what} cannot be sent to the workers: cloudpickle could not pickle it, its settings or its configs "
                f"({type(e).__name__}: {e}). Keep objects that cannot be pickled (locks, open files, CUDA streams) out of "
                "its closure, globals, options and configs, or define them inside the function"
            ) from e
    module = getattr(func, "__module__", None)
    name = _top_level_name(func, settings)
    spec = getattr(sys.modules.get(module or ""), "__spec__", None)
    if name is None or (module == "__main__" and not main_ok) or (module != "__main__" and spec is None):
        where = "defined inside another function" if name is None else f"in {module}, which the workers cannot import"
        raise ConfigError(
            f"{what} cannot be sent to the workers: it is {where}, and cloudpickle (which sends functions by value) "
            "is not installed. Install it (pip install cloudpickle, or kprof[dask] / kprof[slurm]) or decorate a "
            "function at the top level of an importable module"
        )
    try:
        return pickle.dumps(("ref", module, name, configs))
    except Exception as e:
        raise ConfigError(f"the configs of {what} cannot be pickled for the workers ({type(e).__name__}: {e}); install cloudpickle") from e


_UNPACKED: dict[bytes, tuple] = {}
_RUNNING = threading.Lock()  # one benchmark at a time per process (a dask worker with several threads)


def _unpack(payload: bytes) -> tuple:
    """``(func, settings, configs)`` from a payload (cached per worker process)."""
    key = hashlib.sha1(payload).digest()
    if key not in _UNPACKED:
        kind, *rest = pickle.loads(payload)
        if kind == "value":
            _UNPACKED[key] = pickle.loads(rest[0])
        else:
            module, name, configs = rest
            wrapper = _kprof_wrapper(getattr(importlib.import_module(module), name))
            _UNPACKED[key] = (wrapper.__wrapped__, worker_settings(wrapper._kprof_settings), configs)
    return _UNPACKED[key]


# ---------------------------------------------------------------------------------------------
# the worker side


class _Stopped(Exception):
    """The caller asked the workers to stop (Ctrl-C)."""


class _WorkerProgress:
    """The backend's progress object in a worker: silent; raises :class:`_Stopped` after a run
    once the stop file exists."""

    def __init__(self, stop_path: str):
        self._stop_path = stop_path
        self._checked = 0.0

    def stop_requested(self) -> bool:
        self._checked = time.monotonic()
        return os.path.exists(self._stop_path)

    def advance(self, config_index: int | None = None) -> None:
        if time.monotonic() - self._checked > 0.1 and self.stop_requested():
            raise _Stopped("stopped by the caller")

    def set_total(self, total: int) -> None:
        pass

    def debug(self, message: str) -> None:
        _log.debug("%s", message)


class _Heartbeat:
    """Touches ``path`` every ``interval`` seconds while a task runs (the caller's sign of life)."""

    def __init__(self, path: str, interval: float):
        self._path, self._interval = path, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="kprof-heartbeat", daemon=True)

    def __enter__(self):
        self._touch()
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._touch()

    def _touch(self) -> None:
        try:
            with open(self._path, "w") as f:
                f.write(f"{socket.gethostname()} {os.getpid()}\n")
        except OSError:  # a folder the worker cannot reach: no heartbeat (the future decides)
            pass

    def _beat(self) -> None:
        while not self._stop.wait(self._interval):
            self._touch()


def _install_worker_backend() -> None:
    spec = os.environ.get(WORKER_BACKEND_ENV)
    if not spec or getattr(_install_worker_backend, "done", None) == spec:
        return
    from . import _backend

    module, _, attr = spec.partition(":")
    if not attr:
        raise ConfigError(f"{WORKER_BACKEND_ENV}={spec!r}: expected module:factory")
    _backend.set_backend(getattr(importlib.import_module(module), attr)())
    _install_worker_backend.done = spec  # type: ignore[attr-defined]


def _where() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


def _identity(fingerprint: dict | None, device: int | None) -> tuple[int, str]:
    """``(Device, DeviceUUID)`` of this worker: the devices= ordinal, else the GPU's index on its
    host (NVML's, else the first entry of CUDA_VISIBLE_DEVICES), -1 when unknown."""
    fp = fingerprint or {}
    if device is None:
        device = fp.get("nvml_index")
    if device is None:
        first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
        device = int(first) if first.isdigit() else -1
    return int(device), str(fp.get("uuid") or "")


def _run_piece(func, sig, settings, configs, piece: Piece, backend, progress, device) -> tuple[dict, dict | None]:
    from . import analyze

    local = settings if piece.runs is None else dataclasses.replace(settings, runs=piece.runs)
    raw, _ = analyze.measure(func, sig, local, [configs[piece.config]], backend, local.backend_options(), progress)
    raw.pop(TIMELINE_KEY, None)  # timelines are of one process (ProfileResults.to_trace)
    fingerprint = analyze._fingerprint(backend)
    n = len(raw["Annotation"])
    raw["Run"] = [r + piece.first_run for r in raw["Run"]]
    dev, uuid = _identity(fingerprint, device)
    raw.update(Device=[dev] * n, DeviceUUID=[uuid] * n, Failure=[""] * n)
    return raw, fingerprint


def run_task(task: Task) -> TaskResult:
    """Runs a task's pieces one after the other in this process (see the module doc string)."""
    from . import _backend, analyze

    out = TaskResult(worker=_where() + ("" if task.device is None else f", device {task.device}"))
    os.makedirs(os.path.join(task.folder, "pieces"), exist_ok=True)
    progress = _WorkerProgress(os.path.join(task.folder, _STOP_FILE))
    with _Heartbeat(os.path.join(task.folder, f"heartbeat-{task.id}"), task.heartbeat_s), _RUNNING, warnings.catch_warnings(
        record=True
    ) as caught:
        warnings.simplefilter("always")
        _install_worker_backend()
        func, settings, configs = _unpack(task.payload)
        sig = analyze.Signature.of(func)
        backend = _backend.get_backend()
        for k, piece in enumerate(task.pieces):
            path = os.path.join(task.folder, "pieces", piece.file_name)
            if os.path.exists(path):  # finished by an earlier attempt of this task
                out.done[piece] = read_piece(path)
                continue
            if progress.stop_requested():
                out.not_run.extend(task.pieces[k:])
                break
            try:
                with _GpuTurn(task.gpu_lock):
                    raw, out.fingerprint = _run_piece(func, sig, settings, configs, piece, backend, progress, task.device)
            except _Stopped:
                out.not_run.extend(task.pieces[k:])
                break
            except Exception as e:
                _log.debug("piece %s failed on %s", piece, out.worker, exc_info=True)
                out.failed[piece] = f"{type(e).__name__}: {e}".strip() + f" (on {out.worker})"
                out.not_run.extend(task.pieces[k + 1 :])  # after an error (a CUDA one?) the next pieces go elsewhere
                break
            _write_piece(path, raw)
            out.done[piece] = {c: v for c, v in raw.items() if c not in sig.names}
    out.warnings = [(w.category.__module__, w.category.__qualname__, str(w.message)) for w in caught]
    return out


def _device_worker(conn, cvd: str) -> None:
    """A devices= worker process: pins its GPU, then runs the tasks it receives until told to stop."""
    os.environ["CUDA_VISIBLE_DEVICES"] = cvd
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    if hasattr(signal, "pthread_sigmask"):  # blocked since the caller spawned it (_sigint_deferred)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        main = getattr(sys.modules.get("__main__"), "__file__", "your script")
        conn.send(("fatal", f"CUDA was started while this worker imported {main}, before kprof could pin it to "
                            f"CUDA_VISIBLE_DEVICES={cvd}: move the GPU work at the top of the script under "
                            "`if __name__ == '__main__':`"))
        return
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            result: Any = run_task(task)
            conn.send(("result", result))
        except BaseException as e:  # a task that could not run at all, or a result that does not pickle
            conn.send(("result", f"{type(e).__name__}: {e} (on {_where()}, device {task.device})"))


# ---------------------------------------------------------------------------------------------
# where tasks run: kprof's own workers (devices=) or an executor


def _describe_exit(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exited with code {code}"


@contextlib.contextmanager
def _sigint_deferred(spawns: bool = True):
    """SIGINT (Ctrl-C) blocked in this thread for the block; one that came meanwhile raises
    KeyboardInterrupt right after it. Around the call's folder (``spawns=False``), so that a Ctrl-C
    cannot come between its creation and kprof's record of it, and around the start of a worker,
    so that a Ctrl-C lands neither between the spawn of the process and kprof's record of it (a
    worker that nobody stops) nor, as a KeyboardInterrupt, in the new worker's start-up: the
    worker inherits the blocked signal and unblocks it once it ignores it (as multiprocessing
    starts its resource tracker)."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    if spawns:
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()  # its own start unblocks SIGINT: before the block, not inside
    # Blocking covers this thread only: a process with other threads (numpy's and torch's pools)
    # gets a Ctrl-C through one of them, and Python then runs the handler in the main thread in
    # the middle of the start. So the handler only notes it meanwhile (main thread only: the only
    # one that may set a handler, and the only one running Python handlers).
    came: list[int] = []
    handler = signal.getsignal(signal.SIGINT)
    swap = threading.current_thread() is threading.main_thread() and handler is not None
    if swap:
        signal.signal(signal.SIGINT, lambda signum, frame: came.append(signum))
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
        if swap:
            signal.signal(signal.SIGINT, handler)
            if came:
                # What the handler of the caller would have done, now that the start is over.
                signal.raise_signal(signal.SIGINT)


class _Slot:
    def __init__(self, index: int, ordinal: int, cvd: str):
        self.index, self.ordinal, self.cvd = index, ordinal, cvd
        self.proc: Any = None
        self.conn: Any = None
        self.task: Task | None = None

    def started(self) -> bool:
        """Whether its process was started (an interrupted start leaves one that never was)."""
        return self.proc is not None and self.proc.pid is not None


class _DeviceRunner:
    """One worker process per entry of ``devices``; a dead one is started again for the next task."""

    def __init__(self, ordinals: list[int], visible: list[str]):
        self._ctx = multiprocessing.get_context("spawn")
        self.slots = [_Slot(i, d, visible[d]) for i, d in enumerate(ordinals)]
        self.shared = set(_shared_gpus(ordinals))  # their workers take turns (_GpuTurn)

    def start(self) -> None:
        for s in self.slots:  # all at once: their start-up (Python, CUDA) overlaps
            self._start(s)

    def _start(self, s: _Slot) -> None:
        parent, child = self._ctx.Pipe()
        # Recorded before it starts: stop() and close() see the worker whatever interrupts the start.
        s.proc = self._ctx.Process(target=_device_worker, args=(child, s.cvd), name=f"kprof-worker-{s.ordinal}")
        s.conn, s.task = parent, None
        try:
            with _sigint_deferred():
                s.proc.start()
        finally:
            child.close()

    def busy(self) -> bool:
        return any(s.task is not None for s in self.slots)

    def submit(self, task: Task, avoid: set) -> bool:
        """Gives ``task`` to an idle worker (one not in ``avoid`` while another exists); False when none."""
        idle = [s for s in self.slots if s.task is None]
        if any(s.index not in avoid for s in self.slots):
            idle = [s for s in idle if s.index not in avoid]
        if not idle:
            return False
        s = idle[0]
        if not s.proc.is_alive():
            s.conn.close()
            self._start(s)
        lock = os.path.join(task.folder, f"gpu{s.ordinal}.lock") if s.ordinal in self.shared else None
        s.task = task = dataclasses.replace(task, device=s.ordinal, gpu_lock=lock)
        try:
            s.conn.send(task)
        except OSError:  # it died just now: poll reports it
            pass
        return True

    def poll(self, timeout: float) -> list[tuple[Task, Any, Any]]:
        busy = [s for s in self.slots if s.task is not None]
        if not busy:
            time.sleep(timeout)
            return []
        ready = multiprocessing.connection.wait([s.conn for s in busy] + [s.proc.sentinel for s in busy], timeout)
        finished = []
        for s in busy:
            if s.conn not in ready and s.proc.sentinel not in ready:
                continue
            message = None
            try:
                if s.conn.poll():
                    message = s.conn.recv()
            except (EOFError, OSError):
                pass
            if message is not None and message[0] == "fatal":
                raise WorkerError(f"the worker for device {s.ordinal} cannot run: {message[1]}")
            if message is None:
                if s.proc.is_alive():
                    continue
                s.proc.join(0.1)
                message = ("result", f"the worker on device {s.ordinal} (pid {s.proc.pid}) died: {_describe_exit(s.proc.exitcode)}")
            finished.append((s.task, message[1], s.index))
            s.task = None
        return finished

    def stop(self) -> None:
        started = [s for s in self.slots if s.started()]
        for s in started:
            if s.proc.is_alive():
                s.proc.kill()
        for s in started:
            s.proc.join(1.0)

    def close(self) -> None:
        started = [s for s in self.slots if s.started()]
        for s in started:
            try:
                s.conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + 5.0
        for s in started:
            s.proc.join(max(0.0, deadline - time.monotonic()))
            if s.proc.is_alive():
                s.proc.kill()
                s.proc.join(1.0)
        for s in self.slots:
            if s.conn is not None:
                s.conn.close()


class _ExecutorRunner:
    """Tasks on the caller's executor; every queued task is submitted at once (the executor queues)."""

    def __init__(self, executor: Any, folder: str, timeout: float):
        self.executor, self._folder, self._timeout = executor, folder, timeout
        self._inflight: dict[str, tuple[Task, Any]] = {}
        self._own: list = []  # executors kprof made (a broken ProcessPoolExecutor's replacement)

    def busy(self) -> bool:
        return bool(self._inflight)

    def submit_many(self, tasks: list[Task]) -> list[tuple[Task, str]]:
        """Submits ``tasks``; returns those the executor refused, with the reason."""
        map_array = getattr(self.executor, "map_array", None)
        if callable(map_array) and type(self.executor).__module__.startswith("submitit") and len(tasks) > 1:
            for t, job in zip(tasks, map_array(run_task, tasks)):  # one Slurm job array
                self._inflight[t.id] = (t, job)
            return []
        refused = []
        for t in tasks:
            try:
                self._inflight[t.id] = (t, self._submit(t))
            except Exception as e:
                refused.append((t, f"the executor refused the task: {type(e).__name__}: {e}"))
        return refused

    def _submit(self, task: Task) -> Any:
        try:
            return self.executor.submit(run_task, task)
        except concurrent.futures.BrokenExecutor:
            if type(self.executor) is not concurrent.futures.ProcessPoolExecutor:
                raise
        # concurrent.futures cannot run anything more once a worker died: a new pool, same arguments.
        old = self.executor
        kwargs = {"max_workers": old._max_workers, "mp_context": old._mp_context, "initializer": old._initializer,
                  "initargs": old._initargs}
        if getattr(old, "_max_tasks_per_child", None) is not None:
            kwargs["max_tasks_per_child"] = old._max_tasks_per_child
        self.executor = concurrent.futures.ProcessPoolExecutor(**kwargs)
        self._own.append(self.executor)
        warnings.warn(
            "a worker of the ProcessPoolExecutor died, which breaks that executor for good (concurrent.futures); "
            f"kprof runs the remaining tasks on a new ProcessPoolExecutor(max_workers={old._max_workers}) and shuts it "
            "down at the end",
            RuntimeWarning,
            stacklevel=_warn.stacklevel(),
        )
        return self.executor.submit(run_task, task)

    def _lost(self, task: Task) -> bool:
        try:
            age = time.time() - os.stat(os.path.join(self._folder, f"heartbeat-{task.id}")).st_mtime
        except OSError:
            return False  # not started yet (or no shared folder)
        return age > self._timeout

    def poll(self, timeout: float) -> list[tuple[Task, Any, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            finished = []
            for key, (task, future) in list(self._inflight.items()):
                if future.done():
                    try:
                        finished.append((task, future.result(), None))
                    except Exception as e:
                        finished.append((task, f"{type(e).__name__}: {e}".strip(), None))
                elif self._lost(task):
                    _cancel(future)
                    finished.append((task, f"no heartbeat for {self._timeout:g} s: its worker died or its node was lost", None))
                else:
                    continue
                del self._inflight[key]
            if finished or time.monotonic() >= deadline:
                return finished
            time.sleep(0.05)

    def stop(self) -> None:
        with open(os.path.join(self._folder, _STOP_FILE), "w"):
            pass
        for _, future in self._inflight.values():
            _cancel(future)
        deadline = time.monotonic() + 1.0  # running tasks stop after their current run
        while time.monotonic() < deadline and not all(f.done() for _, f in self._inflight.values()):
            time.sleep(0.05)

    def close(self) -> None:
        for ex in self._own:
            ex.shutdown(wait=False, cancel_futures=True)


def _cancel(future: Any) -> None:
    try:
        future.cancel()
    except Exception as e:  # submitit's scancel on a finished job, ...
        _log.debug("cancelling %r: %s", future, e)


def _visible_devices() -> list[str]:
    """CUDA's devices as this process sees them: CUDA_VISIBLE_DEVICES entries, else one per GPU."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None:
        return [e.strip() for e in env.split(",") if e.strip()]
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []


def _resolve_devices(devices: str | tuple[int, ...]) -> tuple[list[int], list[str]]:
    visible = _visible_devices()
    if not visible:
        raise ConfigError(
            f"devices={devices!r}: this machine shows no NVIDIA GPU (no /proc/driver/nvidia/gpus entries; "
            "CUDA_VISIBLE_DEVICES unset or empty)"
        )
    ordinals = list(range(len(visible))) if devices == "all" else list(devices)
    missing = sorted({d for d in ordinals if d >= len(visible)})
    if missing:
        raise ConfigError(
            f"devices={list(devices)!r}: no CUDA device {missing} here; this process sees {len(visible)} "
            f"(CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES', 'unset')})"
        )
    return ordinals, visible


# ---------------------------------------------------------------------------------------------
# the caller: queue, retries, merge


def _folder(settings: Any, state: dict, name_tag: str, run_id: int) -> str:
    """A new folder for the call's piece files, heartbeats and stop file: under ``output_prefix``
    when there is one (on a cluster: a shared filesystem), else in the temporary folder."""
    from . import analyze

    if settings.output_prefix is not None or settings.output_csv:
        base = analyze.output_prefix(state)
        parent = os.path.dirname(base) or "."
        os.makedirs(parent, exist_ok=True)
        return os.path.abspath(tempfile.mkdtemp(prefix=f"{os.path.basename(base)}partial-{name_tag}-{run_id}-", dir=parent))
    return os.path.abspath(tempfile.mkdtemp(prefix=f"kprof-{name_tag}-{run_id}-"))


class _Queue:
    """The pieces still to measure, their attempts and outcomes."""

    def __init__(self, pieces: list[Piece], per_task: int):
        self.per_task = per_task
        self.todo: collections.deque = collections.deque()  # (pieces, workers to avoid)
        self._group(pieces, frozenset())
        self.done: dict[Piece, dict] = {}
        self.failed: dict[Piece, list[str]] = {}
        self.reasons: dict[Piece, list[str]] = collections.defaultdict(list)
        self.fingerprints: list[dict] = []
        self.warnings: dict[tuple, None] = {}

    def _group(self, pieces: list[Piece], avoid: frozenset) -> None:
        for i in range(0, len(pieces), self.per_task):
            self.todo.append((tuple(pieces[i : i + self.per_task]), avoid))

    def fail(self, piece: Piece, reason: str, where: Any) -> None:
        self.reasons[piece].append(reason)
        again = len(self.reasons[piece]) < _ATTEMPTS
        _log.info("kprof: configuration %d (runs from %d) failed: %s; %s", piece.config, piece.first_run, reason,
                  "trying it once more" if again else "giving up")
        if again:
            self.todo.append(((piece,), frozenset() if where is None else frozenset({where})))
        else:
            self.failed[piece] = self.reasons[piece]

    def settle(self, task: Task, outcome: Any, where: Any, folder: str, progress: Any) -> None:
        if isinstance(outcome, TaskResult):
            done, not_run = outcome.done, outcome.not_run
            for piece, reason in outcome.failed.items():
                self.fail(piece, reason, where)
            if outcome.fingerprint:
                self.fingerprints.append(outcome.fingerprint)
            self.warnings.update(dict.fromkeys(outcome.warnings))
        else:  # the whole task failed: what it finished is in its files
            done = _recover(folder, task.pieces)
            not_run = []
            for piece in task.pieces:
                if piece not in done:
                    self.fail(piece, str(outcome), where)
        for piece, table in done.items():
            self.done[piece] = table
            for _ in set(table["Run"]):
                progress.advance(piece.config)
        self._group(list(not_run), frozenset())


def profile(func: Any, sig: Any, settings: Any, state: dict, configs: list[tuple]) -> Any:
    """A call of a decorated function with devices= or executor= (see the module doc string)."""
    from . import analyze
    from .progress import ProgressReporter
    from .results import ProfileResults, WORKER_COLUMNS

    so: ScaleOut = settings.scaleout
    if so.devices is not None:
        ordinals, visible = _resolve_devices(so.devices)
    # This process's own counter session (kept open between benchmarks) would keep the workers on
    # its GPU from the counters (CUPTI_ERROR_HARDWARE_BUSY, seen on the H200).
    from . import _core

    _core.release_counters()
    main_ok = so.devices is not None or isinstance(so.executor, concurrent.futures.ProcessPoolExecutor)
    payload = pack(func, settings, configs, main_ok)
    name_tag = analyze.file_name_tag(sig.func_name)
    run_id = analyze._next_run_id(name_tag)
    adaptive = settings.target_rsd is not None or settings.target_ci is not None
    expected = (settings.max_runs or max(settings.runs, 100)) if adaptive else settings.runs
    progress = ProgressReporter(sig.func_name, len(configs), expected, settings.verbosity)
    pieces = make_pieces(len(configs), settings.runs, so.runs_per_task)
    queue = _Queue(pieces, so.configs_per_task)
    ids = iter(range(1 << 62))

    def task(group: tuple) -> Task:
        return Task(f"{next(ids):06d}", payload, group, folder, None, min(5.0, so.worker_timeout / 4))

    folder: Any = None
    runner: Any = None
    try:
        with _sigint_deferred(spawns=False):  # a Ctrl-C while it is made comes once `folder` holds it
            folder = _folder(settings, state, name_tag, run_id)
        if so.devices is not None:
            runner = _DeviceRunner(ordinals, visible)
            runner.start()
        else:
            runner = _ExecutorRunner(so.executor, folder, so.worker_timeout)
        while queue.todo or runner.busy():
            if so.devices is not None:
                while queue.todo and runner.submit(task(queue.todo[0][0]), queue.todo[0][1]):
                    queue.todo.popleft()
            elif queue.todo:
                batch = [task(p) for p, _ in queue.todo]
                queue.todo.clear()
                for t, reason in runner.submit_many(batch):
                    queue.settle(t, reason, None, folder, progress)
            for t, outcome, where in runner.poll(0.2):
                queue.settle(t, outcome, where, folder, progress)
    except BaseException as e:  # Ctrl-C, a worker that cannot run, the executor: keep what finished, in one file
        if runner is not None:
            runner.stop()
        if folder is None:
            raise
        queue.done.update(_recover(folder, [p for p in pieces if p not in queue.done]))
        if queue.done:
            path = os.path.join(folder, f"{sig.func_name}-raw.csv")
            _write_piece(path, _merge(queue.done, {}, configs, sig, settings.runs))
            what = "interrupted" if isinstance(e, KeyboardInterrupt) else f"stopped by {type(e).__name__}"
            progress.info(f"kprof: {what}; the {len(queue.done)} finished configurations (or run ranges) are in {path}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    finally:
        if runner is not None:
            runner.close()
        progress.close()

    for (module, qualname, message) in queue.warnings:
        category = getattr(builtins, qualname, None) if module == "builtins" else None
        warnings.warn(message, category if isinstance(category, type) and issubclass(category, Warning) else UserWarning, stacklevel=_warn.stacklevel())
    if not queue.done:
        shutil.rmtree(folder, ignore_errors=True)
        reasons = "; ".join(f"config {p.config}: {' / '.join(r)}" for p, r in sorted(queue.failed.items())[:5])
        raise WorkerError(f"{sig.func_name}: no configuration could be measured on the workers ({reasons})")
    if queue.failed:
        first = sorted(queue.failed.items())[0]
        warnings.warn(
            f"{sig.func_name}: {len(queue.failed)} of {len(queue.done) + len(queue.failed)} configurations (or run ranges) "
            f"failed {_ATTEMPTS} times and are rows with Value NaN and the reason in the Failure column; the first, config "
            f"{first[0].config} {configs[first[0].config]!r}: {first[1][-1]}",
            RuntimeWarning,
            stacklevel=_warn.stacklevel(),
        )
    raw = _merge(queue.done, queue.failed, configs, sig, settings.runs)
    results = ProfileResults(
        raw, list(sig.names), normalize_against=settings.normalize_against, benchmark=sig.func_name,
        key_columns=WORKER_COLUMNS, pool_devices=so.pool_devices,
    )
    results.fingerprint = _merged_fingerprint(queue.fingerprints)  # type: ignore[attr-defined]
    analyze.deliver(results, settings, state, name_tag, run_id, progress)
    shutil.rmtree(folder, ignore_errors=True)
    return results


def _merge(done: dict[Piece, dict], failed: dict[Piece, list[str]], configs: list[tuple], sig: Any, runs: int) -> dict[str, list]:
    """One raw table: finished pieces in configuration and run order, then failed rows."""
    from ._backend import RAW_COLUMNS
    from .results import WORKER_COLUMNS

    rows: list[tuple[Piece, dict]] = sorted(done.items())
    columns: dict[str, None] = {}
    for _, t in rows:
        columns.update(dict.fromkeys(t))
    params = set(sig.names)
    extras = [c for c in columns if c not in RAW_COLUMNS and c not in WORKER_COLUMNS and c not in params and c != "_config"]
    order = [*RAW_COLUMNS[:9], *sig.names, "Benchmark", "Run", *extras, *WORKER_COLUMNS]
    raw: dict[str, list] = {c: [] for c in order}
    index: list[int] = []
    for piece, t in rows:
        n = len(t["Annotation"])
        index.extend([piece.config] * n)
        for c in order:
            if c not in params:
                raw[c].extend(t.get(c, [None] * n))
    _append_failed(raw, index, failed, runs)
    for j, name in enumerate(sig.names):
        raw[name] = [configs[i][j] for i in index]
    return raw


def _append_failed(raw: dict[str, list], index: list[int], failed: dict[Piece, list[str]], runs: int) -> None:
    """A failed piece's rows: one per annotation and metric seen elsewhere and run, Value NaN."""
    if not failed:
        return
    series = list(dict.fromkeys(zip(raw["Annotation"], raw["Metric"], raw["Unit"])))
    benchmark = raw["Benchmark"][0] if raw["Benchmark"] else ""
    for piece, reasons in sorted(failed.items()):
        numbers = range(piece.first_run, piece.first_run + (runs if piece.runs is None else piece.runs))
        reason = reasons[0] if len(set(reasons)) == 1 else "; ".join(f"attempt {i + 1}: {r}" for i, r in enumerate(reasons))
        for annotation, metric, unit in series:
            for run in numbers:
                fill = {"Annotation": annotation, "Value": math.nan, "Metric": metric, "Kernel": "", "GPU": "", "Host": "",
                        "Unit": unit, "Benchmark": benchmark, "Run": run, "Device": -1, "DeviceUUID": "", "Failure": reason}
                for c, values in raw.items():
                    values.append(fill.get(c))
                index.append(piece.config)


def _merged_fingerprint(fingerprints: list[dict]) -> dict | None:
    """The first worker's fingerprint; with several GPUs the per-device fields give way to a list."""
    if not fingerprints:
        return None
    fp = dict(fingerprints[0])
    seen = {f.get("uuid"): f for f in fingerprints}
    if len(seen) > 1:
        fp.update(uuid=None, cuda_ordinal=None, nvml_index=None)
        fp["devices"] = [{"uuid": u, "gpu_name": f.get("gpu_name"), "host": f.get("hostname")} for u, f in seen.items()]
    return fp
