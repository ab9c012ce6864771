#!/usr/bin/env python3
"""pandas baseline for crates/kprof-core/benches/aggregate.rs: the same shape of data
(10,000 series x 1,000 runs = 10,000,000 samples, 0.1 % NaN, one thread) aggregated with
groupby: mean, std (ddof 1), min, max, median, and the 5th/95th percentiles.

pandas computes fewer statistics than kprof's aggregate (no t interval, RSD, outliers, kernel,
metadata), so the comparison flatters pandas slightly. Prints `RESULT samples_per_s=...`.

    pip install numpy pandas && python3 benches/aggregate_vs_pandas.py
"""

import time

import numpy as np
import pandas as pd

SERIES = 10_000
RUNS = 1_000


def main():
    rng = np.random.default_rng(42)
    n = SERIES * RUNS
    # Run-major within a config of 4 series, like the Rust bench.
    cfg = np.repeat(np.arange(SERIES // 4), RUNS * 4)
    series = (cfg * 4 + np.tile(np.arange(4), n // 4)).astype(np.int32)
    value = 1000.0 + cfg + rng.random(n) * 50.0
    value[rng.random(n) < 0.001] = np.nan
    df = pd.DataFrame({"series": series, "value": value})
    print("pandas %s, numpy %s: %d samples in %d series" % (pd.__version__, np.__version__, n, SERIES))

    best = float("inf")
    for i in range(3):
        t = time.perf_counter()
        g = df.groupby("series")["value"]
        out = g.agg(["mean", "std", "min", "max", "median"])
        q = g.quantile([0.05, 0.95]).unstack()
        out["p05"] = q[0.05]
        out["p95"] = q[0.95]
        secs = time.perf_counter() - t
        best = min(best, secs)
        print("run %d: %d rows in %.3f s (%.2f M samples/s)" % (i, len(out), secs, n / secs / 1e6))
    print("RESULT samples=%d samples_per_s=%.0f" % (n, n / best))


if __name__ == "__main__":
    main()
