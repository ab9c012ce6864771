"""The H200 recordings of 2026-12-03 (tests/fixtures/h200-short-kernel-and-graph-durations,
`2026-12-03-*`): kprof's defaults on workloads the issue does not name (gpu-checks/gpu_check_unseen.py),
judged again here from the recorded logs and ncu CSVs; a region of several kernels with a cold
cache read 19 % below ncu while kprof flushed the L2 once per region (`2026-12-03-unseen-workloads-flush-per-region*`), and matches ncu
within its process-to-process spread since counter passes flush before every kernel (`2026-12-03-unseen-workloads-flush-per-kernel*` and `2026-12-03-unseen-workloads-flush-per-kernel-step6-sweep*`);
step 6 and the seed sweep with that engine."""

from __future__ import annotations

from truth_recordings import diff, judge, sweep_bench, sweep_bench_report, truth_log, unseen, unseen_table

PER_REGION = "2026-12-03-unseen-workloads-flush-per-region"
PER_KERNEL = "2026-12-03-unseen-workloads-flush-per-kernel"
PER_KERNEL_SWEEP = "2026-12-03-unseen-workloads-flush-per-kernel-step6-sweep"
FINAL_ENGINE = "2026-12-03-unseen-workloads-final-engine"


def test_a_cold_region_of_ten_kernels_read_19_percent_low_with_one_flush_per_region():
    """`2026-12-03-unseen-workloads-flush-per-region*` (the L2 flushed once per region in counter passes): ten elementwise kernels on 4M
    floats in one cold region 77.5 µs against ncu's 96.2 µs (each kernel cold under ncu), and
    the same region warm within 0.2 % of ncu's --cache-control none."""
    t = unseen_table(PER_REGION, PER_REGION + ".log")
    assert t["chain10"][2] == 10
    assert -21 < diff(t["chain10"]) < -17, t["chain10"]
    assert abs(diff(t["chain10_warm"])) < 1
    # The reference counted the region's kernels: multi-kernel regions are multi-kernel.
    assert t["sort"][2] == 7 and t["mlp"][2] == 3 and t["xent"][2] == 2


def test_flushing_before_every_kernel_gives_ncus_cold_sums():
    """`2026-12-03-unseen-workloads-flush-per-kernel*` and `2026-12-03-unseen-workloads-flush-per-kernel-step6-sweep*` (counter passes flush before every kernel): the cold ten-kernel region
    within 1.5-3.2 % of ncu (ncu's own warm value of it moved 2.8 % between the two calls), every
    other eager workload (softmax, layer norm, SDPA, cuDNN conv, bf16 matmul 8192, a skinny
    matmul, sort, cumsum, scatter, cross entropy, an MLP, a Triton kernel) within 3 % (long
    single kernels within 1 %)."""
    for tag in (PER_KERNEL, PER_KERNEL_SWEEP):
        t = unseen_table(tag, tag + ("-and-table.log" if tag == PER_KERNEL else ".log"))
        assert -3.5 < diff(t["chain10"]) < 0, (tag, t["chain10"])
        for name in ("softmax", "layernorm", "sdpa", "conv", "skinny", "sort", "cumsum", "scatter", "xent", "mlp",
                     "triton", "sort_warm", "mlp_warm", "chain10_warm", "conv_warm"):
            assert abs(diff(t[name])) < 3, (tag, name, t[name])
        assert abs(diff(t["bf16mm8192"])) < 1


def test_what_still_differs_tiny_kernels_and_graphs_with_copies_or_old_node_records():
    """What the calls found and did not fix: a one-thread kernel (`x.add_(1)` on one float) reads
    6-11 % below ncu (1.54 vs 1.63-1.70 µs warm); a graph holding a 64 MB device copy 3.2-3.9 %
    below CUDA events; a graph of 200 one-block kernels instantiated before the session (node
    records) 1-4 % above; both MLP graphs within 1.2 %."""
    for tag, log in ((PER_REGION, PER_REGION + ".log"), (PER_KERNEL, PER_KERNEL + "-and-table.log"), (PER_KERNEL_SWEEP, PER_KERNEL_SWEEP + ".log")):
        t = unseen_table(tag, log)
        assert -12 < diff(t["tiny_warm"]) < -5, (tag, t["tiny_warm"])
        assert -4 < diff(t["gcopy_new"]) < -3 and -4 < diff(t["gcopy_old"]) < -3, tag
        assert 0.5 < diff(t["gtiny_old"]) < 4.5, (tag, t["gtiny_old"])
        assert abs(diff(t["gmlp_old"])) < 1.5 and abs(diff(t["gmlp_new"])) < 1.5


