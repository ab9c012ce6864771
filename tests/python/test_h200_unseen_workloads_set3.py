"""The H200 recordings of 2026-12-03 (tests/fixtures/h200-short-kernel-and-graph-durations,
`2026-12-03-*`), judged again here: a third set of workloads the issue does not name
(gpu-checks/gpu_check_unseen.py set 3: batched and tiny GEMMs, a 12 ms bf16 matmul, topk, unique,
random numbers, 1100 launches, host idle inside a region, a host-to-device copy, cuDNN batch
norm, fused AdamW, cat, interpolate; graphs replayed five times in a region, on a side stream, of
a fused AdamW step and of 1000 nodes) in default settings against ncu and CUDA events. `2026-12-03-unseen-set3.log` is
the build before runner/gpu_rest.rs (judged against `2026-12-03-unseen-set3-ncu-cache*`'s ncu and events, the same start of
the machine), `2026-12-03*` and `2026-12-03*` builds with it (ncu and events of the same call; `2026-12-03*` the rule
committed: rests after 10 ms of work added up)."""

from __future__ import annotations

import json

from truth_recordings import diff, sweep_bench, sweep_bench_report, truth_log, unseen_table

BEFORE = ("2026-12-03-unseen-set3", "2026-12-03-unseen-set3.log")
AFTER = ("2026-12-03-rerun-unseen-set3-with-gpu-rest", "2026-12-03-unseen-set3-rests-after-10-ms")
EAGER_WITHIN_3 = ("bmm", "topk", "unique", "randn", "sleepgap", "h2d", "batchnorm", "adamw", "cat", "topk_warm",
                  "bmm_warm", "adamw_warm", "cat_warm")


def refs(log):
    """The `refs` rows of a recording by case."""
    out = {}
    for line in open(truth_log(log), encoding="utf-8"):
        if line.startswith("UNSEEN "):
            r = json.loads(line[7:])
            if r["part"] == "refs":
                out[r["case"]] = r
    return out


def test_before_the_rests_a_12_ms_bf16_matmul_read_the_power_capped_value():
    """`2026-12-03-unseen-set3.log` (f088f61): the bf16 matmul 16384 11.3 % above ncu (its runs after the third 11-12 %
    slower: the power cap, tests/python/test_h200_power_cap.py); the other eager workloads but the
    tiny GEMM and the 1100 launches within 3 % of ncu."""
    t = unseen_table(BEFORE[0], BEFORE[1], workload_set="3")
    assert 10 < diff(t["bf16mm16384"]) < 12
    for name in EAGER_WITHIN_3 + ("interp",):
        if name == "cat_warm":
            continue  # +3.04 % in this call, +0.45 % in `2026-12-03*`
        assert abs(diff(t[name])) < 3, (name, t[name])
    assert t["many1100"][2] == 1100 and t["topk"][2] == 20 and t["unique"][2] == 12


def test_with_the_rests_every_eager_workload_but_few_block_kernels_holds():
    """`2026-12-03*` and `2026-12-03*` (runner/gpu_rest.rs): the bf16 matmul 16384 +0.30 / +0.10 % of ncu (1 % row),
    interpolate (848 µs) within 0.2 %, thirteen more within 3 % (a region with 2 ms of host idle
    between its kernels, a host-to-device copy before a kernel: ncu's sum of the kernels, as
    kprof's); failing: a 64x64 fp32 GEMM of 4 blocks (-3.2 to -5.7 %) and 1100 launches of a
    256-block kernel (-5.0 / -5.1 %), the few-block and many-launch rows of docs/timing.md."""
    for tag in AFTER:
        t = unseen_table(tag, workload_set="3")
        assert abs(diff(t["bf16mm16384"])) < 0.5 and t["bf16mm16384"][1] > 10_000_000, tag
        assert abs(diff(t["interp"])) < 0.5, tag
        for name in EAGER_WITHIN_3:
            assert abs(diff(t[name])) < 3, (tag, name, t[name])
        assert -4 < diff(t["mm64"]) < -3 and -6 < diff(t["mm64_warm"]) < -3, tag
        assert -5.5 < diff(t["many1100"]) < -4.5, tag


