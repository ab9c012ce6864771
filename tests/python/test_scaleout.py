"""Scale-out on this machine: devices= (kprof's own worker processes) and executor= with a
concurrent.futures.ProcessPoolExecutor, every worker replaying the H200 recording of the seed's
5-size matmul sweep (tests/python/replay_backend.py; the rest of the path is the real one).
Dask: test_scaleout_dask.py; Slurm: test_scaleout_slurm.py."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import pickle
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

import kprof
from kprof import ConfigError, WorkerError, scaleout
from kprof.results import WORKER_COLUMNS

from scaleout_support import (
    HERE, RUNS, SILENT, SIZES, assert_matches_reference, ctrl_c_after_three_pieces, matmul, pieces_done,
)


def sweep(configs=SIZES, **options):
    options.setdefault("runs", RUNS)
    return kprof.analyze.kernel(configs=configs, verbosity=SILENT, **options)(matmul)


def spawn_pool(n=2):
    return concurrent.futures.ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("spawn"))


# -- devices= --------------------------------------------------------------------------------------


def test_devices_queue_feeds_whoever_is_free_and_merges_one_table(replay, monkeypatch):
    # The 8192 sweep first and ~700x the 512 one: one worker measures it while the other takes
    # every other configuration from the queue (a static split would give each worker two or three).
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-8")
    order = [8192, 512, 1024, 2048, 4096]
    results = sweep(order, devices=[0, 1])()
    runs = replay.runs()
    big = {r.pid for r in runs if r.n == 8192}
    assert len(big) == 1 and {r.n for r in runs if r.pid in big} == {8192}
    assert {r.device for r in runs} == {"4", "6"}, "each worker pinned to its GPU before it ran anything"
    df = results.to_dataframe()
    assert df["n"].tolist() == order, "rows in the caller's configuration order"
    worker = {r.n: r.device for r in runs}
    assert [("4", "6")[d] for d in df["Device"]] == [worker[n] for n in order], "Device: the caller's ordinal"
    assert [u.endswith("-" + worker[n]) for u, n in zip(df["DeviceUUID"], order)] == [True] * 5
    assert replay.complete() == {n: 1 for n in SIZES}


def test_devices_results_equal_one_process(replay):
    assert_matches_reference(sweep(devices="all")())


def test_two_workers_sharing_one_gpu_give_one_row_per_config(replay):
    results = sweep(devices=[0, 0], runs_per_task=5)()
    df = results.to_dataframe()
    assert len(df) == 5 and (df["NumRuns"] == RUNS).all() and (df["Device"] == 0).all()
    assert len({r.pid for r in replay.runs()}) == 2


def test_devices_killed_worker_is_retried_on_the_other_one_and_nothing_finished_is_lost(replay, monkeypatch):
    monkeypatch.setenv("REPLAY_KILL", f"2048:{replay.marker('killed')}")
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-9")
    results = sweep(devices=[0, 1])()
    runs = replay.runs()
    killed = {r.pid for r in runs if r.n == 2048 and r.run == 0}
    assert len(killed) == 2, "run 0 of 2048 measured by the killed worker, then again"
    first = min(killed, key=lambda pid: min(r.t for r in runs if r.pid == pid))
    retried = (killed - {first}).pop()
    assert {r.device for r in runs if r.pid == first} != {r.device for r in runs if r.pid == retried}
    assert replay.complete() == {n: 1 for n in SIZES}, "every configuration finished exactly once"
    df = results.to_dataframe()
    assert (df["NumRuns"] == RUNS).all() and (df["Failure"] == "").all()


def test_ctrl_c_stops_every_worker_within_a_second_and_keeps_what_finished(replay, tmp_path, monkeypatch):
    # A real Ctrl-C: SIGINT to the whole process group of a script (its workers included). The
    # script has no cloudpickle, so its __main__ function travels by name.
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-7")  # 8192: 2 s a run
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "scaleout_driver.py"), "sweep", str(out) + os.sep],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not pieces_done(out, 3) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert pieces_done(out, 3), proc.communicate(timeout=10)
    pids = {r.pid for r in replay.runs()}
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()
    while any(alive(p) for p in pids) and time.monotonic() - sent < 5:
        time.sleep(0.01)
    stopped = time.monotonic() - sent
    stdout, stderr = proc.communicate(timeout=30)
    assert stopped < 1.0, f"workers still alive {stopped:.2f} s after Ctrl-C; the script's stderr: {stderr}"
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr, stderr
    assert "interrupted; the" in stderr, stderr
    partial = stderr.split("are in ")[-1].split()[0]
    kept = kprof.load(partial).raw()
    assert set(kept["n"]) >= {512, 1024, 2048} and 8192 not in set(kept["n"])
    assert (kept.groupby("n").size() == RUNS).all(), "only finished configurations, whole"


def test_a_ctrl_c_through_another_thread_is_deferred_until_the_worker_started():
    # The signal is process-directed: the kernel gives it to a thread that does not block it (here
    # a helper thread started before the block, as numpy's or torch's pool threads are; a thread
    # started inside would inherit the blocked mask), and Python runs the handler in the main
    # thread inside the block. It must come out after the block, not inside it.
    code = (
        "import os, signal, threading, time\n"
        "from kprof.scaleout import _sigint_deferred\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "go = threading.Event()\n"
        "t = threading.Thread(target=lambda: (go.wait(), os.kill(os.getpid(), signal.SIGINT)))\n"
        "t.start()\n"
        "done = False\n"
        "try:\n"
        "    with _sigint_deferred():\n"
        "        go.set(); t.join()\n"
        "        for _ in range(200): time.sleep(0.001)\n"
        "        done = True\n"
        "    print('no interrupt')\n"
        "except KeyboardInterrupt:\n"
        "    print('after the block' if done else 'inside the block')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "after the block", (out.stdout, out.stderr)


def test_ctrl_c_while_the_workers_start_stops_them_all(replay, tmp_path, monkeypatch):
    # Ctrl-C as soon as the call has made its folder (the sign that the sweep started): it lands
    # while the workers are being spawned or are importing the script. The script has other
    # threads by then (numpy's, imported with pandas when the benchmark is decorated), through
    # which the signal can arrive while the spawning thread blocks it.
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-7")  # a sweep that finished instead would take 20 s
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "scaleout_driver.py"), "sweep", str(out) + os.sep],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while not list(out.glob("partial-*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    assert list(out.glob("partial-*")), proc.communicate(timeout=10)
    os.killpg(proc.pid, signal.SIGINT)
    sent = time.monotonic()

    def workers():  # the group but the script and multiprocessing's resource tracker (it ends with the script)
        return [p for p in group(proc.pid) if p != proc.pid and b"resource_tracker" not in cmdline(p)]

    while workers() and time.monotonic() - sent < 5:
        time.sleep(0.01)
    stopped = time.monotonic() - sent
    stdout, stderr = proc.communicate(timeout=30)
    assert stopped < 1.0, f"workers still alive {stopped:.2f} s after Ctrl-C; the script's stderr: {stderr}"
    assert proc.returncode != 0 and stderr.rstrip().endswith("KeyboardInterrupt"), stderr
    exited = time.monotonic()
    while group(proc.pid) and time.monotonic() - exited < 5:
        time.sleep(0.01)
    assert not group(proc.pid), f"still running {time.monotonic() - exited:.2f} s after the script ended"
    assert not list(out.glob("partial-*")), f"nothing finished: no folder left; the script's stderr: {stderr}"


def test_ctrl_c_just_after_a_worker_was_spawned_raises_it_and_stops_that_worker(replay, monkeypatch):
    # The narrowest spot of start-up: the worker process exists, kprof has not stored its pipe yet.
    spawned = []
    start = multiprocessing.context.SpawnProcess.start

    def start_then_ctrl_c(process):
        start(process)
        spawned.append(process)
        raise KeyboardInterrupt

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", start_then_ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        sweep(devices=[0, 1])()
    assert len(spawned) == 1 and not spawned[0].is_alive()
    assert not replay.runs()


def cmdline(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


def group(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                state, _, pgrp = f.read().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if int(pgrp) == pgid and state != "Z":
            found.append(int(entry))
    return found


def test_a_worker_refuses_to_run_when_cuda_started_before_it_was_pinned(replay, tmp_path):
    done = subprocess.run(
        [sys.executable, os.path.join(HERE, "scaleout_driver.py"), "cuda-at-import", str(tmp_path) + os.sep],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 1 and "kprof.exceptions.WorkerError: the worker for device" in done.stderr, done.stderr
    assert "CUDA was started while this worker imported" in done.stderr and "scaleout_driver.py" in done.stderr
    assert "if __name__ == '__main__':" in done.stderr
    assert not replay.runs()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_function_in_a_module_travels_by_name_without_cloudpickle(replay, monkeypatch):
    monkeypatch.setitem(sys.modules, "cloudpickle", None)
    from scaleout_support import top_level_sweep, top_level_sweep_5_runs

    payload = scaleout.pack(top_level_sweep.__wrapped__, top_level_sweep._kprof_settings, [(n,) for n in SIZES], True)
    assert pickle.loads(payload)[:3] == ("ref", "scaleout_support", "top_level_sweep")
    assert_matches_reference(top_level_sweep())
    other = top_level_sweep_5_runs._kprof_settings
    assert pickle.loads(scaleout.pack(top_level_sweep.__wrapped__, other, [], True))[2] == "top_level_sweep_5_runs"
    assert (top_level_sweep_5_runs().to_dataframe()["NumRuns"] == 5).all()


# -- executor=ProcessPoolExecutor ----------------------------------------------------------------


def test_process_pool_queue_merge_and_shards(replay):
    with spawn_pool() as pool:
        results = sweep(executor=pool, configs_per_task=2)()
    assert_matches_reference(results)
    assert replay.complete() == {n: 1 for n in SIZES}


def test_process_pool_worker_killed_mid_shard(replay, monkeypatch):
    # Shards of 3: [512, 1024, 2048] dies at 1024, after 512 was written. concurrent.futures then
    # breaks the whole pool; kprof reads back what finished, goes on with a new pool and says so.
    monkeypatch.setenv("REPLAY_KILL", f"1024:{replay.marker('killed')}")
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-9")
    with spawn_pool() as pool:
        with pytest.warns(RuntimeWarning, match="ProcessPoolExecutor died"):
            results = sweep(executor=pool, configs_per_task=3)()
    assert replay.complete() == {n: 1 for n in SIZES}, "512 (finished before the kill) was not measured again"
    df = results.to_dataframe()
    assert df["n"].tolist() == SIZES and (df["NumRuns"] == RUNS).all() and (df["Failure"] == "").all()


def test_failures_are_retried_once_then_reported_as_rows_with_the_reason(replay, monkeypatch):
    monkeypatch.setenv("REPLAY_RAISE", f"1024:1:{replay.marker('raised')}")
    with spawn_pool() as pool:
        assert (sweep(executor=pool)().to_dataframe()["NumRuns"] == RUNS).all(), "one failure: retried"
    monkeypatch.setenv("REPLAY_RAISE", f"4096:-1:{replay.marker('always')}")
    with spawn_pool() as pool, pytest.warns(RuntimeWarning, match=r"1 of 5 configurations .* failed 2 times"):
        results = sweep(executor=pool)()
    df = results.to_dataframe()
    bad = df[df.n == 4096].iloc[0]
    assert bad.NumRuns == 0 and bad.Device == -1 and "replayed failure at n=4096" in bad.Failure
    assert ((df[df.n != 4096].NumRuns == RUNS) & (df[df.n != 4096].Failure == "")).all()
    monkeypatch.setenv("REPLAY_RAISE", f"512:-1:{replay.marker('all')}")
    with spawn_pool() as pool, pytest.raises(WorkerError, match="no configuration could be measured.*replayed failure"):
        sweep(configs=[512], executor=pool)()


def test_process_pool_ctrl_c_stops_tasks_and_keeps_what_finished(replay, tmp_path, monkeypatch):
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-8")  # 8192: 0.22 s a run
    out = tmp_path / "out"
    with spawn_pool() as pool:
        kept = ctrl_c_after_three_pieces(sweep(executor=pool, output_prefix=str(out) + os.sep), out, replay)
        assert set(kept["n"]) >= {512, 1024, 2048} and (kept.groupby("n").size() == RUNS).all()
        pool.submit(int, "1").result(timeout=30)  # the caller's executor still works


# -- what a scale-out call writes and returns --------------------------------------------------------


def test_output_files_and_load_round_trip(replay, tmp_path):
    out = tmp_path / "res"
    results = sweep(devices=[0, 1], output_csv=True, output_prefix=str(out) + os.sep)()
    raw_path, processed_path = results.files
    assert re.fullmatch(r"profiled_data-matmul-\d+\.csv", os.path.basename(raw_path))
    assert not list(out.glob("partial-*")), "the piece files are gone once the complete files are written"
    loaded = kprof.load(raw_path)
    assert loaded.params == ["n"]
    df, again = results.to_dataframe(), loaded.to_dataframe()
    assert list(again.columns[-3:]) == list(WORKER_COLUMNS)
    assert again["Device"].tolist() == df["Device"].tolist() and again["AvgValue"].tolist() == df["AvgValue"].tolist()


def pooled(raw_devices, gpus, pool):
    """A raw table of one configuration, 4 runs on each of the given devices."""
    raw = {c: [] for c in (*kprof._backend.RAW_COLUMNS[:9], "n", "Benchmark", "Run", *WORKER_COLUMNS)}
    for k, (dev, gpu) in enumerate(zip(raw_devices, gpus)):
        for r in range(4):
            row = dict(Annotation="a", Value=100.0 + 10 * k + r, Metric="m", Kernel="k", GPU=gpu, Host="h",
                       ComputeClock=None, MemoryClock=None, Unit="ns", n=1, Benchmark="b", Run=4 * k + r,
                       Device=dev, DeviceUUID=f"GPU-{dev}", Failure="")
            for c in raw:
                raw[c].append(row[c])
    return kprof.ProfileResults(raw, ["n"], key_columns=WORKER_COLUMNS, pool_devices=pool).to_dataframe()


def test_statistics_pool_gpus_only_when_asked_and_never_across_models():
    apart = pooled([0, 1], ["H200", "H200"], pool=False)
    assert apart["Device"].tolist() == [0, 1] and apart["NumRuns"].tolist() == [4, 4]
    together = pooled([0, 1], ["H200", "H200"], pool=True)
    assert together["NumRuns"].tolist() == [8] and together["Device"].tolist() == ["0|1"]
    assert together["DeviceUUID"].tolist() == ["GPU-0|GPU-1"] and together["AvgValue"].tolist() == [106.5]
    models = pooled([0, 1, 2], ["H200", "H100", "H200"], pool=True)
    assert sorted(zip(models["GPU"], models["Device"], models["NumRuns"])) == [("H100", 1, 4), ("H200", "0|2", 8)]


def test_pool_devices_end_to_end(replay, monkeypatch):
    # Two run ranges of each configuration, started on both workers at once.
    results = sweep(configs=[4096], devices=[0, 1], runs_per_task=5)()
    assert results.to_dataframe()[["Device", "NumRuns"]].values.tolist() == [[0, 5], [1, 5]]
    assert sorted(results.raw()["Run"]) == list(range(RUNS)), "run ranges keep their numbers"
    pooled_df = sweep(configs=[4096], devices=[0, 1], runs_per_task=5, pool_devices=True)().to_dataframe()
    assert pooled_df[["Device", "NumRuns"]].values.tolist() == [["0|1", 10]]
    monkeypatch.setenv("REPLAY_GPU_MODELS", "0:NVIDIA H200,1:NVIDIA H100")
    mixed = sweep(configs=[4096], devices=[0, 1], runs_per_task=5, pool_devices=True)().to_dataframe()
    assert sorted(mixed["GPU"]) == ["NVIDIA H100", "NVIDIA H200"] and (mixed["NumRuns"] == 5).all()


# -- bad options and functions: one clear error before any work ------------------------------------


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(devices=[0], executor=object()), "not both"),
        (dict(devices="some"), "devices must be 'all'"),
        (dict(devices=[]), "at least one"),
        (dict(devices=[0, -1]), "ints >= 0"),
        (dict(executor=object()), r"submit\(fn, \*args\)"),
        (dict(executor=concurrent.futures.ThreadPoolExecutor(1)), "runs tasks in this process"),
        (dict(devices=[0], backend="ncu"), "backend='ncu'"),
        (dict(devices=[0], thermal_device=0), "each worker guards"),
        (dict(devices=[0], runs_per_task=2, target_rsd=1.0), "target_rsd"),
        (dict(pool_devices=True), "only applies with devices"),
        (dict(runs_per_task=2), "only applies with devices"),
        (dict(devices=[0], worker_timeout=5), "worker_timeout applies to executor"),
        (dict(executor=concurrent.futures.ProcessPoolExecutor(1), worker_timeout=0), "positive number"),
        (dict(devices=[0], configs_per_task=0), "configs_per_task must be"),
        (dict(devices=[0], pool_devices=1), "pool_devices must be True or False"),
        (dict(devices=[0], info_collectors=[("Device", lambda: 1, "once")]), "columns devices="),
    ],
)
def test_bad_options_raise_when_decorating(options, message):
    with pytest.raises(ConfigError, match=message):
        kprof.analyze.kernel(configs=[1], **options)(matmul)


def test_devices_that_do_not_exist_raise_before_any_work(replay, monkeypatch):
    with pytest.raises(ConfigError, match=r"no CUDA device \[2\] here; this process sees 2"):
        sweep(devices=[0, 2])()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(ConfigError, match="shows no NVIDIA GPU"):
        sweep(devices="all")()
    assert not replay.runs()


def test_a_function_that_cannot_travel_raises_before_any_work(replay, monkeypatch):
    lock = threading.Lock()

    def holds_a_lock(n):
        with lock, kprof.annotate("matmul"):
            pass

    with spawn_pool() as pool:
        bench = kprof.analyze.kernel(configs=SIZES, executor=pool, verbosity=SILENT)(holds_a_lock)
        with pytest.raises(ConfigError, match="cloudpickle could not pickle it.*lock"):
            bench()
        monkeypatch.setitem(sys.modules, "cloudpickle", None)
        with pytest.raises(ConfigError, match="defined inside another function, and cloudpickle .* is not installed"):
            bench()
    assert not replay.runs()


def test_workers_sharing_a_gpu_take_turns_so_their_pieces_never_overlap(replay, monkeypatch):
    # Two workers measuring on one GPU at once read the 4096 matmul 55 % long on the H200, and a
    # GPU's counters serve one process at a time: workers sharing a GPU measure one piece at a
    # time, with the call's own settings.
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-6")  # 512: 15 ms a run, 1024: 60 ms, 2048: 0.34 s
    results = sweep([2048, 512, 1024], runs=3, devices=[0, 0])()
    runs = sorted(replay.runs(), key=lambda r: r.t)
    assert len({r.pid for r in runs}) == 2, "both workers measured"
    blocks = [(r.pid, r.n) for r in runs]
    blocks = [b for i, b in enumerate(blocks) if i == 0 or blocks[i - 1] != b]
    assert len(blocks) == len(set(blocks)) == 3, f"a piece's runs were interleaved with another worker's: {blocks}"
    df = results.to_dataframe()
    assert df["NumRuns"].tolist() == [3] * 3 and set(df["Device"]) == {0}


def test_a_gpu_turn_is_exclusive_and_a_killed_holder_frees_it(tmp_path):
    lock = str(tmp_path / "gpu0.lock")
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from kprof import scaleout; t = scaleout._GpuTurn(sys.argv[1]); t.__enter__(); "
         "print('held', flush=True); time.sleep(60)", lock],
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        got = threading.Event()

        def take():
            with scaleout._GpuTurn(lock):
                got.set()

        t = threading.Thread(target=take, daemon=True)
        t.start()
        assert not got.wait(0.5), "a second worker waits while the GPU is taken"
        holder.kill()  # kill -9: the kernel drops the lock with the process
        assert got.wait(10), "the turn passes when its holder dies"
    finally:
        holder.kill()
        holder.wait()
    with scaleout._GpuTurn(None):  # a GPU of its own: no lock at all
        pass
    assert scaleout._shared_gpus([0, 1, 0, 2, 2]) == [0, 2]

