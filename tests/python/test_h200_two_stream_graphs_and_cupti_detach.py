"""The H200 recordings of 2026-12-02 (tests/fixtures/h200-short-kernel-and-graph-durations,
`2026-12-02-*`): why CUDA graphs captured from two streams read long under any CUPTI client (a
subscriber alone slows them until `cuptiFinalize`), kprof detaching CUPTI when a profiler ends
(and not while a graph instantiated under it is alive, which would fail), step 6 judged on the
medians of three processes of kprof and of ncu, and the whole table with this session's engine."""

from __future__ import annotations

import statistics

from truth_recordings import judge, sweep_bench, sweep_bench_report, truth_log, truth_rows

RAW_CUPTI_CALL = "2026-12-02-graphs-after-one-raw-cupti-call-step6-three-processes.log"
TABLE = "2026-12-02-truth-check-table-step6-and-sweep-three-processes.log"


def cupti_states(name):
    """The `cuptistates` rows of a recording, by variant (the last row of a variant)."""
    return {r["variant"]: r for r in truth_rows(name) if r.get("mode") == "cuptistates"}


def us(row, state, graph):
    return row[state][graph] / 1e3


def test_graphs_run_slower_in_every_state_after_the_first_cupti_session():
    """`2026-12-02-graph-replays-in-each-state-of-the-cupti-session.log`: before any CUPTI call the two graphs took 172.5 / 201.9 µs; after kprof's first
    session every state reads 193-200 / 213-226 µs, the stopped sessions (`plain` of rounds 1-2)
    included; graph records time the two-stream graph at ~186 µs."""
    (row,) = [r for r in truth_rows("2026-12-02-graph-replays-in-each-state-of-the-cupti-session.log")
              if r.get("mode") == "graphstates"]
    first, later = row["rounds"][0]["plain"], [r["plain"] for r in row["rounds"][1:]]
    assert 171 < first["graph2stream_in"] / 1e3 < 174 and 200 < first["graph60_in"] / 1e3 < 203
    for plain in later:
        assert plain["graph2stream_in"] / 1e3 > 190 and plain["graph60_in"] / 1e3 > 212, plain
    spans = [r["activity"]["graph_record_ns"]["graph2stream_in"] / 1e3 for r in row["rounds"]]
    assert all(184 < s < 188 for s in spans), spans


def test_a_cupti_subscriber_alone_slows_graphs_until_cupti_finalize():
    """`2026-12-02-graphs-after-one-raw-cupti-call-step6-three-processes.log`: one raw CUPTI call per process. No call, or `cuptiGetTimestamp`: every state
    within 1 % of `before`. `cuptiSubscribe` with nothing enabled, a `cuGraphLaunch` callback, or
    DRIVER API records: the two-stream graph 11-17 % slower, still after the undo, and back within
    1 % after `cuptiFinalize`."""
    rows = cupti_states(RAW_CUPTI_CALL)
    for v in ("none", "timestamp"):
        r = rows[v]
        for state in ("control1", "control2", "during", "undone", "finalized"):
            for g in r[state]:
                assert abs(us(r, state, g) / us(r, "before", g) - 1) < 0.01, (v, state, g)
    for v in ("subscribe", "callback", "driver"):
        r = rows[v]
        for state in ("during", "undone"):
            slower = us(r, state, "graph2stream_in") / us(r, "before", "graph2stream_in") - 1
            assert 0.10 < slower < 0.18, (v, state, slower)
        for g in r["finalized"]:
            assert abs(us(r, "finalized", g) / us(r, "before", g) - 1) < 0.01, (v, g)
    assert "graph" not in rows and "concurrent" not in rows  # failed / printed nothing


def test_step6_on_the_medians_of_three_processes_each_holds():
    """`2026-12-02-graphs-after-one-raw-cupti-call-step6-three-processes.log` and `2026-12-02-cupti-detach-on-release-and-a-kept-graph.log`, `2026-12-02-truth-check-table-step6-and-sweep-three-processes.log`: ncu's `x * 2` DRAM % moves about a point between processes (84.69 -
    85.42 here), so step 6 is judged on the medians of three kprof and three ncu processes: every
    row within 0.5 point."""
    rows = truth_rows(RAW_CUPTI_CALL)
    kp = [r["value"] for r in rows if r.get("part") == "step6" and r["case"] == "x2_64M"
          and r["metric"].startswith("dram")]
    ncu = [r["value"] for r in rows if r.get("part") == "ncu" and r.get("case") == "s6_x2_64M"
           and r.get("metric", "").startswith("dram")]
    assert len(kp) == 3 and len(ncu) == 3
    assert max(ncu) - min(ncu) > 0.5  # ncu's own spread exceeds the tolerance
    assert abs(statistics.median(kp) - statistics.median(ncu)) < 0.2
    _, v = judge(truth_log(TABLE))
    for case in ("fp16_mm4096 SM %", "fp16_mm4096 DRAM %", "x2_64M SM %", "x2_64M DRAM %"):
        assert v[("python", f"step 6 {case}")] == "PASS", case


def test_a_dropped_profiler_leaves_the_process_as_without_a_profiler():
    """`2026-12-02-profiler-drop-detaches-cupti-torch-graphs-fail-after.log` and `2026-12-02-detach-refused-while-a-session-graph-lives.log` (`profiler`): a default Rust benchmark of the two-stream graph, then the
    `Profiler` dropped: ~193 µs with it alive, within 1 % of `before` (171.6 µs) after the drop,
    and no graph executable left under CUPTI (`2026-12-02-detach-refused-while-a-session-graph-lives.log`)."""
    for name in ("2026-12-02-profiler-drop-detaches-cupti-torch-graphs-fail-after.log",
                 "2026-12-02-detach-refused-while-a-session-graph-lives.log"):
        r = cupti_states(name)["profiler"]
        assert us(r, "during", "graph2stream_in") / us(r, "before", "graph2stream_in") > 1.1
        for g in r["undone"]:
            assert abs(us(r, "undone", g) / us(r, "before", g) - 1) < 0.01, (name, g)
    assert cupti_states("2026-12-02-detach-refused-while-a-session-graph-lives.log")["profiler"][
        "graph_execs_under_cupti"] is False


