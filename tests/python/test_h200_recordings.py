"""Recorded H200 results (tests/fixtures/h200-python-tutorial-steps, see its README) re-read through
the offline path: the processed schema the package wrote there, and `kprof summarize` on the Rust API's raw CSV
reproducing the statistics from the raw values."""

from __future__ import annotations

import csv
import os
import statistics

import pandas as pd
import pytest

from kprof import _core
from kprof.results import PROCESSED_COLUMNS
from truth_recordings import judge as _judge
from truth_recordings import judge_failed as _judge_failed
from truth_recordings import sweep_bench as _sweep_bench
from truth_recordings import sweep_bench_report as _sweep_bench_report
from truth_recordings import truth_rows as _truth_rows

HERE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "h200-python-tutorial-steps")
T975 = {9: 2.2621571627409915, 19: 2.093024054408263}  # scipy.stats.t.ppf(0.975, df)


def test_recorded_processed_tables_have_nsight_order_then_ours():
    df = pd.read_csv(os.path.join(HERE, "step3.csv"))
    expected = [c for c in PROCESSED_COLUMNS if c not in ("<params>", "NormalizationValue")]
    expected[2:2] = ["n"]
    assert list(df.columns[: len(expected)]) == expected
    # Then the run conditions measured there (NVML), aggregated per row as X_Avg/_Std/_Min/_Max.
    rest = list(df.columns[len(expected):])
    allowed = {f"{c}{s}" for c in _core.CONDITION_COLUMNS for s in _core.AGGREGATE_SUFFIXES}
    allowed |= set(_core.CONDITION_COLUMNS) | {_core.THROTTLED_RUNS_COLUMN}
    assert "SMClockMHz_Avg" in rest and set(rest) <= allowed, rest
    assert (df.NumRuns == 20).all() and (df.GPU == "NVIDIA H200").all() and (df.Unit == "ns").all()
    half = df.CI95_Upper - df.AvgValue
    assert half.tolist() == pytest.approx((T975[19] * df.StdDev / 20 ** 0.5).tolist(), rel=1e-9)


def test_recorded_normalized_rows_carry_ratio_statistics():
    df = pd.read_csv(os.path.join(HERE, "step5-normalized.csv"))
    fp16 = df[(df.Annotation == "fp16") & (df.Metric == "gpu__time_duration.sum")]
    assert (fp16.Unit == "x").all() and (fp16.Normalized == "fp32").all()
    assert ((fp16.CI95_Lower < fp16.AvgValue) & (fp16.AvgValue < fp16.CI95_Upper)).all()
    assert (fp16.AvgValue < 1).all()  # fp16 is faster than fp32 at every size on the H200


def test_summarize_reproduces_statistics_of_the_recorded_raw_csv(tmp_path, capfd):
    raw_path = os.path.join(HERE, "sgemm-raw.csv")
    out = tmp_path / "processed.csv"
    assert _core.cli_main(["kprof", "summarize", raw_path, "-o", str(out)]) == 0
    capfd.readouterr()
    with open(raw_path) as f:
        rows = list(csv.DictReader(f))
    processed = pd.read_csv(out)
    assert len(processed) == 5
    for _, row in processed.iterrows():
        values = [float(r["Value"]) for r in rows if int(r["n"]) == row.n]
        mean, sd = statistics.mean(values), statistics.stdev(values)
        assert row.NumRuns == len(values) == 10
        assert row.AvgValue == pytest.approx(mean, rel=1e-12)
        assert row.StdDev == pytest.approx(sd, rel=1e-9)
        assert row.CI95_Lower == pytest.approx(mean - T975[9] * sd / 10 ** 0.5, rel=1e-9)
        assert row.Median == pytest.approx(statistics.median(values), rel=1e-12)


