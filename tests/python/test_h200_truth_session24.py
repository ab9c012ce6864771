"""Issue 17's recordings of session 24, judged again here: NVML's instantaneous power on the H200
(tests/fixtures/h200-power-cap-and-long-kernels/`s24-call1-*`, `gpu_check_power.py instant`),
the measurement that decides whether kprof's rests after long work could be skipped where the
work draws little power."""

from __future__ import annotations

import statistics

from truth_recordings import power_rows

POWER = "s24-call1-nvml-instant-power-every-100-ms.log"


def _instant():
    rows = power_rows(POWER)
    phases = {r["phase"]: r for r in rows if "phase" in r and r["phase"] != "idle"}
    works = {r["work"]: r for r in rows if "work" in r}
    trace = next(r["trace"] for r in rows if "trace" in r)
    after_sync = next(r["seed_pace_read_after_sync_w"] for r in rows if "seed_pace_read_after_sync_w" in r)
    limit = next(r["limit_w"] for r in rows if "limit_w" in r)
    return phases, works, trace, after_sync, limit


def test_session24_instant_power_moves_only_every_100_ms():
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


def test_session24_the_power_of_work_that_never_reached_the_cap_sits_near_it():
    """What back-to-back work drew (the median of 1.5 s): the bf16 matmul 16384 718 W against the
    700 W limit (946 W in its first 100 ms, then `SwPowerCap` and 1275-1515 MHz, kernels 12.2-13.1
    ms); fp32 matmuls 8192 649 W and 4096 638 W at 1980 MHz with no reason and steady kernels (21.5
    and 2.67 ms); the matmul 1024 513 W, `x * 2` over 64M floats 534 W, a 1M-float multiply (launch
    bound) 128 W. The work that never slowed drew up to 93 % of the limit: a rule skipping rests
    below some share of the limit would need a margin this recording does not give (session 22's
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
