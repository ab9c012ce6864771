"""The H200 recordings of 2026-12-03, judged again here: a fourth set of workloads the issue
does not name (tests/fixtures/h200-short-kernel-and-graph-durations/`2026-12-03-unseen-set4*`:
backward passes whose kernels PyTorch's autograd thread launches, a cuDNN LSTM, flash attention,
small and odd GEMMs, bf16 elementwise kernels, graphs of a training step, flash attention and the
LSTM), the energy rows with the committed rule (tests/fixtures/h200-power-cap-and-long-kernels/
`2026-12-03-*`), the experiment of `2026-12-03-old-graphs-with-kernel-records-off-crash.log`: graphs instantiated before kprof's session crash
CUPTI 13.0 with a graph record whichever kernel-record kind is on, and the whole acceptance table
of `2026-12-03-acceptance-table-medians-of-three.log`, with the long kernels and step 6 on medians of three processes."""

from __future__ import annotations

import json
import math

from truth_recordings import (
    diff, energy_rows, judge_failed, power_rows, sweep_bench, sweep_bench_report, truth_log, truth_rows, unseen,
    unseen_table,
)

TAG = "2026-12-03-unseen-set4"


def test_every_eager_workload_of_the_fourth_set_holds_against_ncu():
    """`2026-12-03*`: sixteen cold and five warm eager workloads within 3 % of ncu's sum of the region's
    kernels (-1.31 to +1.93 %), the single long kernels (≥ 200 µs) within 1 % (0.3 %); ncu saw the
    backward passes' kernels from the autograd thread (`--nvtx-push-pop-scope process`): three for
    the matmul, sixteen for the convolution, 22 for the embedding; the LSTM 266."""
    t = unseen_table(TAG, workload_set="4")
    mod = unseen()
    cold, warm, _ = mod.SETS["4"]
    assert len(cold) == 16 and len(warm) == 5
    for name in cold + warm:
        got, ref, kernels = t[name]
        assert got is not None and ref is not None, name
        limit = 1.0 if ref >= 200_000 and kernels == 1 else 3.0
        assert abs(diff(t[name])) <= limit, (name, t[name])
    assert [t[n][2] for n in ("mmbwd", "convbwd", "embbwd", "lstm")] == [3, 16, 22, 266]
    assert all(abs(diff(t[n])) < 0.3 for n in ("bf16odd", "intmm", "fill1g", "gridsample", "flashbf16"))


def test_graphs_of_the_session_hold_and_one_from_before_it_reads_long():
    """`2026-12-03*`: graphs instantiated after kprof's first benchmark (graph records) within 0.8 % of
    CUDA events around the replay without a profiler; captured before it (node records, CUPTI
    instruments each node) flash attention (one node) +0.53 %, the training step +2.96 % and the
    LSTM graph +7.67 %, the row of docs/timing.md for graphs captured before the session."""
    t = unseen_table(TAG, workload_set="4")
    for name in ("gtrain_new", "gflash_new", "glstm_new"):
        assert abs(diff(t[name])) < 0.8, (name, t[name])
    assert abs(diff(t["gflash_old"])) < 1
    assert 2 < diff(t["gtrain_old"]) < 3
    assert 7 < diff(t["glstm_old"]) < 8.5


def test_a_graph_record_of_a_graph_from_before_the_session_crashes_cupti():
    """`2026-12-03-old-graphs-with-kernel-records-off-crash.log`: with the kernel records switched off around such a launch and graph trace left on
    (an experiment wheel), every process died in a segmentation fault; with the committed guard
    (graph trace off, node records) the same cases gave values, the LSTM graph +6.7 % of the
    call's events."""
    lines = open(truth_log("2026-12-03-old-graphs-with-kernel-records-off-crash.log")).read().splitlines()
    exp1 = lines[lines.index("== exp=1: table graph cases, captured before the session (one process each)"):
                 lines.index("== exp=0: table graph cases, captured before the session (one process each)")]
    assert sum("Segmentation fault" in line for line in exp1) == 5
    assert not any(line.startswith("TRUTH") for line in exp1)
    survived = [json.loads(line.split(" ", 1)[1])["case"] for line in exp1 if line.startswith("UNSEEN1 ")]
    assert "gridsample" in survived and not any(c.endswith(("_old", "_new")) for c in survived)
    rows = {(r["part"], r["case"]): r["ns"]
            for r in truth_rows("2026-12-03-old-graphs-with-kernel-records-off-crash.log", tags=("UNSEEN ", "UNSEEN0 "))}
    assert 1.06 < rows[("kprof", "glstm_old")] / rows[("refs", "glstm")] < 1.075
    assert abs(rows[("kprof", "glstm_new")] / rows[("refs", "glstm")] - 1) < 0.01


