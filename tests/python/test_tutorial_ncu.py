"""Steps 9 and 10 of the seed tutorial (``examples/tutorial.py``) without a GPU: the sweep under a
fake ``ncu`` (``tests/fixtures/fake-ncu``: the script runs again under it and only the ncu
benchmark runs there, through the engine) against the default backend (here the replay of the H200
sgemm recording, ``replay_backend.py``), then the files the ncu run kept and the launches in its
report's export."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from test_ncu import _under_fake_ncu

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples")

SCRIPT = f"""
import json, os, sys
sys.path[:0] = [{EXAMPLES!r}, {HERE!r}]
import kprof
if not os.environ.get("KPROF_NCU_CHILD"):
    from replay_backend import ReplayBackend
    kprof._backend.set_backend(ReplayBackend())
import tutorial


def sgemm(n):
    with kprof.annotate("matmul"):
        pass


rows, res = tutorial.step9_ncu_vs_cupti(sgemm, os.environ["OUT_PREFIX"], configs=[512, 1024], runs=3)
kept = tutorial.step10_keep_report(res)
print("RESULT " + json.dumps({{"rows": rows, "kept": kept}}, default=float))
"""


def test_steps_9_and_10_compare_the_backends_and_keep_the_report(tmp_path):
    out = tmp_path / "out"
    script, env = _under_fake_ncu(tmp_path, "step9.py", SCRIPT, OUT_PREFIX=f"{out}/")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert p.returncode == 0 and lines, f"{p.stdout}\n{p.stderr}"
    got = json.loads(lines[-1][len("RESULT "):])
    rows = got["rows"]
    assert [r["n"] for r in rows] == [512, 1024], rows
    # The fake ncu's durations: 1000 ns x (config + 1) + 10 ns x run; the replay: the H200 recording.
    assert [round(r["ncu_ms"] * 1e6) for r in rows] == [1010, 2010], rows
    assert all(r["cupti_ms"] > 0 and r["ratio"] == r["cupti_ms"] / r["ncu_ms"] for r in rows), rows
    kept = got["kept"]
    report, log, export, raw_csv, processed_csv = kept["files"]
    assert report.endswith(".ncu-rep") and log.endswith(".log") and export.endswith(".csv"), kept
    assert os.path.basename(raw_csv).startswith("profiled_data-"), kept
    assert os.path.basename(processed_csv).startswith("processed_data-"), kept
    assert all(os.path.exists(f) for f in kept["files"]), kept
    assert all(os.path.dirname(f) == str(out) for f in (raw_csv, processed_csv)), kept
    # One launch per recorded run (warm-ups are not profiled): 2 sizes x 3 runs.
    assert kept["launches"] == 6 and kept["first"] == ["kern_0", 1000.0], kept
    # The printed steps.
    assert "wall time for 6 runs: Nsight Compute" in p.stdout and "profiled kernel launches" in p.stdout, p.stdout
