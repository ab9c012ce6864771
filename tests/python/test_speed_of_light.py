"""Speed of light, roofline and ncu section names in ``metrics=`` (kprof-core's ``sections`` and
``sol``, kprof-plot's roofline, through ``kprof._core``)."""

from __future__ import annotations

import csv
import json
import math
import os
import warnings

import pytest

import kprof
from kprof import _core
from kprof.exceptions import ConfigError

REPO = os.path.join(os.path.dirname(__file__), "..", "..")
FIXTURES = os.path.join(REPO, "tests", "fixtures")
RUST_STEP6 = os.path.join(FIXTURES, "h200-rust-seed-steps6-7-counters-vs-ncu", "application-read-step6-raw.csv")

SM = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"


def _means(path: str) -> dict[tuple[str, str], float]:
    vals: dict[tuple[str, str], list[float]] = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            vals.setdefault((r["Annotation"], r["Metric"]), []).append(float(r["Value"]))
    return {k: sum(v) / len(v) for k, v in vals.items()}


def _rule(sm: float, mem: float) -> str:
    """ncu's SpeedOfLight rule, written out again."""
    if sm < 60 and mem < 60:
        return "latency-bound"
    if abs(sm - mem) < 10:
        return "balanced"
    return "compute-bound" if sm > mem else "memory-bound"


def test_speed_of_light_of_the_recorded_step6_follows_ncus_rule():
    sol = kprof.load(RUST_STEP6).speed_of_light()
    assert len(sol) == 3
    means = _means(RUST_STEP6)
    for _, row in sol.iterrows():
        sm, dram = means[(row["Annotation"], SM)], means[(row["Annotation"], DRAM)]
        assert row["SM_Pct"] == pytest.approx(sm)
        assert row["DRAM_Pct"] == pytest.approx(dram)
        assert row["Memory_Pct"] == pytest.approx(dram)
        assert row["Verdict"] == _rule(sm, dram), row["Reason"]
        assert math.isnan(row["FLOPsPerS"])
    verdict = dict(zip(sol["Annotation"], sol["Verdict"]))
    assert verdict["fp16 matmul 4096"] == "compute-bound"


def test_plot_roofline_without_flop_counters_names_the_sections_to_profile_with():
    with pytest.raises(ConfigError, match="SpeedOfLight_RooflineChart"):
        kprof.load(RUST_STEP6).plot_roofline()


def _write_sweep(path: str) -> None:
    """An fp32 sweep recorded with the roofline metrics (made-up values)."""
    ffma = "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed"
    metrics = {
        ffma: lambda n: n / 2.0,
        "smsp__cycles_elapsed.avg.per_second": lambda n: 1.98e9,
        "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": lambda n: 16896.0,
        "sm__cycles_elapsed.avg.per_second": lambda n: 1.98e9,
        "dram__bytes.sum.per_second": lambda n: 4.0e12 / math.sqrt(n),
        "dram__bytes.sum.peak_sustained": lambda n: 1500.0,
        "dram__cycles_elapsed.avg.per_second": lambda n: 3.2e9,
        SM: lambda n: min(95.0, n / 50.0),
        "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": lambda n: 30.0,
    }
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["Annotation", "Value", "Metric", "Kernel", "GPU", "Host", "ComputeClock", "MemoryClock", "Unit", "n", "Benchmark", "Run"])
        for n in (256, 512, 1024, 2048, 4096):
            for m, value in metrics.items():
                for run in range(3):
                    w.writerow(["sgemm", value(n), m, "k", "NVIDIA H200", "h", 1980000.0, 3201000.0, "", n, "sweep", run])


