"""Readers of the H200 recordings (tests/fixtures/h200-short-kernel-and-graph-durations), shared
by the recording tests: the verdict table of gpu-checks/truth_verdicts.py, the TRUTH rows of a log,
and benches/seed_sweep_vs_nsight.py as a module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from bench_support import load_module

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
TRUTH_DIR = os.path.join(ROOT, "tests", "fixtures", "h200-short-kernel-and-graph-durations")
POWER_DIR = os.path.join(ROOT, "tests", "fixtures", "h200-power-cap-and-long-kernels")


def truth_log(name):
    """The path of recording `name`."""
    return os.path.join(TRUTH_DIR, name)


def judge(log):
    """gpu-checks/truth_verdicts.py judge on a recording: the process result and {(door, case): verdict}."""
    script = os.path.join(ROOT, "gpu-checks", "truth_verdicts.py")
    r = subprocess.run([sys.executable, script, "judge", log], capture_output=True, text=True)
    cells = [re.split(r"\s{2,}", line.strip()) for line in r.stdout.splitlines()[1:-1]]
    return r, {(c[0], c[1]): c[-1] for c in cells}


def judge_failed(log):
    """judge, and the (door, case) keys that failed, sorted."""
    r, rows = judge(log)
    return r, rows, sorted(k for k, v in rows.items() if v == "FAIL")


def truth_rows(name, section_prefix="== ", tags=("TRUTH ",)):
    """Rows of a recording (lines starting with one of `tags`: `TRUTH {json}` by default), each with
    the `== ...` heading it came under as `_section`."""
    rows, section = [], ""
    for line in open(truth_log(name), errors="replace"):
        if line.startswith(section_prefix):
            section = line[len(section_prefix):].strip()
            continue
        tag = next((t for t in tags if line.startswith(t)), None)
        if tag is not None:
            try:
                r = json.loads(line[len(tag):], strict=False)
            except ValueError:
                continue
            r["_section"] = section
            rows.append(r)
    return rows


def power_rows(name):
    """The `POWER {json}` rows of a recording of tests/fixtures/h200-power-cap-and-long-kernels."""
    with open(os.path.join(POWER_DIR, name), encoding="utf-8") as f:
        return [json.loads(line[6:]) for line in f if line.startswith("POWER ")]


def energy_rows(name):
    """The `energy` and `energy-long` rows of a recording of the power-cap fixtures, by part."""
    out = {}
    with open(os.path.join(POWER_DIR, name), encoding="utf-8") as f:
        for line in f:
            if line.startswith("TRUTH "):
                r = json.loads(line[6:])
                if r.get("part", "").startswith("energy"):
                    out[r["part"]] = r
    return out


def sweep_bench():
    """benches/seed_sweep_vs_nsight.py as a module."""
    return load_module(os.path.join(ROOT, "benches", "seed_sweep_vs_nsight.py"))


def sweep_bench_report(bench, name):
    """The bench's report (text, ratio) on recording `name`."""
    return bench.report(bench.sweep_rows(open(truth_log(name)).read().splitlines()))


def unseen():
    """gpu-checks/gpu_check_unseen.py as a module."""
    return load_module(os.path.join(ROOT, "gpu-checks", "gpu_check_unseen.py"))


def unseen_table(tag, log=None, workload_set="1"):
    """The unseen workloads' rows of one call: {case: (kprof ns, reference ns, kernels)}, from its
    log (default `tag.log`) and its two ncu CSVs (`tag-ncu-cache-all.csv`, `-none.csv`); graphs
    take the CUDA events of the log's `refs` rows. `workload_set`: the probe's set of workloads
    ("1": the 2026-12-03, "2": the 2026-12-03, up to "5"). A CSV that was not kept (the device tool
    returns at most 8 files a call) leaves its eager rows without a reference (None)."""
    mod = unseen()
    mod.SET = workload_set
    cold_names, warm_names, graphs = mod.SETS[workload_set]
    rows = mod.read_log(truth_log(log or tag + ".log"))

    def sums(suffix):
        path = truth_log(tag + suffix)
        return mod.ncu_sums(path) if os.path.exists(path) else {}

    cold, warm = sums("-ncu-cache-all.csv"), sums("-ncu-cache-none.csv")
    return {
        name: ((rows.get(("kprof", name)) or {}).get("ns"), *mod.reference(name, rows, cold, warm))
        for name in cold_names + warm_names + graphs
    }


def diff(row):
    """kprof against the reference of a table row, in percent."""
    got, ref = row[0], row[1]
    return 100.0 * (got / ref - 1.0)