def test_the_committed_energy_rule_gives_nan_with_the_reason_beside_rests():
    """`2026-12-03*`, the first run of the committed rule (the run and the second before it): twelve fp32
    matmuls 8192 per region (21.44 ms per kernel) rest every run once NVML showed the cap, and
    every run's energy is NaN with the reason; single 21 ms runs NaN (shorter than an update)."""
    name = "2026-12-03-energy-rows-committed-rule.log"
    (power,) = power_rows(name)
    energy = energy_rows(name)
    assert power["case"] == "fp32_twelve" and 21.3e6 < power["median"] < 21.6e6
    assert all(math.isnan(v) for v in power["EnergyMilliJ"]) and "0x4" in power["ThrottleReasons"]
    assert "idle for more than 5 %" in power["warnings"][0]
    for part, reason in (("energy", "shorter than the update period"), ("energy-long", "idle for more than 5 %")):
        r = energy[part]
        assert all(math.isnan(v) for v in r["columns"]["EnergyMilliJ"]), part
        assert reason in r["warnings"][0], part


def test_the_acceptance_table_on_medians_of_three_processes():
    """`2026-12-03-acceptance-table-medians-of-three.log` (2097c3a), the whole table with ncu's long kernels and step 6 in three processes
    and kprof's matmul 1024 and step 6 in three too (the verdicts take the medians: ncu's matmul
    1024 moved 61.8-62.8 µs between single processes of 2026-12-03): 31 of 34 rows hold; failing:
    graphs from two streams in both doors (torch +21.6 %, Rust +8.1 %: CUPTI slows them) and the
    seed sweep 8.6x (kprof 1.28 s, nsight-python 0.9.6 11.01 s). Every row of a graph-only region
    says `records` in DurationSource (its span is the records'), eager ones `counters`."""
    log = truth_log("2026-12-03-acceptance-table-medians-of-three.log")
    r, rows, failed = judge_failed(log)
    assert r.returncode == 1
    assert "31 passed, 3 failed, 0 missing" in r.stdout
    assert failed == sorted([
        ("python", "graph from 2 streams"), ("rust", "graph from 2 streams"), ("python", "seed sweep speed"),
    ])
    assert "(ncu, median of 3)" in r.stdout and "median of 4" in r.stdout
    sources = {}
    for row in truth_rows("2026-12-03-acceptance-table-medians-of-three.log"):
        if row.get("part") == "kprof" and "source" in row:
            sources.setdefault(row["case"], set()).update(row["source"])
    assert sources["graph60"] == sources["graph2stream"] == sources["graph3big"] == {"records"}
    assert sources["mm1024"] == sources["eager60"] == {"counters"}
    text, ratio = sweep_bench_report(sweep_bench(), "2026-12-03-acceptance-table-medians-of-three.log")
    assert 8.5 < ratio < 8.7, text


