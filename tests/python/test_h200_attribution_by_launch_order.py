"""The H200 recordings of 2026-12-02 (tests/fixtures/h200-short-kernel-and-graph-durations,
`2026-12-02-*`): kernels attributed to regions by launch order (CUPTI's correlation ids taken when a
region opens and closes) instead of launch API records, what that saves per launch, and the
verdict tables with it as the default."""

from __future__ import annotations

import statistics

from truth_recordings import judge, sweep_bench, sweep_bench_report, truth_log, truth_rows


def launchparts(name):
    """The `launchparts` rows of a recording: per process, state -> median added ns."""
    return [r["added_ns_median"] for r in truth_rows(name) if r.get("mode") == "launchparts"]


def test_correlation_ids_bracket_every_launch_made_between_two_marks():
    """`2026-12-02-bracket-probe-launch-records-vs-none.log`: with and without launch API records, the kernels, the cuBLAS kernel, the graph
    record and a second thread's kernel launched between two marks have correlation ids between
    the marks' ids, the kernel launched after the second mark after it; without API records no
    external-correlation record comes."""
    rows = [r for r in truth_rows("2026-12-02-bracket-probe-launch-records-vs-none.log") if r.get("mode") == "bracket"]
    assert sorted(r["variant"] for r in rows) == ["off"] * 3 + ["records"] * 3
    for r in rows:
        assert (r["eager_and_graph_items_in"], r["items_after"], r["items_outside"]) == (8, 1, 0), r
        m0, m1, m2 = r["marks"]
        assert m0 < m1 < m2
        none = r["variant"] == "off"
        assert (r["launch_records"] == 0) == none and (r["external_records"] == 0) == none, r


def test_the_launch_api_records_are_about_half_of_the_host_cost():
    """`2026-12-02-launch-cost-parts-interleaved.log` and the launchparts of `2026-12-02-launch-order-probe.log`, `2026-12-02-truth-check-all-parts-launch-order.log` and `2026-12-02-launch-parts-range-profiler-step6.log`, `2026-12-02-truth-check-cases-python-sweep.log`: the states interleaved in one process, so the
    host's drift falls on all of them. Without the launch API records a launch costs 0.22-0.46 us
    less (median 0.35 us over four processes of `2026-12-02-launch-order-probe.log`, `2026-12-02-truth-check-all-parts-launch-order.log` and `2026-12-02-launch-parts-range-profiler-step6.log`, `2026-12-02-truth-check-cases-python-sweep.log`; 0.74-0.99 against 0.40-0.54 us in
    `2026-12-02-launch-cost-parts-interleaved.log`); the numbering callback costs nothing measurable, the kernel records the rest."""
    interleaved = launchparts("2026-12-02-launch-cost-parts-interleaved.log")
    assert len(interleaved) == 3
    for p in interleaved:
        assert p["no_launch_records"] + 200 < p["default"] < 1200, p
        assert abs(p["bracket_marks"] - p["no_launch_records"]) < 150, p
        assert abs(p["subscribed"]) < 200, p
    later = launchparts("2026-12-02-launch-order-probe.log") + launchparts("2026-12-02-launch-parts-range-profiler-step6.log")
    assert len(later) == 4
    for p in later:
        assert p["order"] + 200 < p["records"] < 1200 and p["order"] < 600, p
    saved = [p["records"] - p["order"] for p in later]
    assert all(200 < x < 500 for x in saved) and 300 < statistics.median(saved) < 400, saved


def test_launch_order_attributes_what_launch_records_did():
    """`2026-12-02-launch-order-probe.log`, `2026-12-02-truth-check-all-parts-launch-order.log`: the engine's own marks (`truth_check bracket order`) bracket the same 8 items as
    the probe of `2026-12-02-bracket-probe-launch-records-vs-none.log`, and the engine checks c, d, e pass with launch order (the second thread's
    kernels in their region)."""
    rows = {r["variant"]: r for r in truth_rows("2026-12-02-launch-order-probe.log") if r.get("mode") == "bracket"}
    assert (rows["order"]["eager_and_graph_items_in"], rows["order"]["items_after"]) == (8, 1)
    assert rows["order"]["launch_records"] == 0 and rows["records"]["launch_records"] > 0
    text = open(truth_log("2026-12-02-launch-order-probe.log")).read()
    assert "3 of 3 checks passed" in text
    assert "second thread: 5/5 runs have 3 kernels (1 main + 2 worker)" in text