def test_graphs_against_events_without_a_profiler():
    """`2026-12-03*` and `2026-12-03*`: five replays of an fp16 MLP graph in one region within 0.5 % of CUDA events
    around them (paced as each took: back to back the events read the power cap in `2026-12-03*`, 4.11
    ms, +10 %, and not in `2026-12-03*`); the 1000-node graph captured in the session -1.4 / -2.8 %. The
    graph replayed on a side stream reads the MLP's own time (within 1 % of a fifth of the five
    replays) while CUDA events around it on the current stream read 758-894 µs, back to back or
    paced, by call and process (the side stream's wait, not the graph). Failing: the fused-AdamW
    graph of two kernels (-3.7 to -10 %: its graph span leaves out the few µs the GPU takes to start
    a graph, which the events count, and the events moved 71.6-74.7 µs) and the 1000-node graph
    captured before the session (-7.0 / -7.9 %, node records)."""
    for tag in AFTER:
        t = unseen_table(tag, workload_set="3")
        r = refs(tag + ".log")
        assert abs(diff(t["g5x_old"])) < 0.5 and abs(diff(t["g5x_new"])) < 0.5, tag
        for case in ("gside_old", "gside_new"):
            assert abs(t[case][0] / (t["g5x_new"][0] / 5) - 1) < 0.01, (tag, case)
        side = r["gside"].get("back_to_back_ns", r["gside"]["ns"])
        assert 750_000 < side < 900_000 and side > 1.01 * t["gside_new"][0]
        assert abs(diff(t["g1000_new"])) < 3, tag
        assert -10.5 < diff(t["gadamw_new"]) < -3 and -10.5 < diff(t["gadamw_old"]) < -5, tag
        assert -8.5 < diff(t["g1000_old"]) < -6.5, tag
    assert refs(AFTER[0] + ".log")["g5x"]["back_to_back_ns"] > 1.08 * refs(AFTER[0] + ".log")["g5x"]["ns"]


def test_the_seed_sweep_pays_for_the_rests_and_stays_short_of_10x():
    """`2026-12-03*` and `2026-12-03-kprof-rests-counting-pass-kernels-and-ncu.log`, `2026-12-03-seed-sweep-vs-nsight-python-repeat.log` (two processes each): kprof's first sweep 1.19-1.28 s, 0.16-0.18 s of it
    rests (the fp32 matmul 4096's runs add up to 10 ms of work every few runs), its values within
    1.1 % of nsight-python's; nsight-python 0.9.6 6.74-11.93 s: 5.7x to 9.6x, short of the 10x the
    issue asks (CUPTI's once-per-process counter set-up, about 0.5 s, as before)."""
    for name in ("2026-12-03-seed-sweep-vs-nsight-python.log", "2026-12-03-seed-sweep-vs-nsight-python-repeat.log"):
        rows = [json.loads(line[6:]) for line in open(truth_log(name), encoding="utf-8") if line.startswith("TRUTH ")]
        kprof = [r for r in rows if r["tool"] == "kprof"]
        nsight = [r for r in rows if r["tool"] == "nsight-python 0.9.6"]
        assert len(kprof) == len(nsight) == 2
        for k, n in zip(kprof, nsight):
            assert 1.1 < k["wall_s"] < 1.3 and 0.15 < k["counter_cost"][0]["gpu_rest_s"] < 0.19
            assert 5.5 < n["wall_s"] / k["wall_s"] < 10
            for a, b in zip(k["avg_ns"], n["avg_ns"]):
                assert abs(a / b - 1) < 0.011
    # The bench's report on `2026-12-03-kprof-rests-counting-pass-kernels-and-ncu.log`, `2026-12-03-seed-sweep-vs-nsight-python-repeat.log` (medians of the two processes): the ratio and the rests.
    text, ratio = sweep_bench_report(sweep_bench(), "2026-12-03-seed-sweep-vs-nsight-python-repeat.log")
    assert 6 < ratio < 7 and "target 12x: not met" in text
    assert "rests after long GPU work in its first sweep: 0.157 s" in text
