"""The H100 recordings of what the default costs (``tests/fixtures/h100-default-cost-one-pass/``):
the ratios, verdicts and comparisons its README states, re-derived from the recorded lines with the
benchmarks' own report code (``benches/``) and ``gpu-checks/truth_verdicts.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench_support import load_module as load

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "fixtures" / "h100-default-cost-one-pass"


def sections(name: str) -> dict[str, list[str]]:
    """The lines of a ``default-cost.sh`` log under each ``== COMMAND (time)`` header."""
    out: dict[str, list[str]] = {}
    current = None
    for line in (FIX / name).read_text().splitlines():
        if line.startswith("== "):
            current = line[3:].rsplit(" (", 1)[0]
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def tagged(lines: list[str], tag: str) -> list[dict]:
    return [json.loads(line[len(tag) + 1:]) for line in lines if line.startswith(tag + " ")]


COST = sections("2026-12-07-default-cost-benches.log")


def section(start: str) -> list[str]:
    (key,) = [k for k in COST if k.startswith(start)]
    return COST[key]


def test_large_sweep_default_and_two_passes_against_the_plain_loop() -> None:
    mod = load(ROOT / "benches" / "large_sweep.py")
    one_pass = mod.report(tagged(section("benches/large_sweep.py --source records"), "BENCH"))
    assert "8.75x (target 1.3x: not met)" in one_pass
    assert "kprof-records       0.385    3.61x" in one_pass
    two_passes = mod.report(tagged(section("KPROF_ONE_PASS=off benches/large_sweep.py"), "BENCH"))
    assert "13.14x (target 1.3x: not met)" in two_passes


def test_small_kernels_samples_per_second() -> None:
    mod = load(ROOT / "benches" / "small_kernels.py")
    rows = tagged(section("benches/small_kernels.py --source records"), "BENCH")
    assert "kprof (default): 1,598 samples/s (target 10,000: not met)" in mod.report(rows)
    by_tool = {r["tool"]: r for r in rows}
    assert by_tool["plain"]["samples_per_s"] > 40 * by_tool["kprof"]["samples_per_s"]
    # The records cost about what the counters do here: the cost is per run, not the counters'.
    assert by_tool["kprof-records"]["wall_s"] == pytest.approx(by_tool["kprof"]["wall_s"], rel=0.05)


def test_seed_sweep_ratio_against_nsight_python() -> None:
    mod = load(ROOT / "benches" / "seed_sweep_vs_nsight.py")
    table = section("benches/seed_sweep_vs_nsight.py")
    walls = {}
    for line in table:
        for tool in ("plain torch", "kprof-records", "kprof", "nsight-python 0.9.6"):
            if line.startswith(tool + " ") and tool not in walls:
                walls[tool] = {"wall_s": float(line[len(tool):].split()[0])}
    text, ratio = mod.report(walls)
    assert ratio == pytest.approx(11.0, abs=0.05)
    assert "11.0x (target 12x: not met)" in text
    assert walls["nsight-python 0.9.6"]["wall_s"] / walls["kprof-records"]["wall_s"] == pytest.approx(20.3, abs=0.05)


def test_step6_ratio_and_the_metrics_beside_nsight_python() -> None:
    mod = load(ROOT / "benches" / "step6_vs_nsight.py")
    text = mod.report(tagged(section("benches/step6_vs_nsight.py"), "BENCH"))
    assert "nsight-python / kprof: 3.6x (target 10x: not met)" in text
    # Durations within 0.5 %; DRAM % of the fp16 matmul 0.81 point under nsight-python's one process.
    assert "fp16 matmul 4096|gpu__time_duration.sum" in text and "-0.05 %" in text
    assert "-0.81" in text


def split_rows(source: str, one_pass: str) -> dict[str, dict]:
    (row,) = [r for r in tagged(sum(COST.values(), []), "COST")
              if r["source"] == source and r["one_pass"] == one_pass]
    return {r["sweep"]: r for r in row["rows"]}


def test_one_pass_halves_the_second_sweep_and_gives_the_two_pass_values() -> None:
    on, off = split_rows("auto", "on"), split_rows("auto", "off")
    assert on["second"]["wall_s"] == pytest.approx(0.1945)
    assert off["second"]["wall_s"] == pytest.approx(0.3786)
    assert on["second"]["cost"]["counter_run_s"] < off["second"]["cost"]["counter_run_s"]
    for a, b in zip(on["second"]["avg_ns"], off["second"]["avg_ns"]):
        assert a == pytest.approx(b, rel=0.005)
    assert on["first"]["sources"] == ["counters"]


def test_what_a_benchmark_leaves_behind() -> None:
    lines = (FIX / "2026-12-07-segfault-and-what-benchmarks-leave-behind.log").read_text().splitlines()
    (trace,) = [r for r in tagged(lines, "COST") if r["part"] == "trace"]
    before = trace["before"]
    graph = {k: trace[k]["graph_us"] / before["graph_us"] for k in trace if k.startswith("after_")}
    chain = {k: trace[k]["chain_us"] / before["chain_us"] for k in trace if k.startswith("after_")}
    assert graph["after_records"] == pytest.approx(1.231, abs=0.001)
    assert graph["after_release"] < 1.01
    # The eager chain stays slower after every benchmark, release_counters() included.
    assert min(chain.values()) == pytest.approx(1.552, abs=0.001)


def test_the_segfault_stack_runs_from_a_cublas_launch_through_cupti_into_python() -> None:
    frames = [line.split()[2] for line in
              (FIX / "2026-12-07-segfault-native-stack.log").read_text().splitlines()
              if line.startswith("SEGV-FRAME")]
    libs = [f.split("+")[0] for f in frames]
    assert "addr 0x10" in (FIX / "2026-12-07-segfault-native-stack.log").read_text()
    first = {lib: libs.index(lib) for lib in reversed(libs)}
    # Innermost first: Python's C API, called from kprof's extension, from CUPTI's callback of a
    # driver launch made by cuBLAS for torch.
    assert libs[2] == "python3.12" and libs[3] == "_core.abi3.so"
    assert first["_core.abi3.so"] < first["libcupti.so.13"] < first["libcuda.so.580.159.04"] < first["libcublasLt.so.13"]


def test_python_truth_rows_of_this_recording() -> None:
    verdicts = load(ROOT / "gpu-checks" / "truth_verdicts.py")
    rows = verdicts.load(str(FIX / "2026-12-07-python-truth-rows-ncu-cut-short.log"))
    kprof = {r["case"]: r["ns"] for r in rows if r.get("part") == "kprof" and "ns" in r}
    refs = {r["case"]: r["ns"] for r in rows if r.get("part") == "refs" and "ns" in r}
    diff = {c: 100.0 * (kprof[c] / refs[c] - 1.0) for c in ("graph60", "graph3big", "graph2stream")}
    assert diff["graph60"] == pytest.approx(3.97, abs=0.01)
    assert abs(diff["graph3big"]) < 0.1
    assert diff["graph2stream"] == pytest.approx(22.95, abs=0.01)
    # Every eager case has its default-settings value from the counters.
    eager = [r for r in rows if r.get("part") == "kprof" and r.get("case") in ("mm1024", "mm8192", "k2us", "x2_64M")]
    assert len(eager) == 4 and all(r["source"] == ["counters"] for r in eager)
    assert kprof["mm1024"] == pytest.approx(61424.0)