def test_step6_holds_and_the_sweep_is_8x_with_the_flush_before_every_kernel():
    """`2026-12-03-unseen-workloads-flush-per-kernel-step6-sweep*`: step 6 on the medians of three processes each within 0.33 point of ncu; the seed
    sweep 8.3x faster than nsight-python 0.9.6 (kprof 1.13 s, records 0.60 s, nsight-python
    9.37 s, medians of two processes): the target of 10x is still not met."""
    r, rows = judge(truth_log(PER_KERNEL_SWEEP + ".log"))
    for what in ("SM %", "DRAM %"):
        for case in ("fp16_mm4096", "x2_64M"):
            assert rows[("python", f"step 6 {case} {what}")] == "PASS"
    assert rows[("python", "seed sweep speed")] == "FAIL"
    report, ratio = sweep_bench_report(sweep_bench(), PER_KERNEL_SWEEP + ".log")
    assert 8.0 < ratio < 8.6, report


def test_final_engine_and_the_one_thread_kernel_under_ncus_application_replay():
    """`2026-12-03*` (the committed engine): the cold ten-kernel region -0.95 % against ncu, the MLP
    -0.02 %; cumsum -3.41 % (ncu's cold cumsum read 51.65-54.94 µs over the four calls, kprof
    53.07-54.77). The one-thread kernel under ncu's *application* replay reads as under its kernel
    replay (warm 1.60-1.70 µs, 3,142-3,308 SM cycles at 1.90-1.97 GHz), so kprof's 1.52-1.54 µs
    is not a replay-mode or clock difference: not explained."""
    t = unseen_table(FINAL_ENGINE, FINAL_ENGINE + ".log")
    assert abs(diff(t["chain10"])) < 1.5 and abs(diff(t["mlp"])) < 0.5
    assert -4 < diff(t["cumsum"]) < -3
    assert t["tiny_warm"][0] < 1560
    mod = unseen()
    for cache, lo, hi in (("none", 1550, 2400), ("all", 1800, 2600)):
        rows = list(mod.csv.DictReader(open(truth_log(f"2026-12-03-one-thread-kernel-ncu-application-replay-cache-{cache}.csv"))))
        warm = [r for r in rows if ":tiny_warm." in r["thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"]]
        assert len(warm) == 3
        for r in warm:
            ns = float(r["gpu__time_duration.sum"].replace(",", ""))
            ghz = float(r["gpc__cycles_elapsed.avg.per_second"].replace(",", "")) / 1e9
            assert lo <= ns <= hi and 1.85 < ghz < 2.0, (cache, ns, ghz)


def test_long_kernel_rows_take_the_medians_of_several_processes(tmp_path):
    """gpu-checks/truth_verdicts.py: a long-kernel case run in several kprof processes (repeated in
    PY_CASES) and ncu processes (LONG_REPEATS) is judged on the medians of each side, as step 6;
    one process each keeps the single values."""
    import json

    def log(kprof_ns, ncu_ns):
        lines = [{"part": "kprof", "case": "mm2048", "ns": v, "late": False} for v in kprof_ns]
        lines += [{"part": "ncu", "case": "mm2048", "ns": v} for v in ncu_ns]
        path = tmp_path / f"log{len(kprof_ns)}{len(ncu_ns)}.log"
        path.write_text("".join("TRUTH " + json.dumps(r) + "\n" for r in lines))
        return str(path)

    # One process each: the first values, 1.2 % apart.
    _, rows = judge(log([340_000.0], [344_100.0]))
    assert rows[("python", "mm2048")] == "FAIL"
    # Three each: medians 341,000 and 343,000 (-0.58 %), whatever the outliers.
    r, rows = judge(log([341_000.0, 330_000.0, 342_000.0], [344_600.0, 343_000.0, 342_900.0]))
    assert rows[("python", "mm2048")] == "PASS", r.stdout
    assert "median of 3" in r.stdout


def test_matmuls_on_medians_of_three_processes_each():
    """`2026-12-03-matmul-1024-2048-three-processes-each.log`: torch's fp32 matmul 1024 holds on medians of three processes each (+0.86 %); the
    2048 does not (-1.15 %): kprof reads 340.5-341.3 µs in every process while ncu's three
    processes read 341.9, 344.5 and 344.8 µs (one of them at kprof's value)."""
    r, rows = judge(truth_log("2026-12-03-matmul-1024-2048-three-processes-each.log"))
    assert rows[("python", "mm1024")] == "PASS" and rows[("python", "mm2048")] == "FAIL", r.stdout
    assert "median of 3" in r.stdout
