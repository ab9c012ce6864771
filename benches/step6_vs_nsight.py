"""The seed's step 6 (compute- or memory-bound from 3 counter metrics: an fp16 matmul 4096, ``x * 2``
over 64M floats and a softmax 8192x1024, 3 runs) under kprof in default settings against
nsight-python 0.9.6, each in a fresh process, measured in the same run on a GPU machine.

    python3 benches/step6_vs_nsight.py [--nsight-path DIR]... [--repeats N]

Prints one ``BENCH {json}`` line per process (the tool, the wall time of the decorated call,
every region's metric values) and a table: each tool's median wall time and the ratio
nsight-python / kprof (target 10x, goal 20x), with the metrics side by side (SM % and DRAM %
agree within 0.5 point when kprof is right). ``--from-log LOG`` reports on a recorded log.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import bench_log

TARGET = 10.0
METRICS = [
    "gpu__time_duration.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
]
REGIONS = ["fp16 matmul 4096", "x * 2 (256 MB)", "softmax 8192x1024"]


def child(tool: str) -> None:
    """One process: step 6 under ``tool`` (kprof or nsight), one BENCH line."""
    import torch

    prof = __import__("kprof" if tool == "kprof" else "nsight")
    calls: list[list[float]] = []  # [seconds since the call, 1 in a counter pass]

    @prof.analyze.kernel(configs=[(4096,)], runs=3, metrics=METRICS, thermal_mode="off")
    def what_limits(n: int) -> None:
        in_counter_pass = getattr(prof, "in_counter_pass", lambda: False)()
        calls.append([time.perf_counter() - t0, float(in_counter_pass)])
        a = torch.randn(n, n, device="cuda").half()
        x = torch.randn(64 * 2**20, device="cuda")
        s = torch.randn(8192, 1024, device="cuda")
        with prof.annotate(REGIONS[0]):
            _ = a @ a
        with prof.annotate(REGIONS[1]):
            _ = x * 2.0
        with prof.annotate(REGIONS[2]):
            _ = torch.softmax(s, dim=-1)

    cost_before = dict(prof._core.counter_cost()) if tool == "kprof" else {}
    t0 = time.perf_counter()
    df = what_limits().to_dataframe()
    wall = time.perf_counter() - t0
    if os.environ.get("NSPY_NCU_PROFILE_CHILD") is not None:
        return  # nsight-python's profiled child: its parent reports
    values = {f"{r.Annotation}|{r.Metric}": float(r.AvgValue) for r in df.itertuples()}
    row = {"tool": tool, "wall_s": wall, "gpu": torch.cuda.get_device_name(), "values": values, "calls": calls}
    if tool == "kprof":
        row["cost"] = {k: v - cost_before.get(k, 0.0) for k, v in prof._core.counter_cost().items()}
    bench_log.emit(row)


def run(nsight_paths: list[str], repeats: int) -> list[dict]:
    rows = []
    for _ in range(repeats):
        for tool, extra in (("kprof", []), ("nsight", nsight_paths)):
            env = dict(os.environ)
            if extra:
                env["PYTHONPATH"] = os.pathsep.join(extra + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, __file__, "--child", tool], capture_output=True, text=True, check=False,
                               env=env, timeout=600)
            process_s = time.perf_counter() - t0  # interpreter start to exit (nsight-python: with its ncu child)
            got = [{**json.loads(line[6:]), "process_s": process_s} for line in p.stdout.splitlines()
                   if line.startswith("BENCH ")]
            if p.returncode != 0 or not got:
                print(f"{tool}: exit {p.returncode}\n{p.stderr[-2000:]}", file=sys.stderr)
            for r in got:
                bench_log.emit(r)
            rows += got
    return rows


def report(rows: list[dict]) -> str:
    wall = {t: statistics.median([r["wall_s"] for r in rows if r["tool"] == t]) for t in {r["tool"] for r in rows}}
    out = [f"{'tool':<8} {'median wall s':>14}"] + [f"{t:<8} {w:>14.3f}" for t, w in sorted(wall.items())]
    if "kprof" in wall and "nsight" in wall:
        ratio = wall["nsight"] / wall["kprof"]
        out.append(f"nsight-python / kprof: {ratio:.1f}x (target {TARGET:.0f}x: {'met' if ratio >= TARGET else 'not met'})")
        process = {t: [r["process_s"] for r in rows if r["tool"] == t and "process_s" in r] for t in wall}
        if process["kprof"] and process["nsight"]:
            kp, nsp = statistics.median(process["kprof"]), statistics.median(process["nsight"])
            out.append(f"whole processes (interpreter start to exit): nsight-python / kprof {nsp / kp:.1f}x "
                       f"({nsp:.3f} / {kp:.3f} s)")
        last = {t: next(r["values"] for r in reversed(rows) if r["tool"] == t) for t in wall}
        for key in sorted(last["kprof"]):
            k, n = last["kprof"][key], last["nsight"].get(key)
            diff = "" if n is None else f"{k - n:+.2f}" if "pct" in key else f"{(k / n - 1) * 100:+.2f} %"
            out.append(f"  {key:<80} kprof {k:>14,.2f}  nsight {n if n is not None else float('nan'):>14,.2f}  {diff}")
    out += [where_time_went(r) for r in rows if r["tool"] == "kprof" and r.get("calls")]
    if rows:
        out.append(f"GPU: {rows[0].get('gpu', '?')}")
    return "\n".join(out)


def where_time_went(row: dict) -> str:
    """Where one kprof process's wall time went: before the first call of the benchmark (CUDA's
    and kprof's set-up), the calls (timing and counter passes), the counters' set-up and passes."""
    calls, c = row["calls"], row.get("cost") or {}
    counter_calls = sum(1 for _, in_pass in calls if in_pass)
    line = (f"kprof {row['wall_s']:.3f} s: first call at {calls[0][0]:.3f} s, {len(calls)} calls "
            f"({counter_calls} in counter passes)")
    if c:
        line += (f"; counters: plan {c.get('plan_s', 0.0):.3f} s, set-up "
                 f"{c.get('session_config_s', 0.0) + c.get('session_enable_s', 0.0):.3f} s, "
                 + bench_log.counter_passes(c))
    return line


def add_args(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("--nsight-path", action="append", default=[], help="a folder to put on PYTHONPATH for nsight-python")
    ap.add_argument("--repeats", type=int, default=1, help="fresh processes per tool")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2])
        sys.exit(0)
    sys.exit(bench_log.main(__doc__, lambda a: run(a.nsight_path, a.repeats), report, add_args))