def test_roofline_of_a_sweep_and_its_speed_of_light(tmp_path):
    raw = tmp_path / "sweep-raw.csv"
    _write_sweep(str(raw))
    results = kprof.load(raw)
    sol = results.speed_of_light()
    sizes = (256, 512, 1024, 2048, 4096)
    assert list(sol["Verdict"]) == [_rule(min(95.0, n / 50.0), 30.0) for n in sizes]
    assert list(sol["Verdict"])[-1] == "compute-bound" and list(sol["Verdict"])[0] == "latency-bound"
    n = 1024
    flops = n / 2.0 * 2 * 1.98e9
    row = sol[sol["Config"] == f"n={n}"].iloc[0]
    assert row["FLOPsPerS_fp32"] == pytest.approx(flops)
    assert row["Intensity_fp32"] == pytest.approx(flops / (4.0e12 / math.sqrt(n)))
    assert row["PeakFLOPsPerS_fp32"] == pytest.approx(2 * 16896.0 * 1.98e9)
    plot = results.plot_roofline()
    assert plot.svg.count('class="kprof-roof') == 1
    assert plot.svg.count(">n=") == 5
    out = results.plot_roofline(tmp_path / "roof.svg", title="sgemm")
    assert open(out).read().startswith("<svg") and ">sgemm</text>" in open(out).read()
    png = results.plot_roofline(tmp_path / "roof.png")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def _recorded_speed_of_light_counters() -> list[str]:
    with open(os.path.join(FIXTURES, "ncu-sections", "sections.json")) as f:
        rec = json.load(f)
    sol = next(s for s in rec["sections"] if s["identifier"] == "SpeedOfLight")
    keep = []
    for m in sol["metrics"]:
        if m["arch"] and not any(lo <= 90 <= hi for lo, hi in m["arch"]):
            continue
        if m["name"].startswith(("launch__", "device__")) or "." not in m["name"]:
            continue
        keep.append(m["name"])
    return keep


_WHEEL_DIR = os.path.join(REPO, "target", "cupti-wheel", "unpacked")


def _cupti_wheel() -> bool:
    d = os.environ.get("KPROF_CUPTI_WHEEL_DIR") or _WHEEL_DIR
    return os.path.isdir(os.path.join(d, "nvidia", "cu13", "lib"))


needs_cupti_wheel = pytest.mark.skipif(not _cupti_wheel(), reason="no unpacked nvidia-cuda-cupti wheel (scripts/setup-dev.sh)")


@pytest.fixture
def gh100_without_device(monkeypatch):
    """The metric names of a GH100 (KPROF_CHIP), no device, CUPTI's host tables from the wheel."""
    monkeypatch.setenv("KPROF_CHIP", "GH100")
    monkeypatch.setenv("KPROF_NO_DEVICE", "1")
    if not os.environ.get("KPROF_CUPTI_WHEEL_DIR"):
        monkeypatch.setenv("KPROF_CUPTI_WHEEL_DIR", _WHEEL_DIR)


@needs_cupti_wheel
def test_metrics_speed_of_light_reaches_the_engine_as_its_metric_names(fake_backend, gh100_without_device, silent):

    @kprof.analyze.kernel(configs=[(1,)], runs=1, warmup=0, metrics=["SpeedOfLight"], verbosity=silent, output_prefix=None)
    def bench(n):
        with kprof.annotate("a"):
            pass

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bench()
    assert fake_backend.options["metrics"] == _recorded_speed_of_light_counters()
    assert any("launch__waves_per_multiprocessor" in str(w.message) for w in caught)


@needs_cupti_wheel
def test_the_passes_are_shown_before_the_run(fake_backend, gh100_without_device, capfd):
    metrics, _, passes = _core.expand_metrics(["SpeedOfLight"])
    one = _core.expand_metrics(["dram__bytes_read.sum", "SpeedOfLight"])
    assert isinstance(passes, int) and passes > 1 and one[2] >= passes

    @kprof.analyze.kernel(configs=[(1,)], runs=1, warmup=0, metrics=["SpeedOfLight"])
    def bench(n):
        with kprof.annotate("a"):
            pass

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bench()
    err = capfd.readouterr().err
    assert f"kprof: metrics: {len(metrics)} metrics, {passes} replay passes per kernel" in err, err


def test_metric_names_alone_need_no_chip(monkeypatch):
    monkeypatch.delenv("KPROF_CHIP", raising=False)
    monkeypatch.setenv("KPROF_NO_DEVICE", "1")
    assert _core.expand_metrics(["dram__bytes_read.sum"]) == (["dram__bytes_read.sum"], None, None)
    with pytest.raises(ConfigError, match="KPROF_CHIP"):
        _core.expand_metrics(["SpeedOfLight"])
