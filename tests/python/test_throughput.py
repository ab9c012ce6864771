"""``throughput=`` and ``results.throughput()`` (python/kprof/throughput.py): rates with the
duration's interval, and the share of the peaks the counters measured."""

from __future__ import annotations

import csv
import math
import statistics

import pytest

import kprof
from kprof.exceptions import ConfigError

T_975_3 = 3.182446305284263  # Student's t, 97.5 %, 3 degrees of freedom (4 runs)


def _bench(silent, **kw):
    @kprof.analyze.kernel(configs=[(1024,), (4096,)], runs=4, warmup=0, verbosity=silent, **kw)
    def bench(n):
        with kprof.annotate("copy"):
            pass

    return bench


def test_rates_take_the_durations_interval(fake_backend, fake_core, silent):
    res = _bench(silent, throughput=lambda n: {"bytes": 8.0 * n, "elements": float(n)})()
    t = res.throughput()
    assert len(t) == 4 and set(t.Quantity) == {"bytes", "elements"}
    # The fake backend: config i, run r lasts 1000 * (i + 1) + r ns.
    for i, n in enumerate((1024, 4096)):
        runs = [1000.0 * (i + 1) + r for r in range(4)]
        mean = statistics.fmean(runs)
        half = T_975_3 * statistics.stdev(runs) / 2.0
        row = t[(t.n == n) & (t.Quantity == "bytes")].iloc[0]
        assert row.PerRun == 8.0 * n
        assert row.PerSecond == pytest.approx(8.0 * n / (mean * 1e-9))
        assert row.CI95_Lower == pytest.approx(8.0 * n / ((mean + half) * 1e-9))
        assert row.CI95_Upper == pytest.approx(8.0 * n / ((mean - half) * 1e-9))
        assert math.isnan(row.Peak) and math.isnan(row.PctOfPeak), "no counters, no peak"
    # A work function given to the method wins over the decorator's.
    assert set(res.throughput(lambda n: {"flops": 2.0 * n**3}).Quantity) == {"flops"}


def test_bad_work_functions_are_config_errors(fake_backend, fake_core, silent):
    with pytest.raises(ConfigError, match="throughput must be a callable"):
        _bench(silent, throughput=42)
    res = _bench(silent)()
    with pytest.raises(ConfigError, match="needs the work of one run"):
        res.throughput()
    with pytest.raises(ConfigError, match="quantity 'watts'"):
        res.throughput(lambda n: {"watts": 1.0})
    with pytest.raises(ConfigError, match="finite number"):
        res.throughput(lambda n: {"bytes": -1})


def test_share_of_the_peaks_the_counters_measured(tmp_path):
    raw = tmp_path / "sweep-raw.csv"
    metrics = {
        "gpu__time_duration.sum": lambda n: n * 10.0,
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed": lambda n: n / 2.0,
        "smsp__cycles_elapsed.avg.per_second": lambda n: 1.98e9,
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": lambda n: 16896.0,
        "sm__cycles_elapsed.avg.per_second": lambda n: 1.98e9,
        "dram__bytes.sum.per_second": lambda n: 1.0e12,
        "dram__bytes.sum.peak_sustained": lambda n: 1500.0,
        "dram__cycles_elapsed.avg.per_second": lambda n: 3.2e9,
    }
    with open(raw, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit", "n", "Benchmark", "Run"])
        for n in (256, 1024):
            for m, value in metrics.items():
                for run in range(3):
                    timed = m == "gpu__time_duration.sum"
                    unit, v = ("ns", value(n) * (1 + 0.001 * run)) if timed else ("", value(n))
                    w.writerow(["sgemm", v, m, "k", "NVIDIA H200", "h", 1.98e6, 3.2e6, unit, n, "s", run])
    t = kprof.load(raw).throughput(lambda n: {"bytes": 12.0 * n * n, "flops": 2.0 * n**3, "elements": float(n * n)})
    for n in (256, 1024):
        rows = {r.Quantity: r for r in t[t.n == n].itertuples()}
        assert rows["bytes"].Peak == pytest.approx(1500.0 * 3.2e9)
        assert rows["bytes"].PctOfPeak == pytest.approx(rows["bytes"].PerSecond / (1500.0 * 3.2e9) * 100)
        assert rows["flops"].Peak == pytest.approx(2 * 16896.0 * 1.98e9), "fp32: the one precision measured"
        assert rows["flops"].PctOfPeak_CI95_Lower < rows["flops"].PctOfPeak < rows["flops"].PctOfPeak_CI95_Upper
        assert math.isnan(rows["elements"].Peak)
    fp64 = kprof.load(raw).throughput(lambda n: {"flops:fp64": 1.0})
    assert fp64.Peak.isna().all(), "no fp64 peak among the counters"
