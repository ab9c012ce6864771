"""Verdicts of gpu-checks/nested_ranges.sh from the files it wrote into OUT (argument 1):

- `records/raw.csv` (`kprof run`, the defaults: records, inclusive nesting): every range's
  total over its occurrences must be its own time (`SelfNs`) plus its direct children's totals
  (the tree holds every kernel once per level), within 0.01 %;
- `innermost/raw.csv` (`--nvtx-nesting innermost`): information: the user's range alone, as
  earlier versions read it (the symptom: `sort16m` a fraction of the sort);
- `counters/raw.csv` (`--durations counters`) against ncu (`ncu-<range>.csv`: `--nvtx
  --nvtx-include <range>/ --metrics gpu__time_duration.sum`, caches and clocks as kprof run
  leaves them): each outer range's mean per occurrence within 1 % of ncu's sum of the kernels
  launched inside it per occurrence.

Prints one table and `VERDICT PASS` or `VERDICT FAIL`; exit 0 or 1.
"""

from __future__ import annotations

import csv
import io
import os
import sys
from collections import defaultdict

METRIC = "gpu__time_duration.sum"
OUTER = ["sort16m", "conv", "own"]


def raw_rows(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r["Metric"] == METRIC]


def values(rows: list[dict]) -> dict[str, dict[int, float]]:
    """annotation -> run -> value."""
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for r in rows:
        out[r["Annotation"]][int(r["Run"])] = float(r["Value"])
    return out


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def ncu_total(path: str) -> tuple[float, int]:
    """Sum of gpu__time_duration.sum (ns) over ncu's kernels, and their count, from `--csv --page
    raw --print-units base` (log lines are not CSV rows; the units row has no ID)."""
    if not os.path.exists(path):
        return float("nan"), 0
    lines = [ln for ln in open(path).read().splitlines() if ln.startswith('"')]
    total, n = 0.0, 0
    for r in csv.DictReader(io.StringIO("\n".join(lines))):
        if not r.get("ID", "").strip().isdigit():
            continue
        v = r.get(METRIC, "").replace(",", "")
        if v:
            total += float(v)
            n += 1
    return total, n


def tree_check(vals: dict[str, dict[int, float]], selfs: dict[tuple[str, int], float]) -> list[str]:
    """Problems of the inclusive tree: over all occurrences, a range's total must be its own
    time (SelfNs) plus its direct children's totals (every child occurrence lies inside one
    occurrence of its parent; a parent may hold several)."""
    bad = []
    for name, runs in vals.items():
        if not any(name == o or name.startswith(o + "/") for o in OUTER):
            continue
        kids = [c for c in vals if c.startswith(name + "/") and "/" not in c[len(name) + 1:]]
        own = sum(selfs.get((name, run), float("nan")) for run in runs)
        parts = own + sum(sum(vals[c].values()) for c in kids)
        total = sum(runs.values())
        if not abs(parts - total) <= 1e-4 * max(total, 1.0):
            bad.append(f"{name}: total {total:.0f} ns over {len(runs)} occurrence(s), self + children {parts:.0f} ns")
    return bad


def main(out: str) -> int:
    status = 0
    rows = raw_rows(os.path.join(out, "records", "raw.csv"))
    rec = values(rows)
    selfs = {(r["Annotation"], int(r["Run"])): float(r["SelfNs"] or "nan") for r in rows if "SelfNs" in r}
    inner = values(raw_rows(os.path.join(out, "innermost", "raw.csv")))
    cnt = values(raw_rows(os.path.join(out, "counters", "raw.csv")))
    print("rows of the records run:", ", ".join(sorted(rec)))
    bad = tree_check(rec, selfs)
    for b in bad:
        print("  tree:", b)
    print(f"CHECK tree (total = SelfNs + children's totals, every range): {'ok' if not bad else 'FAIL'}")
    status |= bool(bad) or not selfs or not rec
    head = f"{'range':<10} {'records':>12} {'self':>10} {'innermost':>11} {'counters':>12} {'ncu':>12} {'ncu k':>6} {'diff %':>8}  verdict"
    print(head)
    for name in OUTER:
        reps = len(cnt.get(name, {})) or 1
        total, n = ncu_total(os.path.join(out, f"ncu-{name}.csv"))
        ref = total / reps
        c = mean(cnt.get(name, {}).values())
        diff = (c - ref) / ref * 100 if ref == ref and ref > 0 else float("nan")
        ok = diff == diff and abs(diff) <= 1.0
        status |= not ok
        own = mean(v for (a, _), v in selfs.items() if a == name)
        print(
            f"{name:<10} {mean(rec.get(name, {}).values()) / 1e3:>10.2f}us {own / 1e3:>8.2f}us "
            f"{mean(inner.get(name, {}).values()) / 1e3:>9.2f}us {c / 1e3:>10.2f}us {ref / 1e3:>10.2f}us "
            f"{n / reps:>6.1f} {diff:>+8.2f}  {'PASS' if ok else 'FAIL'}"
        )
    print("(records: the default kprof run, inclusive; self: its SelfNs; innermost: --nvtx-nesting innermost;")
    print(" counters: --durations counters; ncu: gpu__time_duration.sum of the kernels inside the range, per")
    print(" occurrence; ncu k: its kernels per occurrence; diff: counters against ncu, must be within 1 %)")
    print("VERDICT", "PASS" if status == 0 else "FAIL")
    return 1 if status else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