def test_verdicts_with_launch_order_by_default():
    """`2026-12-02-launch-order-probe.log`, `2026-12-02-truth-check-all-parts-launch-order.log` (every default part): 29 rows hold, 4 fail (graphs from two streams in both doors,
    step 6 `x * 2` DRAM % at -1.08 point in that one process, the seed sweep at 9.1x), and the three
    `kprof run` rows are missing: the program died under `kprof run` when the injection library
    numbered its NVTX self-test inside `cuInit` (fixed). Both host-cost rows pass (Rust +1.90 us)."""
    r, v = judge(truth_log("2026-12-02-truth-check-all-parts-launch-order.log"))
    assert "truth verdicts: 29 passed, 4 failed, 3 missing" in r.stdout, r.stdout
    assert {k for k, x in v.items() if x == "FAIL"} == {
        ("python", "graph from 2 streams"), ("rust", "graph from 2 streams"),
        ("python", "step 6 x2_64M DRAM %"), ("python", "seed sweep speed"),
    }
    assert {k for k, x in v.items() if x == "MISSING"} == {
        ("kprof run", "graph range (C++)"), ("kprof run", "eager chain (C++)"),
        ("kprof run", "eager chain, --durations counters (C++)"),
    }
    assert v[("rust", "host cost per launch")] == v[("python", "host cost per launch")] == "PASS"
    text, _ = sweep_bench_report(sweep_bench(), "2026-12-02-truth-check-all-parts-launch-order.log")
    assert "9.1x (target 12x: not met)" in text, text


def test_step6_and_the_sweep_again():
    """`2026-12-02-launch-parts-range-profiler-step6.log`, `2026-12-02-truth-check-cases-python-sweep.log`: every Python row of its parts holds, step 6 `x * 2` DRAM % among them (84.67
    against ncu's 84.98), and two more processes read 84.87 and 85.12; the seed sweep 9.8x."""
    r, v = judge(truth_log("2026-12-02-truth-check-cases-python-sweep.log"))
    assert "truth verdicts: 16 passed, 1 failed, 16 missing" in r.stdout, r.stdout
    assert [k for k, x in v.items() if x == "FAIL"] == [("python", "seed sweep speed")]
    dram = [x["value"] for x in truth_rows("2026-12-02-launch-parts-range-profiler-step6.log")
            if x.get("part") == "step6" and x["case"] == "x2_64M" and x["metric"].startswith("dram")]
    assert len(dram) == 2 and all(abs(d - 84.98) < 0.5 for d in dram), dram
    text, _ = sweep_bench_report(sweep_bench(), "2026-12-02-truth-check-cases-python-sweep.log")
    assert "9.8x (target 12x: not met)" in text, text


def test_rust_and_kprof_run_with_launch_order():
    """`2026-12-02-truth-check-rust-and-kprof-run.log`, after both fixes of the injection library: kprof run's graph range -1.42 %, its
    eager chain +4.83 % against the in-stream reference and -0.03 % against ncu with
    `--durations counters`; the Rust graphs hold except the two-stream one; host cost +0.99 us."""
    r, v = judge(truth_log("2026-12-02-truth-check-rust-and-kprof-run.log"))
    assert "truth verdicts: 6 passed, 1 failed, 25 missing" in r.stdout, r.stdout
    for key in [("kprof run", "graph range (C++)"), ("kprof run", "eager chain (C++)"),
                ("kprof run", "eager chain, --durations counters (C++)"), ("rust", "graph of 60 kernels"),
                ("rust", "graph of 3 large kernels"), ("rust", "host cost per launch")]:
        assert v[key] == "PASS", (key, r.stdout)
    assert v[("rust", "graph from 2 streams")] == "FAIL"


def test_the_sweep_without_the_host_catalog_and_nsight_pythons_spread():
    """`2026-12-02-durations-plan-without-catalog-sweep.log`: with the plan of durations alone taken from the opened session, kprof's first
    sweep took 1.159 s (1.257 s in `2026-12-02-truth-check-cases-python-sweep.log` and 1.368 s in
    `2026-12-02-truth-check-all-parts-launch-order.log`) while nsight-python took 9.59 s in this
    recording against 12.3-12.4 s in the two before: the ratio moves with nsight-python's own time."""
    text, ratio = sweep_bench_report(sweep_bench(), "2026-12-02-durations-plan-without-catalog-sweep.log")
    assert "8.3x (target 12x: not met)" in text, text
    assert "plan 0.080 s" in text, text
    plan, cases, table = ("2026-12-02-durations-plan-without-catalog-sweep.log",
                          "2026-12-02-truth-check-cases-python-sweep.log",
                          "2026-12-02-truth-check-all-parts-launch-order.log")
    walls = {}
    for name in (table, cases, plan):
        rows = {r["tool"]: r["wall_s"] for r in truth_rows(name) if r.get("part") == "sweep"}
        walls[name] = (rows["kprof"], rows["nsight-python 0.9.6"])
    assert walls[plan][0] < walls[cases][0] < walls[table][0], walls
    assert walls[plan][1] < 10 < min(walls[table][1], walls[cases][1]), walls


def test_the_final_build_on_the_rust_door_and_kprof_run():
    """`2026-12-02-final-build-rust-and-kprof-run.log`: the session's last engine, the Rust door and `kprof run`: every row holds but the
    graph from two streams (+8.4 %)."""
    r, v = judge(truth_log("2026-12-02-final-build-rust-and-kprof-run.log"))
    assert "truth verdicts: 5 passed, 1 failed, 25 missing" in r.stdout, r.stdout
    assert [k for k, x in v.items() if x == "FAIL"] == [("rust", "graph from 2 streams")]
