"""The H200 recordings of 2026-12-04, judged again here
(tests/fixtures/h200-short-kernel-and-graph-durations/`2026-12-04-*`): the whole acceptance table with
the 2026-12-04 engine (the Python half in `2026-12-04-python-table-medians-of-three.log`, the Rust and `kprof run` half and the seed sweep
in `2026-12-04-rust-table-kprof-run-and-seed-sweep.log`, one machine start), why the seed sweep cannot be 10x faster than nsight-python 0.9.6
while its durations are ncu's, the five sets of workloads the issue does not name (`2026-12-04-unseen*`), and
the host cost per launch (`2026-12-04-host-cost-per-launch.log`) beside the 2026-12-02 engine (`2026-12-04-host-cost-per-launch-2026-12-02-engine-alike.log`)."""

from __future__ import annotations

import json
import statistics

from truth_recordings import (
    diff, judge_failed, sweep_bench, sweep_bench_report, truth_log, truth_rows, unseen, unseen_table,
)

PYTHON_TABLE = "2026-12-04-python-table-medians-of-three.log"
RUST_TABLE = "2026-12-04-rust-table-kprof-run-and-seed-sweep.log"


def test_the_table_holds_but_for_two_stream_graphs_and_the_sweep_speed(tmp_path):
    """`2026-12-04-python-table-medians-of-three.log` and `2026-12-04-rust-table-kprof-run-and-seed-sweep.log` together: 31 of 34 rows hold. Failing: graphs captured from two streams
    (Python +19.31 %, Rust +9.88 % against CUDA events without a profiler: a CUPTI client in the
    process slows them, 2026-12-02) and the seed sweep (5.7x). Python's 60-node graph +1.99 %, the
    ~2 µs kernel +0.00 %, the matmul 2048 -0.55 % on medians of three processes of kprof and ncu
    (a 2026-12-04 run, whose log did not come back, read it -1.17 % on one kprof process); the Rust sgemm
    1024 -0.03 %; step 6 within 0.3 point."""
    both = tmp_path / "table.log"
    both.write_text(open(truth_log(PYTHON_TABLE)).read() + open(truth_log(RUST_TABLE)).read())
    r, rows, failed = judge_failed(str(both))
    assert "31 passed, 3 failed, 0 missing" in r.stdout
    assert failed == [("python", "graph from 2 streams"), ("python", "seed sweep speed"),
                      ("rust", "graph from 2 streams")]
    for text in ("+19.31%", "+9.88%", "5.7x", "+1.99%", "-0.55%", "-0.03%"):
        assert text in r.stdout, text


def _sweeps():
    rows = [r for r in truth_rows(RUST_TABLE) if r.get("part") == "sweep"]
    by = {}
    for r in rows:
        by.setdefault(r["tool"], []).append(r)
    return by


def test_cuptis_once_per_process_cost_alone_puts_10x_out_of_reach():
    """`2026-12-04-rust-table-kprof-run-and-seed-sweep.log`, two fresh processes of each tool: nsight-python 0.9.6 took 7.40 and 7.00 s, so 10x
    asks for 0.74 / 0.70 s. The same work without a profiler took 0.47 s, and CUPTI's
    once-per-process counter set-up (planning, enabling the Range Profiler, the first Start) 0.45
    s in kprof's sweep: their sum alone is 0.92 s, 8.0x / 7.6x at best, before any counter pass
    runs. Records only (no counters) make 11.9x, but read the matmul 1024 -1.89 % / -0.70 %
    against nsight-python's value in the same call, where the default (counters) reads -0.28 % /
    -0.13 %: on this toolkit the two goals of the issue (ncu's values by default, 10x) cannot both
    hold for this sweep."""
    by = _sweeps()
    plain, kprof, records, nsight = (by[t] for t in ("plain torch", "kprof", "kprof-records", "nsight-python 0.9.6"))
    assert len(plain) == len(kprof) == len(records) == len(nsight) == 2
    for p, k, rec, n in zip(plain, kprof, records, nsight):
        cost = k["counter_cost"][0]
        once = cost["plan_s"] + cost["session_enable_s"] + cost["collect_start_s"]
        assert 0.4 < once < 0.5, once
        assert (p["wall_s"] + once) * 10 > n["wall_s"], (p["wall_s"], once, n["wall_s"])
        assert rec["wall_s"] * 10 < n["wall_s"]  # the records alone would meet 10x
        assert k["wall_s"] * 5 < n["wall_s"] < k["wall_s"] * 10
        assert abs(k["avg_ns"][0] / n["avg_ns"][0] - 1) < 0.005
    assert min(rec["avg_ns"][0] / n["avg_ns"][0] - 1 for rec, n in zip(records, nsight)) < -0.01
    text, ratio = sweep_bench_report(sweep_bench(), RUST_TABLE)
    assert 5.6 < ratio < 5.8, text