def test_a_graph_instantiated_under_cupti_fails_after_cupti_finalize():
    """`2026-12-02-profiler-drop-detaches-cupti-torch-graphs-fail-after.log`: torch processes that replayed graphs captured during the session failed after the
    first detaching engine's `release_counters()`; `2026-12-02-detach-refused-while-a-session-graph-lives.log` and `2026-12-02-cupti-detach-on-release-and-a-kept-graph.log`, `2026-12-02-truth-check-table-step6-and-sweep-three-processes.log`: with the benchmark's graph
    kept alive (kprof leaves CUPTI attached), the probe's forced `cuptiFinalize` made the next
    replays fail."""
    text = open(truth_log("2026-12-02-profiler-drop-detaches-cupti-torch-graphs-fail-after.log")).read()
    assert text.count("CUDA_LAUNCH_BLOCKING=1") == 2 and "RPPROBE" not in text
    kept = open(truth_log("2026-12-02-cupti-detach-on-release-and-a-kept-graph.log")).read()
    assert "profiler-keep: measuring finalized\nerror: DriverError(CUDA_ERROR_LAUNCH_FAILED" in kept
    assert '"variant":"profiler-keep"' not in kept


def test_release_counters_detaches_cupti_unless_a_session_graph_lives():
    """`2026-12-02-cupti-detach-on-release-and-a-kept-graph.log`, `2026-12-02-truth-check-table-step6-and-sweep-three-processes.log` (`release-state`): after `kprof._core.release_counters()` CUPTI is `detached` and
    the two-stream torch graph runs at least as fast as before kprof (104.7 vs 113.5 µs; 135.8
    while attached); with a graph captured during the benchmark and kept, CUPTI stays attached
    (`graphs`) and that graph still replays. The benchmark after the release attaches again and
    reads the same duration from the counters."""
    rows = {r["keep"]: r for r in truth_rows("2026-12-02-cupti-detach-on-release-and-a-kept-graph.log")
            if r.get("part") == "releasestate"}
    free, kept = rows[False], rows[True]
    assert free["cupti_detach"] == "detached" and kept["cupti_detach"] == "graphs"
    assert free["graph2stream_attached"] > 1.15 * free["graph2stream_before"]
    assert free["graph2stream_released"] <= free["graph2stream_before"] * 1.01
    assert 100 < kept["kept_released"] < 120
    for r in (free, kept):
        assert r["ytimes2_again_source"] == ["counters"] == r["ytimes2_first_source"]
        assert abs(r["ytimes2_again_us"] / r["ytimes2_first_us"] - 1) < 0.05


def test_the_table_with_this_sessions_engine():
    """`2026-12-02-cupti-detach-on-release-and-a-kept-graph.log`, `2026-12-02-truth-check-table-step6-and-sweep-three-processes.log`: 31 of 36 rows hold; failing: graphs from two streams in both doors (CUPTI's
    subscriber, above), the matmul 1024 in both doors (-1.02 % torch, +1.37 % Rust: the row's
    spread between processes, within 0.35 % in the 2026-12-02 last call) and the seed sweep at 6.8x
    on the medians of three processes per tool."""
    r, v = judge(truth_log(TABLE))
    assert "truth verdicts: 31 passed, 5 failed, 0 missing" in r.stdout, r.stdout
    assert {k for k, x in v.items() if x == "FAIL"} == {
        ("python", "graph from 2 streams"), ("rust", "graph from 2 streams"),
        ("python", "mm1024"), ("rust", "sgemm1024"), ("python", "seed sweep speed"),
    }
    text, _ = sweep_bench_report(sweep_bench(), TABLE)
    assert "kprof (default) vs nsight-python: 6.8x" in text, text


def test_attaching_again_costs_the_counters_one_time_work_not_the_sessions():
    """`2026-12-02-reattach-cost-and-raw-concurrent-records-then-finalize.log` (`reattach`): every dropped profiler detached CUPTI and left the two-stream graph
    within 1 % of its time before kprof; a profiler created after a detach took 9 ms (28 ms the
    first time) and its benchmark 0.34-0.36 s, the Range Profiler's first `Start` (0.23 s) paid
    again each time. Raw CONCURRENT_KERNEL records, no guard: graphs fail after `cuptiFinalize`."""
    name = "2026-12-02-reattach-cost-and-raw-concurrent-records-then-finalize.log"
    (row,) = [r for r in truth_rows(name) if r.get("mode") == "reattach"]
    before = row["graph2stream_before_ns"]
    cycles = row["cycles"]
    assert [c["cupti"] for c in cycles] == ["detached"] * 3
    for c in cycles:
        assert abs(c["graph2stream_detached_ns"] / before - 1) < 0.01
    assert all(c["new_s"] < 0.015 for c in cycles[1:]) and all(0.3 < c["bench_s"] < 0.4 for c in cycles[1:])
    starts = [c["counter_cost"]["collect_start_s"] for c in cycles]  # cumulative over the process
    assert all(0.2 < b - a < 0.26 for a, b in zip(starts, starts[1:])), starts
    text = open(truth_log(name)).read()
    assert "cuptistates concurrent: measuring finalized\nerror: DriverError(CUDA_ERROR_LAUNCH_FAILED" in text
