"""Issue 17's recordings of session 22, judged again here: the whole acceptance table with the
rests of runner/gpu_rest.rs (tests/fixtures/h200-short-kernel-and-graph-durations/`s22-call1-*`),
and the bf16 matmul 16384 per region (one, eight, sixteen, twenty-four), a ten-layer bf16 MLP and
the energy rows, against ncu of the same call
(tests/fixtures/h200-power-cap-and-long-kernels/`s22-*`, scripts/gpu_check_power.py).

Call 1: a warm counter pass waits and rests between its kernels after a long timing pass (new),
runs of 100 ms or more earned no rest (the rule of session 21). Call 2: that limit at 200 ms.
Call 3: the rule committed (fc39eaa): a run is long, and earns no rest, only when its timing pass
takes 200 ms after a rest; a run with a rest within an update of NVML's energy counter gets NaN
energy with the reason."""

from __future__ import annotations

import json
import math
import os
import statistics

from truth_recordings import judge_failed, truth_log

POWER_DIR = os.path.join(os.path.dirname(__file__), "..", "fixtures", "h200-power-cap-and-long-kernels")
CALL1 = "s22-call1-warm-rests-100-ms-limit-mlp-and-ncu.log"
CALL2 = "s22-call2-rests-below-200-ms-and-ncu.log"
CALL3 = "s22-call3-long-runs-judged-after-a-rest-and-ncu.log"


def power_rows(name):
    """The `POWER {json}` rows of a recording."""
    with open(os.path.join(POWER_DIR, name), encoding="utf-8") as f:
        return [json.loads(line[6:]) for line in f if line.startswith("POWER ")]


def matmul_vs_ncu(name):
    """{case: % of kprof's median per kernel over the median of ncu's ten in a row}, and the rows."""
    rows = power_rows(name)
    ncu = statistics.median(next(r["ns"] for r in rows if r["part"] == "ncu" and r["case"] == "ten"))
    kp = {r["case"]: r for r in rows if r["part"] == "kprof"}
    return {c: (r["median"] / ncu - 1) * 100 for c, r in kp.items() if "per_kernel_ns" in r}, kp, ncu


def energy_rows(name):
    """The `energy` and `energy-long` rows of a recording, by part."""
    out = {}
    with open(os.path.join(POWER_DIR, name), encoding="utf-8") as f:
        for line in f:
            if line.startswith("TRUTH "):
                r = json.loads(line[6:])
                if r.get("part", "").startswith("energy"):
                    out[r["part"]] = r
    return out


def test_session22_the_acceptance_table_with_the_rests():
    """Call 1, the whole table (committed engine of session 21 plus the warm rests): 28 of 34 rows
    hold; failing: graphs from two streams in both doors (torch +20.0 %, Rust +7.8 %), the fp32
    matmul 1024 in both doors (+1.2 %: ncu's own value moves 2 % between processes, kprof's
    62.8-63.0 µs), step 6 `x * 2` DRAM % -0.81 point in one process, the seed sweep 6.7x
    (kprof 1.23 s, nsight-python 0.9.6 8.21 s, medians of two)."""
    r, rows, failed = judge_failed(truth_log("s22-call1-acceptance-table-with-rests.log"))
    assert r.returncode == 1
    assert "28 passed, 6 failed, 0 missing" in r.stdout
    assert failed == sorted([
        ("python", "graph from 2 streams"), ("rust", "graph from 2 streams"), ("python", "mm1024"),
        ("rust", "sgemm1024"), ("python", "step 6 x2_64M DRAM %"), ("python", "seed sweep speed"),
    ])
    for key in (("python", "graph of 60 kernels"), ("python", "60-kernel eager chain"), ("python", "mm8192"),
                ("python", "energy per run (12 x mm8192)"), ("kprof run", "graph range (C++)")):
        assert rows[key] == "PASS", key