def test_recorded_counter_tables_classify_as_the_seed_does():
    """Steps 6 and 7 recorded on the H200 with in-process hardware counters (CUPTI Range Profiler)."""
    d6 = pd.read_csv(os.path.join(HERE, "step6.csv"))
    tab = d6.pivot(index="Annotation", columns="Metric", values="AvgValue")
    sm = tab["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
    dram = tab["dram__throughput.avg.pct_of_peak_sustained_elapsed"]
    assert sm["fp16 matmul 4096"] > dram["fp16 matmul 4096"]  # compute-bound
    assert dram["x * 2 (256 MB)"] > sm["x * 2 (256 MB)"]  # memory-bound
    assert set(d6[d6.Metric.str.contains("pct")].Unit) == {"%"}  # spelled as ncu exports it
    d7 = pd.read_csv(os.path.join(HERE, "step7.csv"))
    moved = d7[d7.Metric.str.startswith("dram__bytes")].groupby("Annotation").AvgValue.sum()
    assert set(d7[d7.Metric.str.startswith("dram__bytes")].Unit) == {"byte"}
    assert moved["a + b * c (unfused)"] > 1.3 * moved["torch.addcmul (fused)"]


def _extra():
    import json

    with open(os.path.join(HERE, "gpu-check-extra-l2-dram-probes.json")) as f:
        return json.load(f)


def _welch(a, b):
    return (statistics.mean(a) - statistics.mean(b)) / (
        statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5


def _rel(a, b):
    return statistics.mean(a) / statistics.mean(b) - 1


READ_FLUSH, RECORDS_ON, NCU_APP = "kprof application/read", "kprof application/read, records on", "ncu application"
GAP_REGIONS = ("softmax 8192x1024", "x * 2 (256 MB)", "fp16 matmul 4096")


def test_recorded_counter_passes_without_kernel_records_agree_with_ncu_application_replay():
    """gpu-checks/gpu_check_extra.py part `gaps` on the H200 (10 runs each): with CUPTI's kernel
    records on during the counter pass (the engine before commit fb80705) every kernel took more
    GPC cycles than without them, which lowered the 18 us softmax's rates by 2 points or more; without
    them, SM % and DRAM % of peak are within 1 point of ncu's application replay (softmax's SM %:
    within 1.5), the kernels' own L2 write requests within 0.1 % and the bytes read of kernels whose
    inputs do not stay in the L2 within 0.1 %."""
    g = _extra()["gaps"]["setups"]
    kp, on, ncu = g[READ_FLUSH], g[RECORDS_ON], g[NCU_APP]
    cycles = "gpc__cycles_elapsed.max"
    for r in GAP_REGIONS:
        assert len(kp[r][cycles]) == len(on[r][cycles]) == len(ncu[r][cycles]) == 10
        extra = statistics.mean(on[r][cycles]) - statistics.mean(kp[r][cycles])
        # x * 2 (245k cycles) spreads the most: its 1.5k extra cycles give t 2.0.
        assert extra > 1000 and _welch(on[r][cycles], kp[r][cycles]) > (1.5 if r.startswith("x") else 3), (r, extra)
        writes = "lts__t_sectors_op_write.sum"
        assert abs(_rel(kp[r][writes], ncu[r][writes])) < 0.001, r
    for m in ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed"):
        for r in GAP_REGIONS:
            d = statistics.mean(kp[r][m]) - statistics.mean(ncu[r][m])
            limit = 1.5 if (r, m[:2]) == ("softmax 8192x1024", "sm") else 1.0
            assert abs(d) <= limit, (r, m, d)
        d_on = statistics.mean(on["softmax 8192x1024"][m]) - statistics.mean(ncu["softmax 8192x1024"][m])
        assert d_on < -2.0, (m, d_on)
    for r in ("softmax 8192x1024", "x * 2 (256 MB)"):
        assert abs(_rel(kp[r]["dram__bytes_read.sum"], ncu[r]["dram__bytes_read.sum"])) < 0.001, r


def test_recorded_dram_writes_of_outputs_that_fit_the_l2_differ_more_between_ncus_replay_modes():
    """The DRAM bytes written by a kernel whose 32 MB output fits in the 60 MB L2 are the L2's
    evictions, not the kernel's writes (those agree, above): kprof's application replay writes
    fewer than ncu's application replay, but ncu's own kernel replay differs from its application
    replay by more; a 256 MB output (x * 2) agrees within 0.5 %."""
    g = _extra()["gaps"]["setups"]
    w = "dram__bytes_write.sum"
    for r in ("softmax 8192x1024", "fp16 matmul 4096"):
        kprof_vs_ncu = abs(_rel(g[READ_FLUSH][r][w], g[NCU_APP][r][w]))
        ncu_modes = abs(_rel(g["ncu kernel"][r][w], g[NCU_APP][r][w]))
        assert ncu_modes > 0.05 and ncu_modes > kprof_vs_ncu, (r, kprof_vs_ncu, ncu_modes)
    assert abs(_rel(g[READ_FLUSH]["x * 2 (256 MB)"][w], g[NCU_APP]["x * 2 (256 MB)"][w])) < 0.005


def test_recorded_warm_runs_and_probes_place_the_extra_cycles_in_the_kernel_records():
    """Part `warm` (no flush anywhere): the cycles kprof's counter pass adds over ncu come with the
    kernel records, not with the flush; part `probe` (recorded with the records on): neither a 1 ms
    idle gap after the flush nor warm address translations of the input change softmax's cycles."""
    d = _extra()
    w = d["warm"]["setups"]
    c = "gpc__cycles_elapsed.max"
    for r in GAP_REGIONS:
        ncu = statistics.mean(w["ncu application/warm"][r][c])
        off = statistics.mean(w["kprof application/warm"][r][c]) - ncu
        on = statistics.mean(w["kprof application/warm, records on"][r][c]) - ncu
        assert on > off and abs(off) / ncu < 0.01, (r, off, on)
    probe = {r: statistics.mean(v[c]) for r, v in d["probe"].items()}
    base = probe["softmax"]
    assert len(probe) == 3 and all(abs(v / base - 1) < 0.01 for v in probe.values()), probe


def test_recorded_kernel_records_time_kernels_about_half_a_microsecond_longer_than_the_counters():
    """Part `trace`: the timing pass's durations (CUPTI kernel records, serial or concurrent) are
    0.2-1 us longer than the counter pass's gpu__time_duration.max of the same kernels (no records
    there; ncu's gpu__time_duration agrees with the latter), whichever way kernels are traced."""
    tr = _extra()["trace"]
    assert set(tr) == {"kprof serial records", "kprof concurrent records"}
    for setup in tr.values():
        for r in GAP_REGIONS:
            gap_ns = statistics.mean(setup[r]["gpu__time_duration.sum"]) - statistics.mean(setup[r]["gpu__time_duration.max"])
            assert 200 < gap_ns < 1000, (r, gap_ns)


def test_recorded_matmul_alone_reads_fewer_dram_bytes_than_under_ncu():
    """Part `matmul` (the fp16 matmul 4096 alone in the function, 10 runs each): kprof's application
    replay read 3.9 % fewer DRAM bytes than ncu's application replay, far outside both spreads (the
    same matmul after softmax and x * 2, part `gaps`, agrees within 1 %; part `alloc` below shows
    the mean of each tool moving by 2 % from one process to the next)."""
    d = _extra()
    read = d["matmul"]["dram__bytes_read.sum"]
    assert len(read["kprof"]) == len(read["ncu"]) == 10
    assert _welch(read["kprof"], read["ncu"]) < -3
    # Part `flushes` (another call): alone (two flushes back to back before it) and after a
    # one-block kernel (one flush), kprof read 2.4 % and 2.0 % fewer: the double flush is not why.
    fl = d["flushes"]
    alone, after_tiny, ncu = (fl[k]["matmul"]["dram__bytes_read.sum"] for k in
                              ("kprof matmul alone", "kprof matmul after a tiny kernel", "ncu application"))
    assert _rel(alone, ncu) < -0.015 and _rel(after_tiny, ncu) < -0.015 and abs(_rel(alone, after_tiny)) < 0.01
    g = d["gaps"]["setups"]
    after_others = (g[READ_FLUSH]["fp16 matmul 4096"]["dram__bytes_read.sum"], g[NCU_APP]["fp16 matmul 4096"]["dram__bytes_read.sum"])
    assert abs(_rel(*after_others)) < 0.01 and abs(_welch(*after_others)) < 2


def test_recorded_cost_per_kernel_puts_range_replay_at_20x_under_ncu():
    """Cost per profiled kernel of a 3-metric set (8 passes), 20 small kernels x 5 runs, from the
    Python check: range replay at least 20x cheaper than ncu, then application, then kernel replay."""
    import json

    with open(os.path.join(HERE, "summary-python.json")) as f:
        cost = json.load(f)["numbers"]["cost"]
    assert cost["ncu_kernels"] == 100
    assert cost["range"]["ratio"] >= 20 > cost["application"]["ratio"] > cost["kernel"]["ratio"] > 1


def test_recorded_ncu_backend_check_f_verdicts_follow_from_its_medians():
    """tests/fixtures/ncu-csv-exports/h200-python-backend-ncu: check f of gpu-checks/gpu-check-ncu.py (seed step 6, medians of 10
    runs, CUPTI application replay vs ncu application replay; durations 2 %, bytes 0.5 %, pct
    1 pt; CUPTI's durations from the counters, duration_source="counters") re-derived from the
    recorded medians gives the recorded verdicts: every row holds but the fp16 matmul's DRAM bytes
    read."""
    import json

    with open(os.path.join(HERE, "..", "ncu-csv-exports", "h200-python-backend-ncu", "ncu-backend-summary.json")) as f:
        d = json.load(f)
    verdicts = {c["name"]: c["ok"] for c in d["checks"] if c["name"].startswith("f app ")}
    failed = set()
    for key, v in d["numbers"]["f"].items():
        ann, metric = key.split(" | ")
        n, c = v["ncu_application"], v["cupti_application"]
        if "pct" in metric:
            ok = abs(c - n) <= 1.0
        else:
            ok = abs(c / n - 1) * 100 <= (2.0 if metric.startswith("gpu__time_duration") else 0.5)
        name = f"f app {ann[:16]} {metric[:20]}"
        assert verdicts[name] is ok, (name, n, c)
        if not ok:
            failed.add((ann, metric))
    assert len(verdicts) == 15
    assert failed == {("fp16 matmul 4096", "dram__bytes_read.sum")}
    # Durations from kernel records (INFO label "application-records"): the softmax's is 2.6 % above ncu's.
    soft = d["numbers"]["f"]["softmax 8192x1024 | gpu__time_duration.sum"]
    assert soft["cupti_application-records"] / soft["ncu_application"] - 1 > 0.02
    assert abs(soft["cupti_application"] / soft["ncu_application"] - 1) < 0.01


def test_recorded_python_steps_6_and_7_verdicts_follow_from_the_recorded_means():
    """summary-python.json: the judged rows of steps 6 and 7 (kprof's application replay with the
    read flush vs ncu's application replay, inputs made per repetition as the seed does; 3 runs)
    re-derived from the recorded means give the recorded verdicts, in the recorded order; what
    failed on the H200 (commit b7a1718, durations of the judged label from the counters) is the
    fp16 matmul's bytes read and written and the softmax's bytes written."""
    import json

    with open(os.path.join(HERE, "summary-python.json")) as f:
        d = json.load(f)
    v = d["numbers"]["vs_ncu"]
    kp, ncu = v["kprof"][v["judged"]], v["ncu_application"]
    rows = [r for r in d["rows"] if r[0].startswith("vs-ncu ") and r[0] != "vs-ncu-regions"]
    m_all = ["gpu__time_duration.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
             "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum"]
    found = sorted(set(v["ncu"]) & set(kp))
    assert len(rows) == len(found) * len(m_all) == 25
    failed = []
    for (name, ok, _), (ann, m) in zip(rows, [(a, m) for a in found for m in m_all]):
        assert name.startswith(f"vs-ncu {ann[:18]}"), (name, ann)
        k, n = kp[ann][m], ncu[ann][m]
        if ann == "a + b * c (unfused)" and m != "dram__bytes_read.sum":
            assert ok is None, name  # two kernels: reported, not judged
            continue
        want = abs(k - n) <= 1.0 if "pct" in m else abs(k / n - 1) * 100 <= (2.0 if m == "gpu__time_duration.sum" else 0.5)
        assert ok is want, (name, m, k, n)
        if not want:
            failed.append((ann, m))
    assert sorted(failed) == [("fp16 matmul 4096", "dram__bytes_read.sum"), ("fp16 matmul 4096", "dram__bytes_write.sum"),
                              ("softmax 8192x1024", "dram__bytes_write.sum")]
    # The judged label's durations came from the counters (duration_source="counters"); the same
    # replay with the discard flush timed with kernel records, about half a microsecond longer.
    soft = "softmax 8192x1024"
    records = v["kprof"]["application/discard"][soft]["gpu__time_duration.sum"]
    counters = kp[soft]["gpu__time_duration.sum"]
    assert abs(counters / ncu[soft]["gpu__time_duration.sum"] - 1) < 0.005 < (records - counters) / counters


def test_recorded_flush_leaves_no_line_of_a_16_mb_input_in_the_l2():
    """Part `evict` (10 runs each): after kprof's read flush a 16 MB sum finds (almost) none of its
    input in the L2, alone (the flush follows the same sum) or after a 512 MB read, as after ncu's
    invalidation: under 0.01 % of its L2 read sectors hit, and its DRAM bytes read are within
    0.5 % of ncu's. The flush is complete; what it leaves is an L2 full of clean lines."""
    ev = _extra()["evict"]["setups"]
    hits, sectors, read = ("lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
                           "dram__bytes_read.sum")
    for label in ("kprof alone/read", "kprof after 512 MB/read", "kprof alone/discard", "ncu application"):
        s = ev[label]["sum 16 MB"]
        assert statistics.mean(s[hits]) < 1e-4 * statistics.mean(s[sectors]), label
        assert statistics.mean(s[read]) > 16.7e6, label
        assert abs(_rel(s[read], ev["ncu application"]["sum 16 MB"][read])) < 0.005, label


def _copy_means(setup, kind, m):
    """The mean over its runs of every copy (region) of `kind` in an `alloc` setup."""
    return [statistics.mean(v[m]) for r, v in setup.items() if r.startswith(kind)]


def test_recorded_dram_bytes_read_of_l2_resident_data_vary_from_process_to_process():
    """Parts `alloc` + `ncuflush`, recorded twice (two device calls, new processes each time; 8
    copies of each input, each its own allocation, 10 runs or repetitions each): the matmul's DRAM
    bytes read spread by 1.5 % or more over the copies in kprof and in ncu alike, and the mean over
    the 8 copies of each tool moved by more than 1 % from one process to the next, so kprof minus
    ncu changed sign (-2.4 %, then +1.2 %): no 0.5 % comparison of two processes is possible on
    them. The softmax's input, read once, agrees within 0.1 % every time."""
    d = _extra()
    runs = [d["alloc"], d["alloc_repeat"]]
    read = "dram__bytes_read.sum"
    diffs = []
    for al in runs:
        k, n = (_copy_means(al[label], "matmul", read) for label in ("kprof application/read", "ncu application"))
        assert len(k) == len(n) == 8
        assert max(k) / min(k) > 1.015 and max(n) / min(n) > 1.015
        diffs.append(statistics.mean(k) / statistics.mean(n) - 1)
        ks, ns = (_copy_means(al[label], "softmax", read) for label in ("kprof application/read", "ncu application"))
        assert abs(statistics.mean(ks) / statistics.mean(ns) - 1) < 0.001
    assert diffs[0] < -0.02 and diffs[1] > 0.01, diffs
    for label in ("kprof application/read", "ncu application"):
        a, b = (statistics.mean(_copy_means(al[label], "matmul", read)) for al in runs)
        assert abs(a / b - 1) > 0.01, (label, a, b)


def test_recorded_dram_bytes_written_follow_the_l2_state_each_tool_starts_from():
    """The DRAM bytes written by kernels whose outputs fit in the L2 (the L2's evictions) are lower
    in kprof than under ncu in both recordings (matmul 2-4 %, softmax 12-13 %), and so are ncu's own
    when it starts from a read of twice the L2 (--cache-control none after a 128 MiB read) instead
    of its invalidation (matmul 2.4-2.5 %, softmax 8-10 %): the L2 starts full of clean lines
    instead of empty, and no CUDA API empties it. kprof after that same read (its own flush off)
    is within 0.5 % of ncu's matmul writes there; the softmax's stay 5 % lower."""
    d = _extra()
    write = "dram__bytes_write.sum"
    for al in (d["alloc"], d["alloc_repeat"]):
        for kind in ("matmul", "softmax"):
            k, n, nf = (statistics.mean(_copy_means(al[label], kind, write))
                        for label in ("kprof application/read", "ncu application", "ncu application, read flush"))
            assert k < nf < n and n / nf - 1 > 0.02, (kind, k, nf, n)
    al = d["alloc_repeat"]
    same_state = {kind: statistics.mean(_copy_means(al["kprof application, torch read flush"], kind, write))
                  / statistics.mean(_copy_means(al["ncu application, read flush"], kind, write)) - 1
                  for kind in ("matmul", "softmax")}
    assert abs(same_state["matmul"]) < 0.005 and -0.06 < same_state["softmax"] < -0.03, same_state


def _copy_diffs(setups, label, ref, kind, m):
    """Per copy, `label`'s mean over `ref`'s minus 1, and the same of the means over the copies."""
    a, r = _copy_means(setups[label], kind, m), _copy_means(setups[ref], kind, m)
    assert len(a) == len(r) == 8
    return [x / y - 1 for x, y in zip(a, r)], statistics.mean(a) / statistics.mean(r) - 1


def test_recorded_ncu_against_itself_in_a_new_process_with_the_same_allocations():
    """Part `placement`: ncu's child run twice (two processes, the same allocations in the same
    order): the softmax's bytes written repeat per copy within 1.5 % (the driver hands out the same
    pages: the pattern over the copies is the data's placement), the matmul's bytes read move by
    up to 1.7 % on a copy and 0.5 % on the mean of eight."""
    pl = _extra()["placement"]
    per_copy, mean = _copy_diffs(pl, "ncu application, again", "ncu application", "softmax", "dram__bytes_write.sum")
    assert max(map(abs, per_copy)) < 0.015 and abs(mean) < 0.005, (per_copy, mean)
    per_copy, mean = _copy_diffs(pl, "ncu application, again", "ncu application", "matmul", "dram__bytes_read.sum")
    assert max(map(abs, per_copy)) > 0.015 and abs(mean) > 0.004, (per_copy, mean)


def test_recorded_bytes_written_gap_is_the_l2_state_not_where_the_data_lie():
    """Part `placement`: kprof in a fresh child that allocates as ncu's child does (its data where
    ncu's are) still writes 7-14 % fewer bytes than ncu on every softmax copy, with the read flush
    and with the discard flush alike (within 0.5 % of each other): the gap is ncu's invalidation,
    which `discard.global.L2` does not reproduce."""
    pl = _extra()["placement"]
    write = "dram__bytes_write.sum"
    for label in ("kprof child/read", "kprof child/discard"):
        per_copy, mean = _copy_diffs(pl, label, "ncu application", "softmax", write)
        assert max(per_copy) < -0.07 and mean < -0.10, (label, per_copy, mean)
    _, mean = _copy_diffs(pl, "kprof child/discard", "kprof child/read", "softmax", write)
    assert abs(mean) < 0.005, mean


def test_recorded_ncus_invalidation_itself_adds_bytes_written():
    """Parts `dirty` and `reset`: ncu's invalidation after a torch read of twice the L2 (nothing
    dirty left to write back) writes 4-9 % more softmax bytes than the same read without it (every
    copy, two device calls), and 2.4 % fewer than its invalidation alone (the previous kernels'
    outputs still dirty). cuCtxResetPersistingL2Cache after the read is no invalidation: ncu then
    writes as without it."""
    d = _extra()
    write = "dram__bytes_write.sum"
    after_read = "ncu application, torch read, then its invalidation"
    per_copy, mean = _copy_diffs(d["dirty"], "ncu application, torch read", after_read, "softmax", write)
    assert max(per_copy) < -0.04 and mean < -0.06, (per_copy, mean)
    _, mean = _copy_diffs(d["dirty"], after_read, "ncu application", "softmax", write)
    assert -0.04 < mean < -0.01, mean
    per_copy, mean = _copy_diffs(d["reset"], "ncu application, torch read, reset", after_read, "softmax", write)
    assert max(per_copy) < -0.03 and mean < -0.06, (per_copy, mean)


def test_retired_byte_rows_of_l2_resident_data_are_judged_against_ncus_own_spread():
    """The short-kernel and graph durations, item 4: for data that fit in the H200's 60 MiB L2 the 0.5 % byte rows are retired;
    such a row holds when kprof's mean over 8 allocations (``placement``: kprof in a child process
    that allocates exactly as ncu's) differs from ncu's by at most ncu's own process-to-process
    spread (the largest change of a per-copy mean between two ncu processes with the same
    allocations), or 0.5 %, whichever is larger. Re-derived: the fp16 matmul's bytes read and
    written and the softmax's bytes read hold; the softmax's bytes written do not (-11.5 % against
    a 1.5 % spread: ncu invalidates the L2 before each pass, which no CUDA or CUPTI call does)."""
    import json
    import statistics as st

    with open(os.path.join(HERE, "gpu-check-extra-l2-dram-probes.json")) as f:
        p = json.load(f)["placement"]

    def means(setup, kind, metric):
        return [st.mean(p[setup][f"{kind} {i}"][metric]) for i in range(8)]

    verdicts = {}
    for kind in ("matmul", "softmax"):
        for metric in ("dram__bytes_read.sum", "dram__bytes_write.sum"):
            a, b = means("ncu application", kind, metric), means("ncu application, again", kind, metric)
            spread = max(abs(y / x - 1) for x, y in zip(a, b))
            diff = st.mean(means("kprof child/read", kind, metric)) / st.mean(a + b) - 1
            verdicts[(kind, metric)] = abs(diff) <= max(0.005, spread)
    assert verdicts == {
        ("matmul", "dram__bytes_read.sum"): True,
        ("matmul", "dram__bytes_write.sum"): True,
        ("softmax", "dram__bytes_read.sum"): True,
        ("softmax", "dram__bytes_write.sum"): False,
    }, verdicts



def test_recorded_truth_verdicts_follow_from_the_recorded_lines():
    """tests/fixtures/h200-short-kernel-and-graph-durations: the verdict table of the short-kernel and graph durations' GPU check (`2026-12-02-acceptance-graph-records-counters*.log`,
    build b15d1aa's predecessor with graph records on) re-derived by gpu-checks/truth_verdicts.py from
    the recorded lines: the rows that held and the rows that did not (see the fixture README)."""

    root = os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations")
    import tempfile

    log = os.path.join(tempfile.mkdtemp(), "combined.log")
    with open(log, "w") as out:
        for name in ("2026-12-02-acceptance-graph-records-counters-repeat.log", "2026-12-02-acceptance-graph-records-counters.log"):
            with open(os.path.join(root, name)) as f:
                out.write(f.read())
    r, rows, failed = _judge_failed(log)
    assert failed == [
        ("python", "energy per run (mm8192)"),
        ("python", "graph of 60 kernels"),
        ("python", "host cost per launch"),
        ("python", "mm1024"),
        ("python", "seed sweep speed"),
        ("python", "step 6 fp16_mm4096 DRAM %"),
        ("rust", "graph from 2 streams"),
        ("rust", "sgemm1024"),
    ], r.stdout
    assert r.returncode == 1
    held = [k for k, v in rows.items() if v == "PASS"]
    # 22 with the kprof run eager chain against the in-stream reference (a row since 2026-12-02).
    assert len(held) == 22 and ("python", "60-kernel eager chain") in held and ("rust", "k2us") in held, r.stdout
    assert ("kprof run", "eager chain (C++)") in held


def test_graph_records_with_the_guard_time_graphs_and_survive_graphs_captured_before_the_session():
    """tests/fixtures/h200-short-kernel-and-graph-durations/2026-12-02-graph-guard.log: the default graph mode
    (graph records, launches of executables instantiated before kprof's session falling back to
    node records) against node records, through the Rust API, the Python door and kprof run."""
    import json

    path = os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations", "2026-12-02-graph-guard.log")
    rows = []
    mode = None
    for line in open(path):
        if line.startswith("== KPROF_GRAPH_TRACE="):
            mode = line[len("== KPROF_GRAPH_TRACE="):].split()[0]
        elif line.startswith("TRUTH "):
            r = json.loads(line[6:])
            r["_mode"] = mode
            rows.append(r)
        elif line.startswith("kprof-run "):
            parts = line.split()
            if parts[2] == "graph":
                rows.append({"_mode": parts[1], "part": "kprof-run", "ns": float(parts[4].replace(",", ""))})

    def one(**kw):
        got = [r for r in rows if all(r.get(k) == v for k, v in kw.items())]
        assert len(got) == 1, (kw, got)
        return got[0]

    ev = lambda c: one(mode="events", case=c)["ns"]
    rust = lambda m, c: one(_mode=m, mode="kprof-default-application", case=c)["ns"]
    # Graph records: the 60-node graph within 3 %, the graph of 3 large kernels within 1 %.
    assert abs(rust("graph", "graph60") / ev("graph60") - 1) <= 0.03
    assert abs(rust("graph", "graph3big") / ev("graph3big") - 1) <= 0.01
    # Node records make the nodes run instrumented: the 60-node graph reads over 5 % long.
    assert rust("nodes", "graph60") / ev("graph60") - 1 > 0.05
    # Torch graphs captured before the session: no crash (every case has its row), the guard's
    # warning, and the span from node records; captured after: graph records, no warning.
    for c in ("graph60", "graph2stream", "mixed"):
        early = one(_mode="graph", part="kprof", case=c, late=False)
        assert any("instantiated before kprof's CUPTI session" in w for w in early["warnings"]), early
        late = one(_mode="graph", part="kprof", case=c, late=True)
        assert not late["warnings"], late
    # kprof run on the C++ program: within 3 % of CUDA events in the program without a profiler.
    plain = one(mode="graph_app-plain")["ns"]
    assert abs(one(_mode="graph", part="kprof-run")["ns"] / plain - 1) <= 0.03
    assert one(_mode="nodes", part="kprof-run")["ns"] / plain - 1 > 0.05


def test_energy_per_run_is_nan_with_its_reason_below_the_counters_period_and_power_times_time_above():
    """tests/fixtures/h200-short-kernel-and-graph-durations/2026-12-02-energy.log: 21 ms runs NaN with the
    reasons, 258 ms runs within 10 % of PowerW x duration, re-derived by truth_verdicts.py."""
    import re
    import subprocess
    import sys

    log = os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations", "2026-12-02-energy.log")
    script = os.path.join(HERE, "..", "..", "..", "gpu-checks", "truth_verdicts.py")
    r = subprocess.run([sys.executable, script, "judge", log], capture_output=True, text=True)
    rows = {re.split(r"\s{2,}", l.strip())[1]: re.split(r"\s{2,}", l.strip())[-1]
            for l in r.stdout.splitlines() if "energy per run" in l}
    assert rows == {"energy per run (mm8192)": "PASS", "energy per run (12 x mm8192)": "PASS"}, r.stdout


def test_default_auto_durations_verdicts_follow_from_the_recorded_lines():
    """tests/fixtures/h200-short-kernel-and-graph-durations/2026-12-02-acceptance-auto-default.log: the acceptance
    cases with duration_source="auto" as the default (the counters' gpu__time_duration for eager
    kernels, graph records for graphs). The eager rows that failed with the records by default
    (`2026-12-02-acceptance-defaults-graph-guard.log`) hold; what is left is listed."""
    log = os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations", "2026-12-02-acceptance-auto-default.log")
    r, rows, failed = _judge_failed(log)
    assert failed == [
        ("python", "10 eager + graph60 + 10 eager"),
        ("python", "graph from 2 streams"),
        ("python", "graph of 60 kernels"),
        ("python", "host cost per launch"),
        ("python", "mm1024"),
        ("python", "seed sweep speed"),
        ("rust", "graph from 2 streams"),
        ("rust", "sgemm1024"),
    ], r.stdout
    held = [k for k, v in rows.items() if v == "PASS"]
    assert len(held) == 26, r.stdout  # with the kprof run eager chain (+4.4 % against in-stream)
    for row in [("python", "60-kernel eager chain"), ("python", "single ~2 us kernel"), ("rust", "k2us"),
                ("rust", "60-kernel eager chain"), ("rust", "scale64M"), ("python", "mm2048")]:
        assert row in held, (row, r.stdout)


def test_defaults_decide_auto_after_the_warm_ups():
    """2026-12-02-acceptance-defaults.log (`2026-12-02*`): "auto" decided after the
    warm-up runs. Torch graphs captured before the session now take the records without the Range
    Profiler ever being enabled: the graph of 60 kernels reads 138.5 us against 136.1 us by CUDA
    events (128.1 us in `2026-12-02-acceptance-auto-default.log`), and the mixed region holds against the definition its
    DurationSource column declares (records: the in-stream time per kernel). The sweep and the
    kprof run rows are missing (this checkout's .carry had neither nsight-python nor the C++ case)."""
    log = os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations", "2026-12-02-acceptance-defaults.log")
    r, rows = _judge(log)
    failed = sorted(k for k, v in rows.items() if v == "FAIL")
    assert failed == [
        ("python", "graph from 2 streams"),
        ("python", "host cost per launch"),
        ("python", "mm1024"),
        ("python", "step 6 fp16_mm4096 DRAM %"),
        ("python", "step 6 fp16_mm4096 SM %"),
        ("rust", "graph from 2 streams"),
        ("rust", "sgemm1024"),
    ], r.stdout
    assert sorted(k for k, v in rows.items() if v == "MISSING") == [
        ("kprof run", "eager chain (C++)"), ("kprof run", "graph range (C++)"), ("python", "seed sweep speed")], r.stdout
    for row in [("python", "graph of 60 kernels"), ("python", "10 eager + graph60 + 10 eager")]:
        assert rows[row] == "PASS", (row, r.stdout)
    graph = [x for x in _truth_rows("2026-12-02-acceptance-defaults.log") if x.get("part") == "kprof"
             and x.get("case") == "graph60"][0]
    assert graph["source"] == ["records"] and 135_000 < graph["ns"] < 142_000, graph


def test_serial_kernel_records_cannot_time_graphs_even_when_switched_per_benchmark():
    """The serial records (KPROF_KERNEL_TRACE=serial with graph records) and the trace switch (a tried mode that switched
    to concurrent records for benchmarks that launch graphs, removed since): once serial kernel
    records are on in a process, a 60-node graph's record spans about one node (1.3 us for a
    graph that runs 200 us), in the Rust API and for torch graphs; serial records read eager
    kernels about 0.6 us above ncu. Why serial records are not the default."""
    for name in ("2026-12-02-serial-records-rust.log", "2026-12-02-trace-switch-rust.log"):
        rows = _truth_rows(name)
        graph = [r for r in rows if r.get("case") == "graph60" and r.get("trace") in ("serial", "auto")]
        assert graph and all(r["ns"] < 2000 for r in graph), (name, graph)
        events = [r for r in _truth_rows("2026-12-02-serial-records-graph-modes.log") if r.get("mode") == "events"
                  and r.get("case") == "graph60"]
        assert events[0]["ns"] > 190_000
    rows = _truth_rows("2026-12-02-serial-records-rust.log")
    serial = [r["ns"] for r in rows if r.get("case") == "k2us" and r.get("trace") == "serial"]
    ncu = [r["ns"] for r in rows if r.get("case") == "k2us" and r.get("mode") == "ncu-none"]
    assert 400 < serial[0] - ncu[0] < 800, (serial, ncu)
    torch = [r for r in _truth_rows("2026-12-02-trace-switch-graph-modes.log") if r.get("part") == "kprof"
             and r.get("case") == "graph60"]
    assert len(torch) == 2 and all(r["ns"] < 2000 for r in torch), torch


def test_auto_durations_take_the_records_for_graphs_captured_before_the_session():
    """2026-12-02-graph-refs-busy-gpu.log: torch graphs captured before kprof's first benchmark get
    record durations with a warning under the default duration_source="auto" (the counter pass
    would corrupt their node-record spans), graphs captured after get the counters for eager
    kernels and graph records (a graph from two streams within 3 % of CUDA events around its
    replay queued behind the previous one). The node-record span read 128.0 us while the Range
    Profiler stayed enabled vs 139.2 without it (the fallback now gives the session back)."""
    rows = _truth_rows("2026-12-02-graph-refs-busy-gpu.log")
    ref = {r["case"]: r["ns"] for r in rows if r.get("part") == "refs"}
    default = [r for r in rows if r.get("part") == "kprof" and not r.get("late")]
    assert {r["case"] for r in default} == {"graph60", "graph3big", "graph2stream", "mixed"}
    for r in default:
        assert r["source"] == ["records"], r
        assert any("instantiated before kprof's CUPTI session" in w for w in r["warnings"]), r
    late = {r["case"]: r for r in rows if r.get("part") == "kprof" and r.get("late")}
    assert all(r["source"] == ["counters"] for r in late.values()), late
    assert abs(late["graph2stream"]["ns"] / ref["graph2stream"] - 1) < 0.03
    with_profiler_on = next(r["ns"] for r in default if r["case"] == "graph60")
    records_only = next(r["ns"] for r in rows if r.get("part") == "kprof-records" and r["case"] == "graph60")
    assert records_only - with_profiler_on > 8000


def test_scaleout_on_one_gpu_recording_schema_and_why_small_sizes_differed():
    """tests/fixtures/h200-scaleout-two-workers-one-gpu/2026-12-02-two-workers-one-gpu.log: every schema,
    run-count and device row held for one worker, two workers sharing GPU 0, split runs and a
    worker killed once; the small sizes differed because the workers could not open the counters
    (CUPTI_ERROR_HARDWARE_BUSY), which the caller's release and the shared-GPU rule fix."""
    import re

    text = open(os.path.join(HERE, "..", "h200-scaleout-two-workers-one-gpu", "2026-12-02-two-workers-one-gpu.log")).read()
    verdicts = re.findall(r"^(PASS|FAIL)  (\S+): (.+?)\s{2,}", text, re.M)
    failed = {(who, what) for v, who, what in verdicts if v == "FAIL"}
    assert failed == {(w, "values within noise of single at every size") for w in ("1w", "2w", "2w-split", "2w-kill")}
    assert sum(v == "PASS" for v, _, _ in verdicts) == 17
    assert "CUPTI_ERROR_HARDWARE_BUSY" in text
    diffs = {n: [float(x) for x in re.findall(r"([+-]\d+\.\d+) (?:--|ov)", line)]
             for n, line in ((int(m.group(1)), m.group(0)) for m in re.finditer(r"^\s+(\d+) \|.*$", text, re.M))}
    assert set(diffs) == {512, 1024, 2048, 4096, 8192}, diffs
    assert all(abs(d) < 0.25 for n in (4096, 8192) for d in diffs[n]), diffs
    assert all(d < -10 for d in diffs[512]), "records vs counters on the 15 us matmul"


def test_run_metrics_cost_recording_gives_the_ratios_and_the_split_in_the_docs():
    """tests/fixtures/h200-kprof-run-metrics-vs-ncu/2026-12-02-af1d13e-run-cost.jsonl (the cost of `kprof run --metrics`): the walls,
    ratios against ncu and the time split quoted in docs/counters.md come from the recording."""
    import json

    lines = [json.loads(l[8:]) for l in open(os.path.join(HERE, "..", "h200-kprof-run-metrics-vs-ncu", "2026-12-02-af1d13e-run-cost.jsonl"))
             if l.startswith("RUNCOST ")]
    summary = next(l for l in lines if l.get("what") == "summary")
    walls = summary["walls_s"]
    assert round(walls["kprof-metrics2"], 2) == 24.67 and round(walls["ncu-metrics2-none"], 2) == 19.74
    assert round(walls["kprof-dram"], 2) == 14.15 and round(walls["ncu-dram-none"], 2) == 10.05
    assert summary["ratios"]["kprof-metrics2 / ncu-metrics2-none"] > 0.7, "the cost of `kprof run --metrics` is not met by this build"
    cost = summary["cost"]
    assert cost["kprof-metrics2"]["passes"] == 8 and cost["kprof-dram"]["passes"] == 1
    assert round(cost["kprof-metrics2"]["profiler_start_s"], 2) == 8.10
    assert round(cost["kprof-dram"]["profiler_start_s"], 2) == 3.99
    assert 10 < cost["kprof-metrics2"]["overhead_per_launch_pass_ms"] < 16


def test_run_metrics_in_one_launch_is_under_0_7x_ncu_with_the_same_values():
    """2026-12-02-run-cost.jsonl / .log (`2026-12-02*`, the cost of `kprof run --metrics`): `kprof run --metrics`
    in one launch (the counter launch gives the durations; the first counter-data image holds 64
    kernels). Its wall against ncu's with the same metrics and cache policy, its profiler start
    and its values against the two-launch baseline of build af1d13e (2026-12-02-af1d13e-kprof-metrics2-raw.csv), as
    quoted in docs/counters.md; the values are re-derived here with run_cost.py's own check."""
    import json
    import subprocess
    import sys

    folder = os.path.join(HERE, "..", "h200-kprof-run-metrics-vs-ncu")
    lines = [json.loads(l[8:]) for l in open(os.path.join(folder, "2026-12-02-run-cost.jsonl")) if l.startswith("RUNCOST ")]
    summary = next(l for l in lines if l.get("what") == "summary")
    walls, ratios, cost = summary["walls_s"], summary["ratios"], summary["cost"]
    assert ratios["kprof-metrics2 / ncu-metrics2-none"] <= 0.7 and ratios["kprof-dram / ncu-dram-none"] <= 0.7, ratios
    assert round(walls["kprof-metrics2"], 2) == 12.13 and round(walls["kprof-dram"], 2) == 5.55
    assert ratios["kprof-metrics2-records / ncu-metrics2-none"] > 0.7, "the two-launch layout stays slower"
    assert cost["kprof-dram"]["profiler_start_s"] < 0.5 and cost["kprof-metrics2"]["profiler_start_s"] < 1.0, cost
    one = next(l for l in lines if l.get("what") == "kprof-metrics2")
    executions = one["split"]["executions"]
    assert [e["label"] for e in executions] == ["repetition 1, counter launch"], "one launch"
    # The single launch's status: the start's parts (the time-split sums of this build missed them).
    log = open(os.path.join(folder, "2026-12-02-run-check.log")).read()
    assert '"first_image_ranges": 64' in log and '"first_image_s": 0.18' in log
    # Values: this recording's raw.csv against the af1d13e baseline, by run_cost.py's criterion.
    script = os.path.join(HERE, "..", "..", "..", "gpu-checks", "gpu-run", "run_cost.py")
    r = subprocess.run([sys.executable, script, "baseline", os.path.join(folder, "2026-12-02-kprof-metrics2-one-launch-raw.csv"),
                        os.path.join(folder, "2026-12-02-af1d13e-kprof-metrics2-raw.csv"),
                        "--metrics", "dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"],
                       capture_output=True, text=True)
    out = json.loads(r.stdout.split("RUNCOST ", 1)[1])
    assert r.returncode == 0 and out["ok"] and out["checked"] == 129, r.stdout
    assert out["worst"]["dram__bytes_read.sum"]["largest_abs_diff"] < 0.1
    assert out["worst"]["sm__throughput.avg.pct_of_peak_sustained_elapsed"]["largest_abs_diff"] < 0.5
    assert len(out["l2_resident_bytes_not_judged"]["dram__bytes_read.sum"]) == 3
    # The durations in the one launch are the counters', and so says the raw CSV.
    import csv

    rows = list(csv.DictReader(open(os.path.join(folder, "2026-12-02-kprof-metrics2-one-launch-raw.csv"))))
    assert {r["DurationSource"] for r in rows} == {"counters"}


def test_torchrun_two_ranks_on_one_gpu_gives_per_rank_rows():
    """h200-kprof-run-torchrun-two-ranks/2026-12-02-torchrun.log (the
    scale-out): `kprof run -- torchrun --nproc-per-node 2` with gloo on one GPU gives a row per
    rank, each with its 20 matmul runs; the ranks' medians agree; NCCL refuses two ranks on one
    device (recorded as information)."""
    import json

    text = open(os.path.join(HERE, "..", "h200-kprof-run-torchrun-two-ranks", "2026-12-02-torchrun.log")).read()
    assert "PASS: kprof run on torchrun (gloo) gives per-rank rows" in text
    medians = [json.loads(l[7:]) for l in text.splitlines() if l.startswith("MEDIAN ")]
    mm = {m["Rank"]: float(m["Median"]) for m in medians if m["Annotation"] == "matmul"}
    assert set(mm) == {"0", "1"} and all(m["NumRuns"] == "20" for m in medians if m["Annotation"] == "matmul")
    assert abs(mm["0"] / mm["1"] - 1) < 0.01, mm
    assert "Duplicate GPU detected" in text


def test_two_workers_measuring_at_once_on_one_gpu_read_long():
    """h200-scaleout-two-workers-one-gpu/2026-12-02-concurrent-workers-summary.json (2026-12-02):
    before workers sharing a GPU took turns, one worker matched the single process
    at every size, while two workers measuring at once read the 4096 matmul 55 % long (with
    runs_per_task=5) and the 512 one 8-11 % short (records against the single process's counters)."""
    import json

    s = json.load(open(os.path.join(HERE, "..", "h200-scaleout-two-workers-one-gpu", "2026-12-02-concurrent-workers-summary.json")))
    text = json.dumps(s)
    assert "2w-split" in text and "1w" in text
    text_log = open(os.path.join(HERE, "..", "h200-scaleout-two-workers-one-gpu", "2026-12-02-concurrent-workers.log")).read()
    assert "PASS  1w: values within noise of single at every size" in text_log
    for who in ("2w", "2w-split", "2w-kill"):
        assert f"FAIL  {who}: values within noise of single at every size" in text_log
    row4096 = next(l for l in text_log.splitlines() if l.strip().startswith("4096 |"))
    assert "+54.73" in row4096, row4096


def test_engine_check_after_the_ffi_layer_passes_every_check():
    """h200-engine-checks-raw-concurrent-trace/`2026-12-02-engine-console-auto-default-before-fixes.log`..6 (2026-12-02): the engine check failed
    a, e, f under the default "auto" durations (a check that timed every call of its closure, a
    graph region holding the graph's span, 100,000 kernels whose counter pass could not match),
    and passes every check once the closure can tell its counter pass, the graph's span counts and
    unmatched counter passes fall back to the records."""
    import re

    folder = os.path.join(HERE, "..", "h200-engine-checks-raw-concurrent-trace")

    def verdicts(name):
        text = open(os.path.join(folder, name)).read()
        table = text.split("kprof GPU check: all tables", 1)[1]
        return {m.group(1): m.group(2) for m in re.finditer(r"^([a-h])\s+(PASS|FAIL)\s", table, re.M)}, text

    before, _ = verdicts("2026-12-02-engine-console-auto-default-before-fixes.log")
    assert {k for k, v in before.items() if v == "FAIL"} == {"a", "e", "f"}, before
    after, text = verdicts("2026-12-02-engine-console.log")
    assert after == {k: "PASS" for k in "abcdefgh"}, after
    assert "overall: PASS" in text and "counted [100000, 100000] per run" in text
    assert "kernel records instead" in text


def test_workers_take_turns_run_check_and_the_cpp_graph():
    """`2026-12-02-094747a*` (build 094747a): two workers sharing GPU 0 take turns and match
    the single process at every size (21 checks pass); `kprof run --metrics` in one launch gives
    durations within 0.5 % of ncu's gpu__time_duration.sum per range occurrence; the C++ graph of
    60 kernels under `kprof run` within 3 % of CUDA events without a profiler."""
    import re

    base = os.path.join(HERE, "..")
    so = open(os.path.join(base, "h200-scaleout-two-workers-one-gpu", "2026-12-02-workers-take-turns.log")).read()
    assert "scaleout: 21 passed, 0 failed" in so
    for who in ("1w", "2w", "2w-split", "2w-kill"):
        assert f"PASS  {who}: values within noise of single at every size" in so
    diffs = [float(x) for x in re.findall(r"([+-]\d+\.\d+) (?:--|ov)", so)]
    assert len(diffs) == 20 and max(abs(d) for d in diffs) < 1.0, diffs
    run = open(os.path.join(base, "h200-kprof-run-metrics-vs-ncu", "2026-12-02-094747a-run-check.log")).read()
    assert "== run check: PASS" in run
    part = run.split("kprof unit of gpu__time_duration.sum", 1)[1]
    assert "20 range occurrences compared, 0 bad (tolerance 0.5%)" in part
    r, rows = _judge(os.path.join(base, "h200-short-kernel-and-graph-durations", "2026-12-02-cases-and-sweep.log"))
    assert rows[("kprof run", "graph range (C++)")] == "PASS", r.stdout


def test_sweep_speed_against_nsight_python():
    """2026-12-02-sweep-and-launch-cost.log: the seed sweep 4.9x faster than nsight-python 0.9.6 in
    the default settings (the short-kernel and graph durations asks 10x: not met), 9.9x with duration_source="records"."""
    r, rows = _judge(os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations", "2026-12-02-sweep-and-launch-cost.log"))
    assert rows[("python", "seed sweep speed")] == "FAIL", r.stdout
    assert "4.9x" in r.stdout
    sweeps = {x["tool"]: x["wall_s"] for x in _truth_rows("2026-12-02-sweep-and-launch-cost.log") if x.get("part") == "sweep"}
    assert 9.5 < sweeps["nsight-python 0.9.6"] / sweeps["kprof-records"] < 10.5, sweeps


def test_house_recheck_verdicts_follow_from_the_summaries():
    """h200-gpu-checks-after-the-house: counters, conditions and ncu pass; the Python
    check's step 4 read range-replay durations idle included under "auto" (the `2026-12-02-*before-the-range-fix*` files) and passes once
    auto takes the records there (`*after-the-range-fix*`); what still fails is what failed on 2026-11-30."""
    import json

    folder = os.path.join(HERE, "..", "h200-gpu-checks-after-the-house")
    log1 = open(os.path.join(folder, "2026-12-02-counters-conditions-ncu-python-all-checks.log")).read()
    for part in ("counters", "conditions", "ncu"):
        assert f"== {part}: exit 0 after" in log1, part
    assert "ALL CHECKS PASSED" in log1 and "wrote /root/out/all/conditions/conditions_fixture.json; overall PASS" in log1

    def step4(name):
        t = pd.read_csv(os.path.join(folder, name)).set_index(["cache_control", "MB"]).time_us
        return t[("all", 1.0)], t[("none", 1.0)], t[("all", 1024.0)], t[("none", 1024.0)]

    cold1, warm1, _, _ = step4("2026-12-02-python-step4-before-the-range-fix.csv")
    assert cold1 > 50 and warm1 > 50, "the range's push-to-pop time, not a 1 MB kernel's"
    cold1, warm1, cold1g, warm1g = step4("2026-12-02-python-step4-after-the-range-fix.csv")
    assert warm1 < cold1 < 5 and abs(warm1g / cold1g - 1) < 0.03
    assert "driver resource was unavailable" in open(
        os.path.join(folder, "2026-12-02-python-ncu-compare-driver-resource-unavailable.txt")).read()
    rows = json.load(open(os.path.join(folder, "2026-12-02-python-summary.json")))["rows"]
    failed = sorted(r[0] for r in rows if r[1] in (False, "False"))
    assert failed == ["vs-ncu fp16 matmul 4096 bytes_write", "vs-ncu softmax 8192x1024 bytes_write"], failed
    assert next(r for r in rows if r[0] == "step4")[1] in (True, "True")
    checks = json.load(open(os.path.join(folder, "2026-12-02-ncu-backend-summary.json")))["checks"]
    assert [c["name"] for c in checks if c["ok"] is False] == ["f app fp16 matmul 4096 dram__bytes_read.sum"]


def test_kprof_run_metrics_on_a_graph_program():
    """h200-kprof-run-metrics-vs-ncu/s11-call*: `kprof run --metrics` on the C++ graph program of
    the short-kernel and graph durations. Before: the Range Profiler started at a launch inside the program's stream capture
    (its graph never ran: the program exited 1, the graph range was missing); then started inside
    a graph launch (a segmentation fault). After: captured launches and graph launches before the
    first kernel launch are not profiled, a timing launch gives the durations, and the graph range
    is within 3 % of CUDA events around the replay without a profiler."""
    import json
    import math

    folder = os.path.join(HERE, "..", "h200-kprof-run-metrics-vs-ncu")
    before = open(os.path.join(folder, "2026-12-02-graph-app-before-the-fix-console.txt")).read()
    assert "exited with 1 in its counter launch" in before and "\ngraph " not in before
    crash = open(os.path.join(folder, "2026-12-02-graph-app-profiler-started-in-a-graph-launch-console.txt")).read()
    assert "exited with 139" in crash
    status = json.load(open(os.path.join(folder, "2026-12-02-graph-app-counter-launch-status.json")))["counters"]
    assert (status["captured_launches"], status["graph_launches_before_start"]) == (60, 23)
    assert status["graph_launches"] == 23 and status["kernels_matched"] == status["launches"] == 1200
    plain_us = float(open(os.path.join(folder, "2026-12-02-graph-app-plain.txt")).read().split()[1])
    vals: dict = {}
    for r in csv.DictReader(open(os.path.join(folder, "2026-12-02-graph-app-raw.csv"))):
        vals.setdefault((r["Annotation"], r["Metric"], r["DurationSource"]), []).append(
            float(r["Value"]) if r["Value"] else math.nan)
    graph = vals[("graph", "gpu__time_duration.sum", "records")]
    assert len(graph) == 20 and abs(statistics.median(graph) / 1e3 / plain_us - 1) < 0.03
    assert all(math.isnan(v) for v in vals[("graph", "dram__bytes_read.sum", "")]), "graph nodes are not profiled"
    assert len(vals[("eager", "dram__bytes_read.sum", "")]) == 20


def test_where_the_default_sweeps_time_goes():
    """`2026-12-02-graph-probe-matmul-clock-sweep.log`/2: the seed sweep in default settings costs the counters about 0.5 s more than the
    records on a process's first sweep (the Range Profiler's plan and enabling, 0.25 s, and the
    first collections), and the records sweep is the plain torch work plus the pandas import: the
    10x of the short-kernel and graph durations is not met (5.3x after the range fix)."""
    for name in ("2026-12-02-graph-probe-matmul-clock-sweep.log", "2026-12-02-sweep-after-the-range-fix.log"):
        sweeps = {x["tool"]: x for x in _truth_rows(name) if x.get("part") == "sweep"}
        auto, records, plain = sweeps["kprof"], sweeps["kprof-records"], sweeps["plain torch"]
        first = auto["counter_cost"][0]
        extra = auto["wall_s"] - records["wall_s"]
        counted = first["plan_s"] + first["session_config_s"] + first["session_enable_s"] + first["counter_run_s"]
        assert 0.4 < extra < 0.8 and abs(counted - extra) < 0.15, (extra, counted)
        assert first["collections"] == first["counter_runs"] == 30 and first["sessions"] == 1
        assert abs(records["wall_s"] - plain["wall_s"] - plain["pandas_import_s"]) < 0.15
        ratio = sweeps["nsight-python 0.9.6"]["wall_s"] / auto["wall_s"]
        assert 4 < ratio < 10, ratio


def test_matmul_1024_under_ncu_takes_more_cycles_at_the_same_clock():
    """`2026-12-02-graph-probe-matmul-clock-sweep.log` mmclock: the fp32 matmul 1024's 2 % gap to ncu (the short-kernel and graph durations) is not the clock (1.96
    GHz in both) but cycles (ncu +2.3 %), with 0.8 % more DRAM bytes read under ncu's cache control."""
    rows = _truth_rows("2026-12-02-graph-probe-matmul-clock-sweep.log")
    med = {(r["part"], r["case"], r["metric"]): r["median"] for r in rows if r.get("part", "").startswith("mmclock")}
    clock = "sm__cycles_elapsed.avg.per_second"
    k, n = ("mmclock", "mm1024"), ("mmclock-ncu", "mm1024")
    assert abs(med[(*k, clock)] / med[(*n, clock)] - 1) < 0.005
    cycles = med[(*n, "sm__cycles_elapsed.max")] / med[(*k, "sm__cycles_elapsed.max")] - 1
    time = med[(*n, "gpu__time_duration.sum")] / med[(*k, "gpu__time_duration.sum")] - 1
    assert 0.015 < cycles < 0.035 and abs(cycles - time) < 0.005, (cycles, time)
    assert med[(*n, "dram__bytes_read.sum")] > med[(*k, "dram__bytes_read.sum")]
    # At 2048 the two agree within 0.2 % in time and cycles.
    k2, n2 = ("mmclock", "mm2048"), ("mmclock-ncu", "mm2048")
    assert abs(med[(*n2, "sm__cycles_elapsed.max")] / med[(*k2, "sm__cycles_elapsed.max")] - 1) < 0.002


def test_graph_times_depend_on_cupti_state_in_the_process():
    """`2026-12-02-graph-probe-matmul-clock-sweep.log`/8/9: graphs replayed under CUPTI run differently from a process without it, and
    kprof measures them as they run there: graph60 137 us by events before kprof, 129 us after
    its counters were released; the two-stream graph 114 us before, 161 us (instantiated before)
    or 124 us (after) with the Range Profiler session open. kprof's value follows the events
    measured after it in the same process (events_after) within 6 % (-5.1 % to -0.7 %), more
    closely than the events of a process without CUPTI."""
    import json

    line = open(os.path.join(HERE, "..", "h200-short-kernel-and-graph-durations",
                             "2026-12-02-graph-events-by-cupti-state.log")).read()
    st = json.loads(line.split(" ", 1)[1])
    assert st["graph2stream_old_rp_open"] / st["graph2stream_none"] > 1.3
    assert st["graph60_old_rp_released"] / st["graph60_none"] < 0.95
    for name in ("2026-12-02-graph-probe-matmul-clock-sweep.log", "2026-12-02-graphs-captured-with-the-range-profiler-open.log"):
        for r in (x for x in _truth_rows(name) if x.get("part") == "graphprobe"):
            assert abs(r["kprof_ns"] / r["events_after_ns"] - 1) < 0.06, r["case"]


def test_multigpu_dry_run_on_one_gpu():
    """h200-multigpu-dry-run-one-gpu: the multi-GPU sweep's script on one H200: the 64-configuration sweep with
    devices="all" matches one worker within 1 % per configuration, every row names its GPU, and a
    SIGKILLed worker's configurations are retried with nothing lost."""
    import json

    d = json.load(open(os.path.join(HERE, "..", "h200-multigpu-dry-run-one-gpu", "summary-multigpu.json")))
    assert d["gpus"] == 1 and d["target"] is None
    assert [c["name"] for c in d["checks"] if not c["ok"]] == []
    assert len(d["checks"]) == 9
    table = d["table"]
    assert len(table) == 64 and table[0]["n"] == 512 and table[-1]["n"] == 8192
    worst = max(abs(r["all_ns"] / r["one_ns"] - 1) for r in table)
    assert worst < 0.01 and abs(worst * 100 - max(abs(r["diff_pct"]) for r in table)) < 1e-9
    assert set(d["walls"]) == {"one", "all", "kill"}


def test_the_sweep_bench_reports_the_recorded_ratio():
    """benches/seed_sweep_vs_nsight.py on `2026-12-02-sweep-after-the-range-fix.log`: 5.3x in default settings, 8.7x with
    the records, the counters' first-sweep split, the target not met."""
    bench = _sweep_bench()
    text, ratio = _sweep_bench_report(bench, "2026-12-02-sweep-after-the-range-fix.log")
    assert abs(ratio - 7.065 / 1.343) < 0.01
    assert "5.3x (target 12x: not met)" in text and "8.7x" in text
    assert "30 collections" in text and "pandas' import" in text
    assert bench.report({})[1] is None and "not measured" in bench.report({})[0]
