"""What a run of nsight-python's examples on kprof must show (``gpu-checks/nsight_examples.py``'s
output folder): used on the offline run (``test_nsight_examples.py``) and on the GPU machine's
recording (``test_nsight_examples_recording.py``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd

#: The modes whose tables are checked; ``pytest`` (nsight-python's test_examples.py) gives outcomes only.
MODES = ("each", "together")
#: Libraries whose absence skips an example (the examples' own imports; matplotlib for plot_callback;
#: pytest for the pytest mode).
OPTIONAL = ("triton", "cuda.tile", "cuda.core", "matplotlib", "pytest")
#: nsight-python's processed columns every table must have.
NSIGHT_COLUMNS = (
    "Annotation",
    "Metric",
    "AvgValue",
    "StdDev",
    "MinValue",
    "MaxValue",
    "NumRuns",
    "Kernel",
    "GPU",
    "Host",
    "ComputeClock",
    "MemoryClock",
    "Unit",
    "CI95_Lower",
    "CI95_Upper",
    "RelativeStdDevPct",
    "StableMeasurement",
    "Normalized",
    "Geomean",
)
_SKIP = re.compile(r"needs (\S+) \(not installed\)")


def load(out: Path) -> dict[tuple[str, str], dict]:
    """The rows of ``summary.json`` by (mode, example)."""
    summary = json.loads((out / "summary.json").read_text())
    return {(r["mode"], r["example"]): r for r in summary["rows"]}


def problems(out: Path) -> list[str]:
    """Everything wrong with the run recorded in ``out``; empty when it is as it must be."""
    rows = load(out)
    found: list[str] = []
    names = sorted({name for _, name in rows})
    if [n[:2] for n in names] != [f"{i:02d}" for i in range(14)]:
        found.append(f"expected nsight-python's 14 examples 00..13, got {names}")
    ran_pytest = any(mode == "pytest" for mode, _ in rows)
    for mode in (*MODES, "pytest") if ran_pytest else MODES:
        for name in names:
            row = rows.get((mode, name))
            if row is None:
                found.append(f"{mode}/{name}: not run")
            elif row["outcome"] == "ok":
                if mode in MODES:
                    found += _table_problems(out / mode / name, f"{mode}/{name}")
                    found += _example_problems(out / mode / name, name, row)
            elif row["outcome"] == "skipped":
                m = _SKIP.fullmatch(row.get("reason", ""))
                if not m or m.group(1) not in OPTIONAL:
                    found.append(f"{mode}/{name}: skipped for {row.get('reason')!r}")
            else:
                found.append(f"{mode}/{name}: {row['outcome']}: {row.get('reason')}")
    for name in names:
        outcomes = {rows[(m, name)]["outcome"] for m in MODES if (m, name) in rows}
        if len(outcomes) > 1:
            found.append(f"{name}: outcomes differ between the modes: {sorted(outcomes)}")
    return found


def _table_problems(folder: Path, where: str) -> list[str]:
    tables = sorted((folder / "tables").glob("*.processed.csv"))
    if not tables:
        return [f"{where}: no table recorded"]
    found = []
    for t in tables:
        df = pd.read_csv(t)
        missing = [c for c in NSIGHT_COLUMNS if c not in df.columns]
        if missing or df.empty:
            found.append(f"{where}/{t.name}: {len(df)} rows, missing columns {missing}")
        elif (df.NumRuns < 1).any():
            found.append(f"{where}/{t.name}: rows without a valid run")
    return found


def _example_problems(folder: Path, name: str, row: dict) -> list[str]:
    """The checks particular to one example."""
    if name.startswith("09_"):
        table = folder / "tables" / "benchmark_avg_insts-0.processed.csv"
        if not table.exists():
            return [f"{name}: no table {table.name}"]
        df = pd.read_csv(table)
        key = ["Annotation", "n"]
        sms = df[df.Metric == "launch__sm_count"].set_index(key).AvgValue
        # The device's SM count per kernel; a region of several kernels sums them (kprof's default).
        if sms.empty or not sms.min() > 0 or ((sms / sms.min()) % 1 != 0).any():
            return [f"{name}: launch__sm_count {sorted(set(sms))}"]
        ld = df[df.Metric == "smsp__sass_inst_executed_op_shared_ld.sum"].set_index(key).AvgValue
        per_sm = df[df.Metric == "ld_insts_per_sm"].set_index(key).AvgValue
        if ((per_sm - ld / sms).abs() > 1e-6 * ld.abs().max()).any():
            return [f"{name}: ld_insts_per_sm is not ld / launch__sm_count"]
    if name.startswith("11_"):
        wanted = [f"example11_{k}-analyze_memory_ops_with_csv-0.csv" for k in ("profiled_data", "processed_data")]
        absent = [w for w in wanted if w not in row.get("files", [])]
        if absent:
            return [f"{name}: CSV files not written: {absent}"]
    return []
