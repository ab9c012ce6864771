"""Recorded H200 results (tests/fixtures/h200-python, see its README) re-read through the offline
path: the processed schema the package wrote there, and `kprof summarize` on the Rust API's raw CSV
reproducing the statistics from the raw values."""

from __future__ import annotations

import csv
import os
import statistics

import pandas as pd
import pytest

from kprof import _core
from kprof.results import PROCESSED_COLUMNS

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "h200-python")
T975 = {9: 2.2621571627409915, 19: 2.093024054408263}  # scipy.stats.t.ppf(0.975, df)


def test_recorded_processed_tables_have_nsight_order_then_ours():
    df = pd.read_csv(os.path.join(HERE, "step3.csv"))
    expected = [c for c in PROCESSED_COLUMNS if c not in ("<params>", "NormalizationValue")]
    expected[2:2] = ["n"]
    assert list(df.columns[: len(expected)]) == expected
    # Then the run conditions measured there (NVML), aggregated per row as X_Avg/_Std/_Min/_Max.
    rest = list(df.columns[len(expected):])
    allowed = {f"{c}{s}" for c in _core.CONDITION_COLUMNS for s in _core.AGGREGATE_SUFFIXES}
    allowed |= set(_core.CONDITION_COLUMNS) | {_core.THROTTLED_RUNS_COLUMN}
    assert "SMClockMHz_Avg" in rest and set(rest) <= allowed, rest
    assert (df.NumRuns == 20).all() and (df.GPU == "NVIDIA H200").all() and (df.Unit == "ns").all()
    half = df.CI95_Upper - df.AvgValue
    assert half.tolist() == pytest.approx((T975[19] * df.StdDev / 20 ** 0.5).tolist(), rel=1e-9)


def test_recorded_normalized_rows_carry_ratio_statistics():
    df = pd.read_csv(os.path.join(HERE, "step5-normalized.csv"))
    fp16 = df[(df.Annotation == "fp16") & (df.Metric == "gpu__time_duration.sum")]
    assert (fp16.Unit == "x").all() and (fp16.Normalized == "fp32").all()
    assert ((fp16.CI95_Lower < fp16.AvgValue) & (fp16.AvgValue < fp16.CI95_Upper)).all()
    assert (fp16.AvgValue < 1).all()  # fp16 is faster than fp32 at every size on the H200


def test_summarize_reproduces_statistics_of_the_recorded_raw_csv(tmp_path, capfd):
    raw_path = os.path.join(HERE, "sgemm-raw.csv")
    out = tmp_path / "processed.csv"
    assert _core.cli_main(["kprof", "summarize", raw_path, "-o", str(out)]) == 0
    capfd.readouterr()
    with open(raw_path) as f:
        rows = list(csv.DictReader(f))
    processed = pd.read_csv(out)
    assert len(processed) == 5
    for _, row in processed.iterrows():
        values = [float(r["Value"]) for r in rows if int(r["n"]) == row.n]
        mean, sd = statistics.mean(values), statistics.stdev(values)
        assert row.NumRuns == len(values) == 10
        assert row.AvgValue == pytest.approx(mean, rel=1e-12)
        assert row.StdDev == pytest.approx(sd, rel=1e-9)
        assert row.CI95_Lower == pytest.approx(mean - T975[9] * sd / 10 ** 0.5, rel=1e-9)
        assert row.Median == pytest.approx(statistics.median(values), rel=1e-12)


def test_recorded_counter_tables_classify_as_the_seed_does():
    """Steps 6 and 7 recorded on the H200 with in-process hardware counters (CUPTI Range Profiler)."""
    d6 = pd.read_csv(os.path.join(HERE, "step6.csv"))
    tab = d6.pivot(index="Annotation", columns="Metric", values="AvgValue")
    sm = tab["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    dram = tab["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert sm["fp16 matmul 4096"] > dram["fp16 matmul 4096"]  # compute-bound
    assert dram["x * 2 (256 MB)"] > sm["x * 2 (256 MB)"]  # memory-bound
    assert set(d6[d6.Metric.str.contains("pct")].Unit) == {"%"}  # spelled as ncu exports it
    d7 = pd.read_csv(os.path.join(HERE, "step7.csv"))
    moved = d7[d7.Metric.str.startswith("dram__bytes")].groupby("Annotation").AvgValue.sum()
    assert set(d7[d7.Metric.str.startswith("dram__bytes")].Unit) == {"byte"}
    assert moved["a + b * c (unfused)"] > 1.3 * moved["torch.addcmul (fused)"]


def test_recorded_matmul_bytes_over_ten_runs_agree_with_ncu_application_replay():
    """scripts/gpu_check_extra.py on the H200: the fp16 matmul 4096's DRAM bytes read, 10 runs of
    kprof's application replay against 10 repetitions under ncu's application replay: the means
    agree within 0.5 % and the difference is well inside the run-to-run spread (Welch's t); bytes
    written differ by more than their spread (recorded as it was)."""
    import json

    with open(os.path.join(HERE, "extra.json")) as f:
        d = json.load(f)

    def welch(a, b):
        return (statistics.mean(a) - statistics.mean(b)) / (
            statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5

    read = d["matmul"]["dram__bytes_read.sum"]
    assert len(read["kprof"]) == len(read["ncu"]) == 10
    assert abs(statistics.mean(read["kprof"]) / statistics.mean(read["ncu"]) - 1) < 0.005
    assert abs(welch(read["kprof"], read["ncu"])) < 2
    write = d["matmul"]["dram__bytes_write.sum"]
    assert abs(welch(write["kprof"], write["ncu"])) > 2
    # Cost per profiled kernel of a 3-metric set: range replay is the one at least 20x under ncu.
    cost = d["cost"]
    assert cost["range"]["ratio"] >= 20 > cost["application"]["ratio"] > cost["kernel"]["ratio"]
