"""The H200 recordings of 2026-12-04, judged again here: NVML's instantaneous power on the H200
(tests/fixtures/h200-power-cap-and-long-kernels/`2026-12-04-*`, `gpu_check_power.py instant`),
the measurement that decides whether kprof's rests after long work could be skipped where the
work draws little power; a fifth set of workloads the issue does not name
(tests/fixtures/h200-short-kernel-and-graph-durations/`2026-12-04-first-*`), and the GPU's start of a graph
launch added to graph spans (`2026-12-04-*`: the table's graph rows in every door, sets 1, 3 and 5)."""

from __future__ import annotations

import statistics

from truth_recordings import diff, judge_failed, power_rows, truth_log, truth_rows, unseen, unseen_table

POWER = "2026-12-04-nvml-instant-power-every-100-ms.log"


def _instant():
    rows = power_rows(POWER)
    phases = {r["phase"]: r for r in rows if "phase" in r and r["phase"] != "idle"}
    works = {r["work"]: r for r in rows if "work" in r}
    trace = next(r["trace"] for r in rows if "trace" in r)
    after_sync = next(r["seed_pace_read_after_sync_w"] for r in rows if "seed_pace_read_after_sync_w" in r)
    limit = next(r["limit_w"] for r in rows if "limit_w" in r)
    return phases, works, trace, after_sync, limit


def test_instant_power_moves_only_every_100_ms():
    """Polled every 0.5 ms, NVML's instantaneous power field takes a new value every 100 ms
    (99.8-100.3 ms between changes under load), like its energy counter: it cannot say what a
    10 ms piece of work drew. A lone 11 ms bf16 matmul 16384 (about 900 W while it runs) left it
    within 3 W of idle, five of them (55 ms) showed up only after they ended; read right after
    each 10 ms of the seed sweep's pace (four fp32 matmuls 4096, then as long idle) it repeated the
    same value four or five times in a row."""
    phases, _, trace, after_sync, _ = _instant()
    changes = {}
    for name, t_s, *_ in trace:
        if t_s > 0:
            changes.setdefault(name, []).append(t_s)
    gaps = [b - a for ts in changes.values() for a, b in zip(ts, ts[1:])]
    assert len(gaps) >= 12
    assert all(0.095 <= g <= 0.105 for g in gaps), gaps
    idle_w = statistics.median(r["w_median"] for r in phases.values() if r["w_median"] < 130)
    assert phases["lone_bf16_x1"]["w_max"] - idle_w < 3.0
    assert phases["lone_bf16_x5"]["w_max"] - idle_w < 3.0
    runs, run = [], 1
    for a, b in zip(after_sync, after_sync[1:]):
        if a == b:
            run += 1
        else:
            runs.append(run)
            run = 1
    assert statistics.median(runs) >= 4, runs


def test_the_power_of_work_that_never_reached_the_cap_sits_near_it():
    """What back-to-back work drew (the median of 1.5 s): the bf16 matmul 16384 718 W against the
    700 W limit (946 W in its first 100 ms, then `SwPowerCap` and 1275-1515 MHz, kernels 12.2-13.1
    ms); fp32 matmuls 8192 649 W and 4096 638 W at 1980 MHz with no reason and steady kernels (21.5
    and 2.67 ms); the matmul 1024 513 W, `x * 2` over 64M floats 534 W, a 1M-float multiply (launch
    bound) 128 W. The work that never slowed drew up to 93 % of the limit: a rule skipping rests
    below some share of the limit would need a margin this recording does not give (the 2026-12-03
    twelve fp32 matmuls 8192 per region reached the cap on another start), so kprof keeps its rests."""
    phases, works, _, _, limit = _instant()
    assert limit == 700.0
    bf = phases["bf16_mm16384"]
    assert bf["w_median"] > limit and bf["w_max"] > 900 and 4 in bf["reasons"] and min(bf["sm_mhz"]) < 1500
    for name in ("fp32_mm8192", "fp32_mm4096", "fp32_mm1024", "x2_64M", "mul_1M"):
        r = phases[name]
        assert r["reasons"] == [0] and r["sm_mhz"] == [1980], name
        ms = works[name]["ms_by_tenth"]
        assert max(ms[:8]) / min(ms[:8]) < 1.01 or name == "mul_1M", (name, ms)
    assert 0.9 * limit < phases["fp32_mm8192"]["w_median"] < limit
    assert 0.9 * limit < phases["fp32_mm4096"]["w_median"] < limit
    assert phases["mul_1M"]["w_median"] < 0.2 * limit