# What each of the five sets left outside 3 % (graphs: CUDA events without a profiler; eager
# work: ncu's sum, cold with its cache control, `_warm` without).
OUTSIDE = {
    "1": {"tiny", "tiny_warm", "gcopy_old", "gtiny_old"},
    "2": {"many500", "many500_warm"},
    "3": {"many1100", "h2d", "gside_old", "gside_new", "gadamw_old", "gadamw_new", "g1000_old"},
    "4": {"glstm_old"},
    "5": set(),
}


def test_unseen_workloads_with_the_graph_launch_fixes():
    """`2026-12-04-unseen*`, the five sets in one machine start: 121 workloads, 107 within 3 % (and the 15
    rows of a single kernel of 200 µs or more within 1 %). Outside, the families of 2026-12-03: the
    one-block add (-13.9 % cold, -5.9 % warm) and 500 / 1100 launches of a 64-block add (-4.1 %,
    -9.4 % warm, -4.8 %), a copy from host memory before a kernel (-3.5 %), graphs captured before
    the session (node records: gcopy -3.5 %, gtiny +3.1 %, fused AdamW -7.8 %, 1000 nodes -7.9 %,
    LSTM +7.4 %; the LSTM and 1000-node graphs captured after the first benchmark -0.03 % and
    -2.5 %), fused AdamW's graph after it -5.7 %, and a replay on a side stream against events on
    the current stream (-12 %, not a reference). The fifth set holds whole this time (its Triton
    graph -2.84 %, -3.66 % in 2026-12-04)."""
    total, outside, long_rows = 0, 0, 0
    for s, expected in OUTSIDE.items():
        t = unseen_table(f"2026-12-04-unseen-set{s}", workload_set=s)
        assert all(v[0] and v[1] for v in t.values()), s
        total += len(t)
        bad = {k for k, v in t.items() if abs(diff(v)) >= 3.0}
        assert bad == expected, (s, bad)
        outside += len(bad)
        graphs = unseen().SETS[s][2]
        # The probe's 1 % rows: a single eager kernel of 200 µs and more.
        long_single = [k for k, v in t.items() if k not in graphs and v[2] == 1 and v[1] >= 200_000]
        long_rows += len(long_single)
        assert all(abs(diff(t[k])) <= 1.0 for k in long_single), s
    assert (total, outside, long_rows) == (121, 14, 15)
    g = unseen_table("2026-12-04-unseen-set4", workload_set="4")
    assert abs(diff(g["glstm_new"])) < 0.1 and diff(g["glstm_old"]) > 7


def test_host_cost_per_launch_holds_at_its_edge_in_rust():
    """`2026-12-04-host-cost-per-launch.log` (another start of the machine): the host's time per launch queued behind a spin
    kernel, inside kprof's default benchmark against the same process without it: Rust's
    `cuLaunchKernel` +1.99 µs (median of three rounds, +1.87 to +2.77 µs; plain 4.06-4.53 µs),
    Python's `add_` +0.75 µs: both within the 2 µs of the acceptance, Rust's at its edge."""
    r, rows, failed = judge_failed(truth_log("2026-12-04-host-cost-per-launch.log"))
    assert "2 passed, 0 failed" in r.stdout and failed == []
    assert "+1987 ns" in r.stdout and "+753 ns" in r.stdout
    rounds = [x for x in truth_rows("2026-12-04-host-cost-per-launch.log") if x.get("mode") == "launch"]
    added = sorted(x["auto_inside_ns"] - x["plain_ns"] for x in rounds)
    assert len(added) == 3 and 1800 < added[0] and added[-1] > 2000


def test_the_launch_cost_is_the_machines_state_not_a_change_of_the_engine():
    """`2026-12-04-host-cost-per-launch-2026-12-02-engine-alike.log`: `truth_check launch` of the 2026-12-02 engine (52677ad, whose own calls read +0.65 to
    +0.91 µs) and of this session's, alternating in one machine start, three processes each:
    +1.90 and +2.05 µs per launch (medians of nine rounds), the rounds of each spread over 1.3 µs
    and overlapping: the +1.99 µs of `2026-12-04-host-cost-per-launch.log` is this start of the machine, not something added
    since."""
    by, engine = {}, None
    for line in open(truth_log("2026-12-04-host-cost-per-launch-2026-12-02-engine-alike.log")):
        if line.startswith("== "):
            engine = line.split()[1]
        elif line.startswith("TRUTH ") and '"mode":"launch"' in line:
            r = json.loads(line[6:])
            by.setdefault(engine, []).append(r["auto_inside_ns"] - r["plain_ns"])
    assert sorted(by) == ["new", "old16"] and all(len(v) == 9 for v in by.values())
    old, new = statistics.median(by["old16"]), statistics.median(by["new"])
    assert 1800 < old < 2000 and 2000 < new < 2100
    assert abs(new - old) < 0.2 * old
    assert min(by["new"]) < max(by["old16"]) and min(by["old16"]) < max(by["new"])
