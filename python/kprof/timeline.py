"""Timelines of a measurement: kernels on their GPU and stream, regions on their host thread,
counter values; written as Chrome trace-event JSON (Perfetto, chrome://tracing) by kprof-core's
one writer of the format (:meth:`kprof.ProfileResults.to_trace`).

A backend that records one returns it with its raw table, under :data:`TIMELINE_KEY`, either as
the CUPTI engine does, a ``kprof._core.Timeline`` (kept in Rust: no Python object per kernel;
configurations as text), or as a dict (test and replay backends)::

    {"kernels": [{"device", "stream", "name", "start_ns", "end_ns", "region", "config", "run"}],
     "regions": [{"thread", "name", "start_ns", "end_ns", "config", "run"}]}

``config`` there is the index of the configuration or its text. :func:`complete` adds the counter
values of the raw table (metrics other than durations) as points of counter tracks, each at the
start of its region.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from typing import Any

TIMELINE_KEY = "_timeline"
#: Metrics that are durations (slices already show them), not counter tracks.
DURATION_METRICS = ("gpu__time_duration.sum", "cuda_event_elapsed.sum")


@dataclass
class Trace:
    """A measurement's timeline: the engine's handle or a dict, and the counter points."""

    source: Any
    counters: list[dict] = field(default_factory=list)

    def write(self, path: str | os.PathLike) -> str:
        """Writes the Chrome trace-event JSON at ``path``; returns the path."""
        from . import _core

        path = os.fspath(path)
        if isinstance(self.source, dict):
            _core.write_trace(json.dumps({**self.source, "counters": self.counters}), path)
        else:
            self.source.write(path, json.dumps(self.counters))
        return path


def _label(pairs: list) -> str:
    return ", ".join(f"{k}={v}" for k, v in pairs)


def _regions(source: Any) -> list[tuple[str, str, int, int, int]]:
    """``(name, config, run, start_ns, device)`` of every region."""
    if not isinstance(source, dict):
        return [(n, c, int(r), int(s), int(d)) for n, c, r, s, d in source.regions()]
    devices = {(k.get("region", ""), k["config"], int(k.get("run", 0))): k["device"] for k in source["kernels"]}
    out = []
    for r in source["regions"]:
        key = (r["name"], r["config"], int(r.get("run", 0)))
        out.append((*key, r["start_ns"], devices.get(key, 0)))
    return out


def complete(timeline: Any, raw: dict[str, list], config_index: list[int], pairs: list) -> Trace:
    """The backend's timeline, configurations as text, with the raw table's counter values."""
    labels = [_label(p) for p in pairs]
    if isinstance(timeline, dict):

        def text(i: Any) -> str:
            return labels[i] if isinstance(i, int) and 0 <= i < len(labels) else str(i)

        timeline = {
            "kernels": [{**k, "config": text(k.get("config", ""))} for k in timeline.get("kernels", [])],
            "regions": [{**r, "config": text(r.get("config", ""))} for r in timeline.get("regions", [])],
            "counters": list(timeline.get("counters", [])),
        }
    at = {(n, c, r): (s, d) for n, c, r, s, d in _regions(timeline)}
    counters = list(timeline.pop("counters", [])) if isinstance(timeline, dict) else []
    for ann, metric, value, ci, run in zip(
        raw["Annotation"], raw["Metric"], raw["Value"], config_index, raw["Run"], strict=True
    ):
        key = (ann, labels[ci], int(run))
        if metric in DURATION_METRICS or key not in at or not math.isfinite(float(value)):
            continue
        start, device = at[key]
        counters.append({"device": device, "name": metric, "ts_ns": start, "value": float(value)})
    return Trace(timeline, counters)