def test_the_fifth_unseen_set_against_ncu_and_events():
    """`2026-12-04-first-unseen-set5*` (`2026-12-04-first-unseen-set5*`, the engine of 2026-12-03): fourteen cold and six warm eager
    workloads within 3 % of ncu's sum (single kernels of 200 µs and more within 1 %) but two:
    cuDNN attention cold -1.59 % (warm +0.51 %; -0.78 and -1.32 % in a 2026-12-04 run and `2026-12-04*`) and the
    autotuned Triton kernel +4.53 % (-3.25 % in a 2026-12-04 run, -0.71 % in `2026-12-04*`: each process's
    autotuning picks its own block size, 256 in kprof's and 256 or 1024 in ncu's of `2026-12-04*`).
    Graphs: attention and multi-head attention within 2 % either way; graphs timed from their
    graph records read short by the GPU's start of each launch: a Triton kernel's graph -3.60 %
    (1.84 µs), 20 replays of a ten-kernel graph in one region -8.31 % (1.95 µs per replay)."""
    t = unseen_table("2026-12-04-first-unseen-set5", workload_set="5")
    mod = unseen()
    cold, warm, graphs = mod.SETS["5"]
    failed = {}
    for name in cold + warm + graphs:
        got, ref, kernels = t[name]
        assert got is not None and ref is not None, name
        limit = 1.0 if name not in graphs and ref >= 200_000 and kernels == 1 else 3.0
        if abs(diff(t[name])) > limit:
            failed[name] = round(diff(t[name]), 2)
    assert failed == {"cudnnattn": -1.59, "tritonauto": 4.53, "g20x_new": -8.31, "gtriton_new": -3.6}
    assert t["threads2"][2] == 20 and t["mha"][2] == 6
    per_launch_us = {"gtriton_new": (t["gtriton_new"][1] - t["gtriton_new"][0]) / 1e3,
                     "g20x_new": (t["g20x_new"][1] - t["g20x_new"][0]) / 20e3}
    assert all(1.8 < v < 2.0 for v in per_launch_us.values()), per_launch_us


def test_the_graph_start_brings_small_graphs_within_3_percent():
    """`2026-12-04*` (the committed engine: the GPU's start of a graph launch, measured on kprof's own
    graph, 1.70-1.86 µs, added to each graph record's span): every graph of set 5 within 3 % of
    CUDA events without a profiler (20 replays of the ten-kernel graph +1.97 %, the Triton graph
    -1.86 %); set 1's graphs of the session within 2 % (the 64 MB copy graph -1.55 %, -3.2 to -3.9 %
    in 2026-12-03); the graphs captured before the session (node records, unchanged) as before."""
    u5 = unseen_table("2026-12-04-unseen-set5-graph-start", workload_set="5")
    _, _, graphs5 = unseen().SETS["5"]
    assert all(abs(diff(u5[g])) <= 3.0 for g in graphs5), {g: diff(u5[g]) for g in graphs5}
    assert 1.5 < diff(u5["g20x_new"]) < 2.5 and -2.5 < diff(u5["gtriton_new"]) < -1.5
    u1 = unseen_table("2026-12-04-unseen-set1-graph-start", workload_set="1")
    for g in ("gmlp_new", "gcopy_new", "gtiny_new"):
        assert abs(diff(u1[g])) < 2.0, (g, diff(u1[g]))
    assert -3.5 < diff(u1["gcopy_old"]) < -3.0 and 3.0 < diff(u1["gtiny_old"]) < 3.5
    # Set 1's eager rows as in 2026-12-03 (`2026-12-04-host-time-per-graph-replay.log`): every one within 3 % but the one-block add.
    cold1, warm1, _ = unseen().SETS["1"]
    eager_failed = sorted(n for n in cold1 + warm1 if abs(diff(u1[n])) > 3.0)
    assert eager_failed == ["tiny", "tiny_warm"]


