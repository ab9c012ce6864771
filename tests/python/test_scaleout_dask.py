"""Scale-out on a dask.distributed LocalCluster (two worker processes, one thread each: one GPU
per task), every worker replaying the H200 recording (tests/python/replay_backend.py). The
cluster's workers get their environment when they start (the nanny's env), so the replay
switches are set once here; the kill uses a size no other test measures.

dask's own retry of a task whose worker died is off (allowed-failures=0), so that the future
fails with KilledWorker and kprof's retry is the one tested."""

from __future__ import annotations

import os
import time

import pytest

dask = pytest.importorskip("dask", reason="the dask tests need kprof[dask] (dask[distributed])")
distributed = pytest.importorskip("distributed")

import kprof  # noqa: E402

from scaleout_support import (  # noqa: E402
    HERE, RUNS, SILENT, SIZES, Replay, assert_matches_reference, ctrl_c_after_three_pieces, matmul,
)

KILL_AT = 3000  # not in the recording: replayed as 3000 ns, measured by the kill test only


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dask")
    env = {
        "KPROF_WORKER_BACKEND": "replay_backend:ReplayBackend",
        "PYTHONPATH": os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH")) if p),
        "CUDA_VISIBLE_DEVICES": "0",
        "REPLAY_LOG": str(tmp / "runs.log"),
        "REPLAY_TIME_SCALE": "1e-8",  # 8192: 0.22 s a run
        "REPLAY_KILL": f"{KILL_AT}:{tmp / 'killed'}",
    }
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, env=env
        ) as c, distributed.Client(c) as client:
            yield client, Replay(tmp, tmp / "runs.log")


def since(replay: Replay, t0: float):
    return [r for r in replay.runs() if r.t >= t0]


def sweep(configs=SIZES, **options):
    return kprof.analyze.kernel(configs=configs, runs=RUNS, verbosity=SILENT, **options)(matmul)


def test_dask_queue_and_merge(cluster):
    client, replay = cluster
    t0 = time.time()
    assert_matches_reference(sweep(executor=client, configs_per_task=2)())
    runs = since(replay, t0)
    assert len({r.pid for r in runs}) == 2, "both workers took tasks"
    assert sorted((r.n, r.run) for r in runs) == sorted((n, r) for n in SIZES for r in range(RUNS))


def test_dask_worker_killed_mid_shard_is_retried_and_nothing_finished_is_lost(cluster, caplog):
    client, replay = cluster
    t0 = time.time()
    configs = [512, KILL_AT, 2048]
    with caplog.at_level("INFO", logger="kprof.scaleout"):
        df = sweep(configs, executor=client, configs_per_task=3)().to_dataframe()
    retried = [r.getMessage() for r in caplog.records if "trying it once more" in r.getMessage()]
    assert len(retried) == 2 and all("KilledWorker" in m for m in retried), "kprof retried 3000 and 2048"
    assert df["n"].tolist() == configs and (df["NumRuns"] == RUNS).all() and (df["Failure"] == "").all()
    runs = since(replay, t0)
    assert sum(1 for r in runs if r.n == 512) == RUNS, "512 finished before the kill: read back, not measured again"
    killed = {r.pid for r in runs if r.n == KILL_AT and r.run == 0}
    assert len(killed) == 2 and sum(1 for r in runs if r.n == KILL_AT) == RUNS + 1
    assert sum(1 for r in runs if r.n == 2048) == RUNS


def test_dask_ctrl_c_stops_tasks_within_a_second_and_keeps_what_finished(cluster, tmp_path):
    client, replay = cluster
    out = tmp_path / "out"
    kept = ctrl_c_after_three_pieces(sweep(executor=client, output_prefix=str(out) + os.sep), out, replay)
    assert set(kept["n"]) >= {512, 1024, 2048} and 8192 not in set(kept["n"])
    assert (kept.groupby("n").size() == RUNS).all()
    assert client.submit(int, "1").result(timeout=30) == 1, "the cluster still works"
