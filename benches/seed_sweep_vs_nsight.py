"""The seed's matmul sweep (fp32 1024/2048/4096, 10 runs each) under kprof against nsight-python
0.9.6, measured in the same run on a GPU machine: the speed target (kprof in default
settings at least 12x faster than nsight-python, goal 30x).

    python3 benches/seed_sweep_vs_nsight.py [--nsight-path DIR]...

Each tool runs in its own fresh process (``gpu-checks/gpu_check_truth.py sweep-plain``,
``sweep-kprof``, ``sweep-kprof records``, ``sweep-nsight``): the same work without a profiler,
kprof in default settings (durations from the counters), kprof with ``duration_source="records"``,
and nsight-python (which relaunches the script under ncu; ``--nsight-path`` puts its package and
ncu's Python extras on ``PYTHONPATH`` when it is not installed). Prints each tool's wall time
for its first sweep in the process (and kprof's second), the ratios nsight-python / tool, and
where kprof's counter work went in its first sweep and how long it rested the GPU after long work
(``kprof._core.counter_cost()``).
Each tool's ``TRUTH`` lines are printed before the table, so that a recording of the output can be
re-read: ``--from-log LOG`` reports on a recorded ``TRUTH`` log instead of running anything.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRUTH = os.path.join(HERE, "..", "gpu-checks", "gpu_check_truth.py")
TARGET = 12.0  # kprof in default settings at least 12x faster than nsight-python (goal 30x)


def sweep_rows(lines) -> dict[str, dict]:
    """The `part: sweep` TRUTH rows of an output, by tool. A tool run in several fresh processes
    (`SWEEP_REPEATS`) gets the medians of their wall times, as `gpu-checks/truth_verdicts.py` judges
    them, and the other fields of its last process (its counter cost)."""
    by_tool: dict[str, list[dict]] = {}
    for line in lines:
        if not line.startswith("TRUTH "):
            continue
        try:
            r = json.loads(line[6:])
        except ValueError:
            continue
        if r.get("part") == "sweep":
            by_tool.setdefault(r["tool"], []).append(r)
    rows = {}
    for tool, runs in by_tool.items():
        row = dict(runs[-1])
        for key in ("wall_s", "second_wall_s"):
            values = [r[key] for r in runs if r.get(key) is not None]
            if values:
                row[key] = statistics.median(values)
        rows[tool] = row
    return rows


def report(rows: dict[str, dict]) -> tuple[str, float | None]:
    """A table of the sweep rows and kprof's counter cost; the ratio nsight-python / kprof in
    default settings (None without both)."""
    out = [f"{'tool':<22} {'first sweep s':>14} {'second s':>9} {'nsight / tool':>14} {'process s':>10}"]
    ns = rows.get("nsight-python 0.9.6", {}).get("wall_s")
    for tool in ("plain torch", "kprof", "kprof-records", "nsight-python 0.9.6"):
        r = rows.get(tool)
        if r is None:
            out.append(f"{tool:<22} {'(not run)':>14}")
            continue
        second = r.get("second_wall_s")
        second_s = "-" if second is None else f"{second:.3f}"
        vs_nsight = f"{ns / r['wall_s']:.1f}x" if ns and tool.startswith("kprof") else ""
        process = f"{r['process_s']:.3f}" if "process_s" in r else "-"
        out.append(f"{tool:<22} {r['wall_s']:>14.3f} {second_s:>9} {vs_nsight:>14} {process:>10}")
    plain = rows.get("plain torch")
    if plain and "pandas_import_s" in plain:
        out.append(f"(pandas' import: {plain['pandas_import_s']:.3f} s; kprof imports it when a benchmark is decorated, "
                   "before the sweep, as nsight-python does at its import; until 2026-12-02 its first to_dataframe paid it)")
    costs = (rows.get("kprof") or {}).get("counter_cost") or []
    if costs and costs[0]:
        c = costs[0]
        out.append(
            "kprof's counters in its first sweep: plan {plan_s:.3f} s, set-up {s:.3f} s, {n:.0f} collections "
            "{run:.3f} s (image {setup:.3f}, passes {passes:.3f}{start}, decode {dec:.3f})".format(
                s=c["session_config_s"] + c["session_enable_s"], n=c["collections"], run=c["counter_run_s"],
                setup=c["collect_setup_s"], passes=c["collect_passes_s"], dec=c["collect_decode_s"],
                # cuptiRangeProfilerStart, timed apart since 2026-12-02 (the session's first is ~0.2 s).
                start=f" of which Start {c['collect_start_s']:.3f}" if "collect_start_s" in c else "", **c,
            )
        )
    # Since 2026-12-03: the idle time after long GPU work (runner/gpu_rest.rs, the power cap).
    if costs and costs[0] and "gpu_rest_s" in costs[0]:
        out.append(f"kprof's rests after long GPU work in its first sweep: {costs[0]['gpu_rest_s']:.3f} s")
    # Only in the 2026-12-02 recording `2026-12-02-truth-check-all-parts-device-query-on-a-helper.log` (an engine that ran the device query on a helper
    # thread; it was removed after that call).
    if costs and costs[0] and costs[0].get("device_query_s"):
        c = costs[0]
        out.append(f"(of which on a helper thread during the warm-up runs: the device query {c['device_query_s']:.3f} s; "
                   f"the benchmark waited {c['device_query_wait_s']:.3f} s for it)")
    kp, nsp = rows.get("kprof", {}).get("process_s"), rows.get("nsight-python 0.9.6", {}).get("process_s")
    if kp and nsp:
        out.append(f"whole processes (interpreter start to exit; kprof's runs both sweeps): nsight-python / kprof "
                   f"{nsp / kp:.1f}x ({nsp:.3f} / {kp:.3f} s)")
    default = rows.get("kprof", {}).get("wall_s")
    ratio = ns / default if ns and default else None
    out.append(
        "kprof (default) vs nsight-python: "
        + ("not measured" if ratio is None else f"{ratio:.1f}x (target {TARGET:.0f}x: {'met' if ratio >= TARGET else 'not met'})")
    )
    return "\n".join(out), ratio


def run(nsight_paths: list[str]) -> list[str]:
    lines = []
    for args, extra_path in (
        (["sweep-plain"], []),
        (["sweep-kprof"], []),
        (["sweep-kprof", "records"], []),
        (["sweep-nsight"], nsight_paths),
    ):
        env = dict(os.environ)
        if extra_path:
            env["PYTHONPATH"] = os.pathsep.join(extra_path + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, TRUTH, *args], capture_output=True, text=True, env=env, timeout=600)
        process_s = time.perf_counter() - t0
        got = [line for line in p.stdout.splitlines() if line.startswith("TRUTH ")]
        if p.returncode != 0 or not got:
            print(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr[-2000:]}", file=sys.stderr)
        # The whole process, interpreter start to exit (both sweeps for plain and kprof; for
        # nsight-python its parent and its child under ncu).
        lines += [with_process_wall(line, process_s) for line in got]
    return lines


def with_process_wall(line: str, process_s: float) -> str:
    """A ``TRUTH`` sweep line with the wall time of the whole process that printed it."""
    row = json.loads(line[6:])
    if row.get("part") == "sweep":
        row["process_s"] = round(process_s, 4)
    return "TRUTH " + json.dumps(row)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--nsight-path", action="append", default=[], help="a folder to put on PYTHONPATH for nsight-python")
    ap.add_argument("--from-log", help="report on a recorded TRUTH log instead of running")
    a = ap.parse_args()
    if a.from_log:
        with open(a.from_log) as f:
            lines = f.read().splitlines()
    else:
        lines = run(a.nsight_path)
        print("\n".join(lines))
    text, _ = report(sweep_rows(lines))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