def test_what_the_graph_start_does_not_reach():
    """`2026-12-04*`, set 3: five replays of an MLP graph -0.24 %; a fused AdamW graph (two kernels)
    -7.07 % (-3.7 to -10 % in 2026-12-03: 5 µs more than one start per launch), the 1000-node
    graph -3.73 % (its events moved 1129-1188 µs between calls of 2026-12-03), a replay on a side
    stream -13 % against events on the current stream around it (not a reference: they count the
    streams' wait)."""
    u3 = unseen_table("2026-12-04-unseen-set3-graph-start", workload_set="3")
    assert abs(diff(u3["g5x_new"])) < 0.5 and abs(diff(u3["g5x_old"])) < 0.5
    assert -8 < diff(u3["gadamw_new"]) < -6.5
    assert -4 < diff(u3["g1000_new"]) < -3.5
    assert diff(u3["gside_new"]) < -12
    # Its cold eager rows (the warm CSV was not kept): every one within 3 % but 1100 launches of
    # a 256-block kernel (-4.86 %, -5.0 % in 2026-12-03).
    cold3, _, _ = unseen().SETS["3"]
    assert sorted(n for n in cold3 if abs(diff(u3[n])) > 3.0) == ["many1100"]


def test_the_table_graph_rows_in_every_door_with_the_graph_start():
    """`2026-12-04*` (`2026-12-04-table-graph-rows-graph-start.log`): the table's graph rows hold in the Rust
    API (60 nodes -0.56 %, was -1.7 % in 2026-12-03; 3 large kernels -0.10 %) and under kprof run,
    whose exit handler now measures the start too (the C++ 60-node range -0.25 %, was -1.42 to
    -1.61 %); Python's 60-node graph +2.07 % (captured before the session: node records, which the
    start does not change) and 3 large kernels +0.08 %; graphs from two streams still fail (Python
    +24.05 %, Rust +9.37 %). Each profiler's note gives the start it measured (1.70 and 1.86 µs)."""
    name = "2026-12-04-table-graph-rows-graph-start.log"
    r, rows, failed = judge_failed(truth_log(name))
    assert failed == [("python", "graph from 2 streams"), ("rust", "graph from 2 streams")]
    for key in [("python", "graph of 60 kernels"), ("python", "graph of 3 large kernels"),
                ("rust", "graph of 60 kernels"), ("rust", "graph of 3 large kernels"),
                ("kprof run", "graph range (C++)"), ("python", "10 eager + graph60 + 10 eager")]:
        assert rows[key] == "PASS", key
    text = open(truth_log(name)).read()
    assert "1.70 us measured on kprof's own graph" in text and "1.86 us measured on kprof's own graph" in text
    assert "-0.25%" in r.stdout and "-0.56%" in r.stdout


