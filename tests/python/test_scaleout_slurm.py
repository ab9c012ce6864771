"""Scale-out on a real single-node Slurm (Debian's slurm-wlm and munge, slurmctld + slurmd on this
machine, started and stopped here by scripts/slurm-local.sh), the shards running as a job array
through submitit, every task replaying the H200 recording (tests/python/replay_backend.py).

This Slurm has no accounting database, so sacct cannot say that a killed job is over: kprof's
heartbeat (worker_timeout) is what notices it. Skipped, with the script's message, only where
slurm-wlm and munge are missing and cannot be installed (not root, no apt)."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time

import pytest

submitit = pytest.importorskip("submitit", reason="the Slurm tests need kprof[slurm] (submitit)")

import kprof  # noqa: E402

from scaleout_support import (  # noqa: E402
    HERE, RUNS, SILENT, SIZES, assert_matches_reference, ctrl_c_after_three_pieces, matmul,
)

SCRIPT = os.path.join(HERE, "..", "..", "scripts", "slurm-local.sh")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slurm")
    started = subprocess.run([SCRIPT, "start", str(folder)], capture_output=True, text=True, timeout=600)
    if started.returncode == 3:
        pytest.skip(started.stderr.strip())
    assert started.returncode == 0, started.stderr
    conf = started.stdout.strip().splitlines()[-1].split("=", 1)[1]
    logging.getLogger("submitit").setLevel(logging.ERROR)  # "Bypassing sacct error": no accounting here
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", conf)
        yield conf
    subprocess.run([SCRIPT, "stop", str(folder)], capture_output=True, timeout=60)


@pytest.fixture
def executor(slurm, tmp_path):
    ex = submitit.SlurmExecutor(folder=str(tmp_path / "jobs"))
    ex.update_parameters(time=10, cpus_per_task=1, mem="300M")
    return ex


def sweep(configs=SIZES, **options):
    return kprof.analyze.kernel(configs=configs, runs=RUNS, verbosity=SILENT, **options)(matmul)


def test_slurm_job_array_merge_and_a_task_killed_mid_shard(replay, executor, monkeypatch, caplog, tmp_path):
    # Shards of 2 go out as one job array of 3; the first dies at 1024 (SIGKILL) after 512 was
    # written. Without accounting sacct never says the job is over: the heartbeat does, after 2 s.
    monkeypatch.setenv("REPLAY_KILL", f"1024:{replay.marker('killed')}")
    with caplog.at_level("INFO", logger="kprof.scaleout"):
        results = sweep(executor=executor, configs_per_task=2, worker_timeout=2,
                        output_prefix=str(tmp_path / "out") + os.sep)()
    assert_matches_reference(results)
    retried = [r.getMessage() for r in caplog.records if "trying it once more" in r.getMessage()]
    assert len(retried) == 1 and "configuration 1 " in retried[0] and "no heartbeat for 2 s" in retried[0], retried
    assert replay.complete() == {n: 1 for n in SIZES}, "512 (finished before the kill) was not measured again"
    logs = [p.name for p in (tmp_path / "jobs").glob("*_log.out")]
    arrays = [m.group(1) for m in map(re.compile(r"(\d+)_(\d+)_0_log\.out").fullmatch, logs) if m]
    assert len(arrays) == 3 and len(set(arrays)) == 1 and len(logs) == 4, f"one array of 3, then the retry: {logs}"


def test_slurm_ctrl_c_cancels_the_jobs_and_keeps_what_finished(replay, executor, monkeypatch, tmp_path):
    monkeypatch.setenv("REPLAY_TIME_SCALE", "1e-8")  # 8192: 0.22 s a run
    out = tmp_path / "out"
    kept = ctrl_c_after_three_pieces(sweep(executor=executor, output_prefix=str(out) + os.sep), out, replay)
    assert set(kept["n"]) >= {512, 1024, 2048} and 8192 not in set(kept["n"])
    assert (kept.groupby("n").size() == RUNS).all()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip():
        time.sleep(0.2)
    assert not subprocess.run(["squeue", "-h"], capture_output=True, text=True).stdout.strip(), "every job is gone"
