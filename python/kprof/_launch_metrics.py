"""Nsight Compute's launch metrics that are properties of the device, not hardware counters.

ncu reports ``launch__sm_count`` (the SMs a kernel launch may use: the device's SM count on a
whole GPU) beside its counters; CUPTI's Range Profiler has no such metric. kprof takes it from
the device (the driver's multiprocessor count, the fingerprint's ``sm_count``): the engine
measures the other metrics, and every region of every run gets a ``launch__sm_count`` row, its
kernels' values combined as the region's other metrics are (summed by default, or with
``combine_kernel_metrics``). With ``backend="ncu"`` ncu measures it itself.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["DEVICE_METRICS", "LaunchMetrics"]

#: Metric name -> (ncu's unit, the fingerprint key holding its value).
DEVICE_METRICS: dict[str, tuple[str, str]] = {"launch__sm_count": ("SM", "sm_count")}

_REDUCERS: dict[str, Callable[[float, int], float]] = {
    "sum": lambda v, k: v * k,
    "mean": lambda v, k: v,
    "max": lambda v, k: v,
    "min": lambda v, k: v,
    "first": lambda v, k: v,
    "last": lambda v, k: v,
}


class LaunchMetrics:
    """The device launch metrics of one call: what the engine measures instead, and the rows added after."""

    def __init__(self, metrics: list[str], combine: Callable | str | None) -> None:
        self.launch = [m for m in metrics if m in DEVICE_METRICS]
        engine = [m for m in metrics if m not in DEVICE_METRICS]
        #: The engine measures the default duration when every metric is a launch metric (its
        #: rows give the regions and runs, then are dropped).
        self.placeholder = None if engine else "gpu__time_duration.sum"
        self.engine = engine or ["gpu__time_duration.sum"]
        self.combine = combine

    @classmethod
    def of(cls, metrics: list[str], combine: Callable | str | None, backend: str) -> LaunchMetrics | None:
        """The plan for ``metrics``; None when there is nothing to do (no launch metric, or ncu measures them)."""
        if backend == "ncu" or not any(m in DEVICE_METRICS for m in metrics):
            return None
        return cls(list(metrics), combine)

    def _combined(self, value: float, kernels: int) -> float:
        if isinstance(self.combine, str):
            return _REDUCERS[self.combine](value, kernels)
        if callable(self.combine):
            return float(functools.reduce(self.combine, [value] * kernels))
        return value * kernels  # kprof's default: a region's kernels are summed

    def add_rows(self, raw: dict[str, list], config_index: list[int], fingerprint: dict | None) -> None:
        """Adds a row per launch metric to every region row of the engine's first metric."""
        base = self.engine[0]
        rows = [i for i, m in enumerate(raw["Metric"]) if m == base]
        for name in self.launch:
            unit, key = DEVICE_METRICS[name]
            device_value = (fingerprint or {}).get(key)
            if device_value is None:
                warnings.warn(
                    f"kprof: {name} is NaN: the backend did not report the device's {key}",
                    RuntimeWarning,
                    stacklevel=2,
                )
            for i in rows:
                value = math.nan
                if device_value is not None and not _is_nan(raw["Value"][i]):
                    kernels = len(str(raw["Kernel"][i]).split("|"))
                    value = self._combined(float(device_value), kernels)
                for col, values in raw.items():
                    values.append({"Metric": name, "Value": value, "Unit": unit}.get(col, values[i]))
                config_index.append(config_index[i])
        if self.placeholder is not None:
            keep = [i for i, m in enumerate(raw["Metric"]) if m != self.placeholder]
            for values in raw.values():
                values[:] = [values[i] for i in keep]
            config_index[:] = [config_index[i] for i in keep]


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)
