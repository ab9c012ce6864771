"""Throughput per region and configuration: the work one run does (elements, bytes, FLOPs, from
a callable of the configuration) over its duration, with the confidence interval the duration's
gives, and the share of the device's peak the counters measured.

``work(*config values)`` (the values in the benchmark's parameter order, as ``derive_metric``
gets them) returns a dict of quantities per run: ``"elements"``, ``"bytes"``, ``"flops"`` or
``"flops:<precision>"`` (``fp64``, ``fp32``, ``fp16``, ``tensor fp16``). For each quantity q and
duration d (``gpu__time_duration.sum``, or ``cuda_event_elapsed.sum``, in ns):

* ``PerSecond`` = q / mean(d); its interval ``[q / CI95_Upper(d), q / CI95_Lower(d)]``;
* ``Peak``: bytes against the DRAM's peak bytes/s, ``flops:<precision>`` against that
  precision's peak FLOP/s, ``flops`` against the peak of the one precision whose FLOP/s the
  counters measured (from :meth:`ProfileResults.speed_of_light`, so only with the roofline
  metrics); NaN otherwise. ``PctOfPeak`` and its interval scale the rate's.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .exceptions import ConfigError

DURATION_METRICS = ("gpu__time_duration.sum", "cuda_event_elapsed.sum")
QUANTITIES = ("elements", "bytes", "flops")
COLUMNS = (
    "Quantity",
    "PerRun",
    "PerSecond",
    "CI95_Lower",
    "CI95_Upper",
    "Peak",
    "PctOfPeak",
    "PctOfPeak_CI95_Lower",
    "PctOfPeak_CI95_Upper",
)


def check(work: Any) -> Callable | None:
    """The ``throughput`` option: None or a callable."""
    if work is not None and not callable(work):
        raise ConfigError(f"throughput must be a callable of the configuration returning a dict, got {work!r}")
    return work


def _quantities(work: Callable, values: tuple) -> dict[str, float]:
    name = getattr(work, "__name__", repr(work))
    try:
        out = work(*values)
    except Exception as e:  # the user's function: say where
        raise ConfigError(f"throughput {name}{values!r} raised {type(e).__name__}: {e}") from e
    if not isinstance(out, dict) or not out:
        raise ConfigError(f"throughput {name}{values!r} returned {out!r}; return a dict such as {{'flops': 2 * n**3}}")
    for q, v in out.items():
        base = q.split(":", 1)[0] if isinstance(q, str) else None
        if base not in QUANTITIES or (base != "flops" and ":" in q):
            raise ConfigError(
                f"throughput {name} returned the quantity {q!r}; use 'elements', 'bytes', 'flops' or 'flops:<precision>'"
            )
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise ConfigError(f"throughput {name} returned {v!r} for {q!r}; give a finite number >= 0 per run")
    return {q: float(v) for q, v in out.items()}


def _peaks(sol) -> dict[tuple[str, str], dict[str, float]]:
    """(annotation, config label) -> {quantity: peak per second} from the speed-of-light table."""
    out: dict[tuple[str, str], dict[str, float]] = {}
    for _, row in sol.iterrows():
        peaks = {"bytes": row["DRAM_PeakBytesPerS"]}
        measured = []
        for col in sol.columns:
            if col.startswith("PeakFLOPsPerS_"):
                precision = col.removeprefix("PeakFLOPsPerS_").replace("_", " ")
                peaks[f"flops:{precision}"] = row[col]
                if math.isfinite(row[f"FLOPsPerS_{col.removeprefix('PeakFLOPsPerS_')}"]):
                    measured.append(row[col])
        peaks["flops"] = measured[0] if len(measured) == 1 else math.nan
        out[(row["Annotation"], row["Config"])] = peaks
    return out


def table(cols: dict[str, list], params: list[str], work: Callable, sol) -> dict[str, list]:
    """The throughput columns of a processed table ``cols`` (see the module doc)."""
    peaks = _peaks(sol)
    out: dict[str, list] = {c: [] for c in ("Annotation", *params, *COLUMNS)}
    normalized = cols.get("Normalized", [False] * len(cols["Metric"]))
    for i, metric in enumerate(cols["Metric"]):
        if metric not in DURATION_METRICS or normalized[i] not in (False, None):
            continue
        values = tuple(cols[p][i] for p in params)
        label = ", ".join(f"{p}={v}" for p, v in zip(params, values))
        mean_s, lo_s, hi_s = (cols[c][i] * 1e-9 for c in ("AvgValue", "CI95_Lower", "CI95_Upper"))
        for q, per_run in _quantities(work, values).items():
            rate = per_run / mean_s if mean_s > 0 else math.nan
            lo = per_run / hi_s if hi_s > 0 else math.nan
            hi = per_run / lo_s if lo_s > 0 else math.nan
            peak = peaks.get((cols["Annotation"][i], label), {}).get(q, math.nan)
            pct = [v / peak * 100 if peak and math.isfinite(peak) else math.nan for v in (rate, lo, hi)]
            out["Annotation"].append(cols["Annotation"][i])
            for p, v in zip(params, values):
                out[p].append(v)
            for c, v in zip(COLUMNS, (q, per_run, rate, lo, hi, peak, *pct)):
                out[c].append(v)
    return out
