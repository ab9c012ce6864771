"""The backend nsight-python's examples run on without a GPU (``tests/python/test_nsight_examples.py``).

It runs the benchmark loop as the engine does (warm-ups, then measured runs in the option's
order, the user's function with its ``kprof.annotate`` regions, ``progress.advance`` after every
measured run) and gives every region one row per requested metric, so examples with several
counter metrics, ``derive_metric`` and ``combine_kernel_metrics`` go through kprof's real
processing. Value of metric m for the k-th annotation seen, config i, run r:
``1000 * (k + 1) * (i + 1) * (m + 1) * (1 + r / 1000)``; NaN for a failed region.
"""

from __future__ import annotations

import math
import socket

from kprof import _backend

from fake_schedule import run_schedule

GPU = "Offline GPU"
#: The device's SM count the fingerprint reports (an H100 SXM's or H200's).
SM_COUNT = 132

#: Units as Nsight Compute reports them, by metric name suffix or prefix.
_UNITS = (
    ("gpu__time_duration", "ns"),
    (".pct_of_peak", "%"),
    ("sm__cycles", "cycle"),
    ("launch__", "SM"),
    ("_inst_", "inst"),
)


def unit(metric: str) -> str:
    for key, u in _UNITS:
        if key in metric:
            return u
    return ""


class ExamplesBackend:
    def __init__(self, kernels_per_region: int = 1) -> None:
        self.kernels_per_region = kernels_per_region
        self.options: dict | None = None
        self._recording: tuple[int, int] | None = None
        self._rows: list[tuple[str, int, int, bool]] = []
        self._names: dict[str, int] = {}
        self.benchmarks: list[str] = []

    def fingerprint(self) -> dict:
        return {
            "gpu_name": GPU,
            "uuid": "GPU-offline",
            "nvml_index": 0,
            "hostname": socket.gethostname(),
            "sm_count": SM_COUNT,
        }

    def _enter_region(self, name: str) -> None:
        pass

    def _exit_region(self, name: str, failed: bool) -> None:
        if self._recording is not None:
            self._names.setdefault(name, len(self._names))
            self._rows.append((name, *self._recording, failed))

    def run_benchmark(self, name, func, configs, options, progress):
        self.benchmarks.append(name)
        self.options = options
        self._rows = []
        n = len(configs)
        run_schedule(self, func, n, options, progress)
        return self._table(name, list(options["metrics"]))

    def _table(self, name: str, metrics: list[str]) -> dict[str, list]:
        cols: dict[str, list] = {c: [] for c in (*_backend.RAW_COLUMNS, "_config")}
        for ann, i, run, failed in self._rows:
            k = self._names[ann]
            for m, metric in enumerate(metrics):
                value = 1000.0 * (k + 1) * (i + 1) * (m + 1) * (1 + run / 1000)
                cols["Annotation"].append(ann)
                cols["Value"].append(math.nan if failed else value)
                cols["Metric"].append(metric)
                cols["Kernel"].append("|".join([f"kernel_{k}"] * self.kernels_per_region))
                cols["GPU"].append(GPU)
                cols["Host"].append(socket.gethostname())
                cols["ComputeClock"].append(1980000.0)
                cols["MemoryClock"].append(3201000.0)
                cols["Unit"].append(unit(metric))
                cols["Benchmark"].append(name)
                cols["Run"].append(run)
                cols["_config"].append(i)
        return cols
