"""The power cap and long tensor-core kernels on the H200 (the short-kernel and graph durations, 2026-12-03): the recordings
of tests/fixtures/h200-power-cap-and-long-kernels (gpu-checks/gpu_check_power.py), judged again.
A bf16 matmul 16384 (about 11 ms) slows by 11-16 % after about 55 ms of back-to-back load, where
ncu, which idles between the kernels it profiles, does not see it; kprof read the slow value
until runner/gpu_rest.rs made the GPU idle after long work as long as the work took."""

from __future__ import annotations

import csv
import os
import statistics

from truth_recordings import POWER_DIR as DIR
from truth_recordings import power_rows as rows

SW_POWER_CAP = 0x4


def kprof_cases(name):
    """{case: median per kernel (ns)} of a recording's kprof rows, and ncu's ten in a row (ns)."""
    rs = rows(name)
    ncu = next(r["ns"] for r in rs if r["part"] == "ncu")
    return {r["case"]: r["median"] for r in rs if r["part"] == "kprof"}, ncu


def test_back_to_back_load_hits_the_power_cap_after_about_55_ms_and_nvml_is_too_slow_to_tell():
    """The burst: five matmuls at 10.8 ms, then 12.6-13.1 ms; NVML's values move about every 100 ms,
    its SwPowerCap reason shows 0.2 s into the load and is still set 0.4 s after it ended."""
    burst = {k: v for r in rows("2026-12-03-burst-waits-and-kprof-before-rests.log") if r["part"] == "burst" for k, v in r.items()}
    ms = burst["ms"]
    assert max(ms[:5]) < 11.1 and min(ms[10:]) > 12.3
    first_cap = min(t for t, _clk, _w, reasons in burst["during"] if reasons & SW_POWER_CAP)
    assert first_cap > 0.2
    assert all(reasons & SW_POWER_CAP for _t, _clk, _w, reasons in burst["after"])
    assert burst["first_clear_s"] is None
    # Distinct NVML clock readings over the ~0.5 s of load: a handful, not one per 10 ms poll.
    assert len({clk for _t, clk, _w, _r in burst["during"]}) <= 6


def test_idle_as_long_as_the_work_keeps_runs_at_ncus_value():
    """Idle between runs: pairs of matmuls (a timing and a counter pass) with 0 / 5 ms of idle after each read
    12.49 / 11.40 ms, with 11 ms or more 10.74-10.82 ms, ncu's 10.78-10.82 ms for ten in a row;
    runs of eight (88 ms) slow down within themselves whatever the idle after them."""
    rest = {(r["k"], r["rest_ms"]): r["median_last"] for r in rows("2026-12-03-idle-between-runs.log")}
    assert rest[(2, 0)] > 12.3 and 11.1 < rest[(2, 5)] < 12.0
    for idle in (11, 22, 44, 88):
        assert rest[(2, idle)] < 10.85, idle
    for idle in (0, 5, 11, 22, 44, 88):
        assert rest[(8, idle)] > 12.3, idle
    with open(os.path.join(DIR, "2026-12-03-ncu-ten-in-a-row.csv"), encoding="utf-8") as f:
        ncu = [float(r["gpu__time_duration.sum"].replace(",", "")) for r in csv.DictReader(f)]
    assert len(ncu) == 10 and 10.75e6 < min(ncu) and max(ncu) < 10.85e6


def test_kprof_read_the_capped_value_before_it_rested_the_gpu():
    """The build before runner/gpu_rest.rs: two to four runs at 10.8 ms, then
    12.1-12.6 ms flagged Throttled, with the thermal guard on and off alike."""
    for r in rows("2026-12-03-burst-waits-and-kprof-before-rests.log"):
        if r["part"] != "kprof":
            continue
        v = r["values"]
        assert max(v[:2]) < 10.9e6 and min(v[-3:]) > 12.0e6, r["thermal"]
        assert r["Throttled"][-1] == 1.0 and r["ThrottleReasons"][-1] == "0x4"


def test_kprof_reads_ncus_value_once_it_rests_the_gpu_after_long_work():
    """Four starts of the machine with the rests (ncu's ten read 11.16-11.22, 10.96-10.99,
    11.01-11.09 and 10.83-10.88 ms; the last the engine as committed for these pieces of work, all
    under 100 ms):
    one matmul per region cold and warm, and eight per region cold, within 0.5 % of ncu's median
    of the same call; eight per region warm still 4-8 % long (a warm counter pass runs them back to
    back: no flush, so no rest, between them)."""
    for name in ("2026-12-03-kprof-with-rests-and-ncu.log", "2026-12-03-kprof-with-rests-after-recorded-runs-and-ncu.log",
                 "2026-12-03-kprof-rests-after-10-ms-and-ncu.log", "2026-12-03-kprof-rests-counting-pass-kernels-and-ncu.log"):
        got, ncu = kprof_cases(name)
        ref = statistics.median(ncu)
        for case in ("one", "eight", "one_warm"):
            assert abs(got[case] / ref - 1) < 0.005, (name, case, got[case], ref)
        assert 0.04 < got["eight_warm"] / ref - 1 < 0.08, (name, got["eight_warm"], ref)
    # Once warm-up runs count for nothing: the rests of a one-matmul benchmark stay near
    # its recorded passes' time (10 runs x 2 passes x 11 ms), not the warm-up's first-call set-up.
    for name in ("2026-12-03-kprof-with-rests-after-recorded-runs-and-ncu.log", "2026-12-03-kprof-rests-after-10-ms-and-ncu.log",
                 "2026-12-03-kprof-rests-counting-pass-kernels-and-ncu.log"):
        one = next(r for r in rows(name) if r.get("case") == "one")
        assert 0.15 < one["gpu_rest_s"] < 0.3, name