def test_session22_before_the_fix_a_run_slowed_past_100_ms_earned_no_rest():
    """Call 1: eight matmuls per region (88 ms rested) read +16.8 % cold and +18.1 % warm: the
    power cap slowed their timing pass past 100 ms, which then earned no rest, so every run stayed
    slowed (no rest in those benchmarks at all); one per region within 0.7 %. The ten-layer MLP
    region (30 kernels, 57 ms) within 1 % of ncu's sum cold and warm (the warm one with the new
    rests between its counter pass's kernels)."""
    pct, kp, _ = matmul_vs_ncu(CALL1)
    assert abs(pct["one"]) < 0.7 and abs(pct["one_warm"]) < 0.7
    assert 15 < pct["eight"] < 20 and 15 < pct["eight_warm"] < 20
    assert kp["eight"]["gpu_rest_s"] == kp["one"]["gpu_rest_s"]  # no rest while eight ran
    rows = power_rows(CALL1)
    ncu = {r["cache"]: r["sum_ns"] for r in rows if r["part"] == "ncu" and r["case"] == "mlp"}
    assert all(r["kernels"] == 30 for r in rows if r["part"] == "ncu" and r["case"] == "mlp")
    for case, cache in (("mlp_warm", "none"), ("mlp_cold", "all")):
        assert kp[case]["source"] == ["counters"]
        assert 0 < (kp[case]["median"] / ncu[cache] - 1) * 100 < 1, case


def test_session22_rested_runs_read_ncus_value_cold_and_warm():
    """Calls 2 and 3 (two machine starts: ncu's ten 11.05-11.13 and 11.31-11.37 ms): one and eight
    matmuls per region, cold and warm, within 0.5 % of ncu's median (eight warm was +5-7 % in
    session 21, without rests inside a warm counter pass)."""
    for name in (CALL2, CALL3):
        pct, _, _ = matmul_vs_ncu(name)
        for case in ("one", "eight", "one_warm", "eight_warm"):
            assert abs(pct[case]) < 0.5, (name, case, pct[case])


def test_session22_regions_long_by_themselves_still_read_the_capped_speed():
    """Sixteen matmuls per region (176 ms at full speed) read +15-17 % in calls 2 and 3, twenty-
    four +15 % in call 3: the cap slows their timing pass within itself past 200 ms even after a
    rest, so they run back to back once judged long (their energy kept); call 3's first run, rested
    after the warm-up, reads ncu's value."""
    for name in (CALL2, CALL3):
        pct, kp, ncu = matmul_vs_ncu(name)
        assert 14 < pct["sixteen"] < 18, (name, pct["sixteen"])
    pct, kp, ncu = matmul_vs_ncu(CALL3)
    assert 14 < pct["twentyfour"] < 18
    for case in ("sixteen", "twentyfour"):
        first, rest = kp[case]["per_kernel_ns"][0], kp[case]["per_kernel_ns"][1:]
        assert abs(first / ncu - 1) < 0.005 and min(rest) > 1.13 * ncu, case


def test_session22_energy_is_nan_beside_rests_and_kept_for_long_runs():
    """Call 3: the fp32 matmul 8192 (21.4 ms runs) NaN with the reason for every run; twelve per
    region (257-272 ms) NaN for the first two runs (a rest beside each: the first, unrested after
    the warm-up, earns one; the second starts after it), the others within 10 % of power x
    duration (median x1.013). Call 2 (runs under 200 ms NaN whatever the rests) kept all ten."""
    en = energy_rows("s22-call3-energy-rows.log")
    assert all(math.isnan(e) for e in en["energy"]["columns"]["EnergyMilliJ"])
    assert any("shorter than the update period" in w for w in en["energy"]["warnings"])
    long = en["energy-long"]
    e, p, v = (long["columns"][k] for k in ("EnergyMilliJ", "PowerW", "Value"))
    assert math.isnan(e[0]) and math.isnan(e[1]) and not any(math.isnan(x) for x in e[2:])
    ratios = [ei / (pi * vi / 1e6) for ei, pi, vi in zip(e[2:], p[2:], v[2:])]
    assert abs(statistics.median(ratios) - 1) < 0.10
    assert any("2 run(s) have EnergyMilliJ NaN: kprof let the GPU idle" in w for w in long["warnings"])
    e2 = energy_rows("s22-call2-energy-rows.log")["energy-long"]["columns"]["EnergyMilliJ"]
    assert not any(math.isnan(x) for x in e2)
