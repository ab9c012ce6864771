"""The benchmarks of ``benches/`` report ratios from their recorded ``BENCH`` lines: the tables and
verdicts they print are re-derived here from logs written the way a GPU run writes them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from bench_support import load_module

BENCHES = Path(__file__).resolve().parents[2] / "benches"


def load(name: str):
    return load_module(BENCHES / f"{name}.py")


def log(tmp_path: Path, rows: list[dict]) -> Path:
    p = tmp_path / "bench.log"
    p.write_text("".join(f"noise\nBENCH {json.dumps(r)}\n" for r in rows))
    return p


def test_large_sweep_ratio_and_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mod = load("large_sweep")
    rows = [
        {"tool": "plain", "wall_s": 2.0, "gpu": "NVIDIA H100 80GB HBM3"},
        {"tool": "kprof", "wall_s": 2.5},
        {"tool": "kprof-records", "wall_s": 2.2},
    ]
    text = mod.report(rows)
    assert "kprof (default) vs the same loop without a profiler: 1.25x (target 1.3x: met)" in text
    assert "GPU: NVIDIA H100 80GB HBM3" in text
    rows[1]["wall_s"] = 3.0
    assert "1.50x (target 1.3x: not met)" in mod.report(rows)
    # --from-log reads the BENCH lines of a recording and nothing else.
    argv, sys.argv = sys.argv, ["large_sweep.py", "--from-log", str(log(tmp_path, rows))]
    try:
        assert mod.bench_log.main(mod.__doc__, lambda a: [], mod.report, mod.add_args) == 0
    finally:
        sys.argv = argv
    assert "1.50x" in capsys.readouterr().out


def test_small_kernels_samples_per_second() -> None:
    mod = load("small_kernels")
    rows = [
        {"tool": "plain", "wall_s": 0.5, "samples_per_s": 40_000.0},
        {"tool": "kprof", "wall_s": 2.5, "samples_per_s": 8_000.0, "gpu": "NVIDIA H200"},
    ]
    text = mod.report(rows)
    assert "kprof (default): 8,000 samples/s (target 10,000: not met)" in text
    rows[1]["samples_per_s"] = 12_000.0
    assert "(target 10,000: met)" in mod.report(rows)
    # Where each timing run's host time went, per run, from the counter_cost() delta.
    rows[1]["cost"] = {"timing_runs": 100.0, "run_l2_flush_s": 0.002, "run_conditions_s": 0.01, "run_closure_s": 0.03,
                       "run_sync_s": 0.004, "records_flushes": 3.0, "records_flush_s": 0.25, "counter_runs": 50.0,
                       "counter_run_s": 0.5}
    assert ("kprof: 100 timing runs, per run: cache flush 20 us, conditions 100 us, closure 300 us, sync 40 us; "
            "3 records flushes 0.250 s; 50 counter passes 0.500 s") in mod.report(rows)


def test_step6_ratio_and_metric_differences() -> None:
    mod = load("step6_vs_nsight")
    sm = "fp16 matmul 4096|sm__throughput.avg.pct_of_peak_sustained_elapsed"
    dur = "fp16 matmul 4096|gpu__time_duration.sum"
    rows = [
        {"tool": "kprof", "wall_s": 1.0, "values": {sm: 80.0, dur: 101.0}, "gpu": "NVIDIA H200"},
        {"tool": "nsight", "wall_s": 12.0, "values": {sm: 80.3, dur: 100.0}},
        {"tool": "kprof", "wall_s": 1.2, "values": {sm: 80.1, dur: 101.0}},
        {"tool": "nsight", "wall_s": 10.0, "values": {sm: 80.4, dur: 100.0}},
    ]
    text = mod.report(rows)
    # Medians of the processes: 11.0 / 1.1.
    assert "nsight-python / kprof: 10.0x (target 10x: met)" in text
    # Percentages differ in points, other metrics in percent.
    assert "-0.30" in text and "+1.00 %" in text
