"""Timelines of a measurement: kernels on their GPU and stream, regions on their host thread,
counter values; written as Chrome trace-event JSON (Perfetto, chrome://tracing) by kprof-core's
one writer of the format (:meth:`kprof.ProfileResults.to_trace`).

A backend that records one returns it with its raw table, under :data:`TIMELINE_KEY` (the CUPTI
engine: the JSON text of kprof-core's ``Timeline``, configurations as text)::

    {"kernels": [{"device", "stream", "name", "start_ns", "end_ns", "region", "config", "run"}],
     "regions": [{"thread", "name", "start_ns", "end_ns", "config", "run"}]}

``config`` there is the index of the configuration or its text; :func:`complete` turns an index into its text
(``n=1024``) and adds the counter values of the raw table (metrics other than durations) as
points of counter tracks, each at the start of its region.
"""

from __future__ import annotations

import json
import os
from typing import Any

TIMELINE_KEY = "_timeline"
#: Metrics that are durations (slices already show them), not counter tracks.
DURATION_METRICS = ("gpu__time_duration.sum", "cuda_event_elapsed.sum")


def _label(pairs: list) -> str:
    return ", ".join(f"{k}={v}" for k, v in pairs)


def complete(timeline: dict, raw: dict[str, list], config_index: list[int], pairs: list) -> dict:
    """The backend's timeline (a dict, or its JSON text as the engine gives it) with
    configuration texts and the raw table's counter values."""
    if isinstance(timeline, str):
        timeline = json.loads(timeline)
    labels = [_label(p) for p in pairs]

    def text(i: Any) -> str:
        return labels[i] if isinstance(i, int) and 0 <= i < len(labels) else str(i)

    kernels = [{**k, "config": text(k.get("config", ""))} for k in timeline.get("kernels", [])]
    regions = [{**r, "config": text(r.get("config", ""))} for r in timeline.get("regions", [])]
    starts = {(r["name"], r["config"], int(r.get("run", 0))): r["start_ns"] for r in regions}
    devices = {(k.get("region", ""), k["config"], int(k.get("run", 0))): k["device"] for k in kernels}
    counters = list(timeline.get("counters", []))
    for ann, metric, value, ci, run in zip(
        raw["Annotation"], raw["Metric"], raw["Value"], config_index, raw["Run"], strict=True
    ):
        key = (ann, labels[ci], int(run))
        if metric in DURATION_METRICS or key not in starts:
            continue
        counters.append({"device": devices.get(key, 0), "name": metric, "ts_ns": starts[key], "value": float(value)})
    return {"kernels": kernels, "regions": regions, "counters": counters}


def write(timeline: dict, path: str | os.PathLike) -> str:
    """Writes ``timeline`` as Chrome trace-event JSON at ``path``; returns the path."""
    from . import _core

    path = os.fspath(path)
    _core.write_trace(json.dumps(timeline), path)
    return path