def test_the_acceptance_table_with_the_graph_start():
    """`2026-12-04-acceptance-table-graph-start.log` (the whole table with the committed engine, long kernels and step 6 on medians of three
    processes; the call ran past the device tool's 600 s during nsight-python's second sweep and
    its log was copied from the machine afterwards): 28 of 34 rows hold. Failing: graphs from two
    streams (Python +25.40 %, Rust +9.14 %), the seed sweep 8.1x (kprof 1.61 s on the median of two
    processes, nsight-python 0.9.6 13.02 s; plain torch 0.61 s, slower on this start than the
    0.47-0.50 s of earlier sessions), and three rows at their reference's spread between
    processes: Python's 60-node graph +3.49 % (node records, 140.86 µs as in 2026-12-02; the
    events without a profiler 136.11 µs here, 131-139 µs in earlier calls), the ~2 µs kernel
    +3.61 % (ncu 2.66 µs here, 2.78-2.82 µs before), the Rust sgemm 1024 +1.07 % (one ncu process,
    61.06 µs). Rust's 60-node graph -0.95 %, `kprof run`'s -0.38 %; step 6 within 0.2 point."""
    name = "2026-12-04-acceptance-table-graph-start.log"
    r, rows, failed = judge_failed(truth_log(name))
    assert "28 passed, 6 failed, 0 missing" in r.stdout
    assert failed == [("python", "graph from 2 streams"), ("python", "graph of 60 kernels"),
                      ("python", "seed sweep speed"), ("python", "single ~2 us kernel"),
                      ("rust", "graph from 2 streams"), ("rust", "sgemm1024")]
    assert "+3.49%" in r.stdout and "8.1x" in r.stdout and "-0.95%" in r.stdout and "-0.38%" in r.stdout


def test_the_start_of_a_graph_launch_does_not_grow_with_its_nodes():
    """`2026-12-04-graph-start-by-graph-size.log` (`gpu_check_unseen.py graph-start`, one process, CUPTI attached for both): CUDA
    events around back-to-back replays exceed kprof's value (span plus the 1.76 µs start it
    measured) by 1.7 µs for a chain of 100 adds and 2.6 µs for 1000: the start is about one start
    whatever the node count (the 1000-node graph's -3.7 % against a process without a profiler is
    that process's pace, 1129-1188 µs between calls). Graphs of 1 and 10 adds and of one
    multi-tensor-apply kernel read 22-23 µs by events whatever their work (2.8-13 µs by kprof):
    the probe's loop (an event, the replay, an event) is paced by the host there, so those events
    say nothing about them."""
    rows = {r["case"]: r for r in truth_rows("2026-12-04-graph-start-by-graph-size.log", tags=("UNSEEN ",))}
    assert rows["chain1"]["start_us"] == 1.76
    for case in ("chain100", "chain1000"):
        extra_us = (rows[case]["events_ns"] - rows[case]["kprof_ns"]) / 1e3
        assert 1.0 < extra_us < 3.0, (case, extra_us)
    for case in ("chain1", "chain10", "foreach200"):
        assert 21_000 < rows[case]["events_ns"] < 24_000 and rows[case]["kprof_ns"] < 14_000, case


def test_the_graph_guard_costs_host_time_per_launch_of_a_pre_session_graph():
    """`2026-12-04-host-time-per-graph-replay.log`: torch's `g.replay()` of a one-node graph takes 5.1-5.6 µs of host time before kprof;
    with kprof's session attached 7.75 µs for a graph captured in the session but 14.38 µs for one
    captured before it, whose launches the graph guard wraps in switching graph trace off and on;
    with `KPROF_GRAPH_TRACE=nodes` (no switching) both 8.4 µs."""
    rows = truth_rows("2026-12-04-host-time-per-graph-replay.log", section_prefix="== ", tags=("UNSEEN ",))
    by = {(r["_section"], r["case"]): r for r in rows}
    before, attached = by[("KPROF_GRAPH_TRACE=default", "before")], by[("KPROF_GRAPH_TRACE=default", "attached")]
    nodes = by[("KPROF_GRAPH_TRACE=nodes", "attached")]
    assert 5 < before["graph_us"] < 6
    assert attached["graph_old_us"] - attached["graph_new_us"] > 5
    assert abs(nodes["graph_old_us"] - nodes["graph_new_us"]) < 0.5
    assert attached["graph_old_us"] - nodes["graph_old_us"] > 5