def test_kprof_run_does_not_pace_a_program_of_long_kernels():
    """`2026-12-03-kprof-run-long-kernels-back-to-back-and-ncu.log`: `kprof run --group-by kernel` on a program that runs a bf16 matmul 16384, idles a
    second, then ten back to back in an NVTX range: the records read the program's own pace (the
    first four 11.1-11.3 ms, the last ones capped at 12.1-12.7 ms), the counter launch (kernel
    replay, ncu's definition) the first five in the range within 0.3 % of ncu's median and the last
    five +9.5 to +13 % (not paced: docs/timing.md); ten fp32 matmuls 8192 met no cap: both within 0.3 %."""
    rows = power_rows("2026-12-03-kprof-run-long-kernels-back-to-back-and-ncu.log")
    run = {(r["case"], r["mode"]): r["ns"] for r in rows if r["part"] == "kprof-run"}
    ncu = {r["case"]: sorted(r["ns"])[len(r["ns"]) // 2] for r in rows if r["part"] == "ncu"}
    # Eleven occurrences: the warm-up kernel before the range, then the ten in it.
    assert all(len(v) == 11 for v in run.values())
    counters = [v / ncu["ten"] - 1 for v in run[("ten", "counters")][1:]]
    assert all(abs(d) < 0.003 for d in counters[:5]) and all(0.09 < d < 0.14 for d in counters[-5:]), counters
    records = run[("ten", "records")][1:]
    assert max(records[:3]) < 11.35e6 and min(records[-4:]) > 12.0e6
    for mode in ("records", "counters"):
        assert all(abs(v / ncu["fp32"] - 1) < 0.003 for v in run[("fp32", mode)]), mode


def test_graphs_instantiated_under_a_bare_cupti_subscriber_still_crash():
    """`2026-12-03-graphs-instantiated-under-a-bare-subscriber-crash.log` (an experiment, not committed): a watcher subscribed at the decoration with only the
    resource callbacks; graphs instantiated then crashed CUPTI 13.0 on replay with graph records
    (five processes, no value); the same graphs captured before the decoration gave node-record
    values."""
    log = "2026-12-03-graphs-instantiated-under-a-bare-subscriber-crash.log"
    text = open(truth_log(log)).read()
    after = text[text.index("captured after the decoration"):text.index("captured before the decoration")]
    assert after.count("Segmentation fault") == 4 and "TRUTH" not in after
    assert text[text.index("set 4 graphs captured after"):].count("Segmentation fault") == 1
    rows = truth_rows(log, tags=("TRUTH ", "UNSEEN "))
    ref = {r["case"]: r["ns"] for r in rows if r.get("part") == "refs"}
    got = {r["case"]: r["ns"] for r in rows if r.get("part") == "kprof"}
    assert set(got) == {"graph60", "graph2stream", "graph3big", "mixed"}
    assert 1.0 < got["graph60"] / ref["graph60"] < 1.05 and got["graph2stream"] / ref["graph2stream"] > 1.15


def test_graphs_instantiated_with_graph_trace_on_read_short_of_events():
    """`2026-12-03-graphs-instantiated-with-graph-trace-on-read-short.log` (the experiment with GRAPH_TRACE, or it and kernel records, enabled at the
    decoration): no crash, but the graph records read 3.7-9.7 % short of CUDA events without a
    profiler (60-node graph -9.7 %, two streams -3.7 %, LSTM -6.8 %): not adopted."""
    rows = truth_rows("2026-12-03-graphs-instantiated-with-graph-trace-on-read-short.log", tags=("TRUTH ", "UNSEEN "))
    ref = {r["case"]: r["ns"] for r in rows if r.get("part") == "refs"}
    got = [r for r in rows if r.get("part") in ("kprof", "kprof-after-decoration")]
    assert len(got) == 6 and all(r["source"] == ["records"] for r in got)
    for r in got:
        d = r["ns"] / ref[r["case"]] - 1
        assert -0.11 < d < -0.03, (r["case"], d)


def test_the_first_unseen_set_again_with_the_current_engine():
    """`2026-12-03-unseen-set1-current-engine*` (the committed engine): the 2026-12-03 set, 21 of 25 rows within their limits; the
    failures are the one-element add (cold -7.25 %, warm -3.57 %: one-block kernels), cumsum
    (+3.44 %, where 2026-12-03 read -3.41 %: ncu's own value moved 3.7 %) and the 64 MB copy graph
    captured before the session (-3.30 %); graph-only regions say `records`."""
    tag = "2026-12-03-unseen-set1-current-engine"
    t = unseen_table(tag, workload_set="1")
    failing = sorted(n for n, (got, ref, kernels) in t.items()
                     if abs(diff(t[n])) > (1.0 if ref >= 200_000 and kernels == 1 else 3.0))
    assert failing == ["cumsum", "gcopy_old", "tiny", "tiny_warm"], failing
    assert -8 < diff(t["tiny"]) < -6 and 3 < diff(t["cumsum"]) < 4
    mod = unseen()
    rows = mod.read_log(truth_log(tag + ".log"))
    assert all(rows[("kprof", g)]["source"] == ["records"] for g in mod.SETS["1"][2])
