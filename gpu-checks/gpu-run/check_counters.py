"""Compares kprof run's per-range counter values (raw.csv) with ncu's per-kernel values.

usage: check_counters.py RAW_CSV NCU_CSV METRIC [TOLERANCE_PCT] [--info]

NCU_CSV is the stdout of `ncu --nvtx --csv --page raw --print-units base --metrics METRIC PROG`
(the program's own lines and ==PROF== lines are skipped: only lines starting with `"` are CSV).
Each kernel belongs to its innermost push/pop NVTX range (the last quoted entry of the
`Push/Pop_Range` cell, the range name being its second `:` field); a stretch of consecutive
kernels under the same range is one occurrence, numbered from 0 per range name, which is how
kprof run numbers its runs. Kernels outside every range are not compared. For every occurrence,
kprof's METRIC (rows of raw.csv with that Metric, keyed by Annotation and Run) must be within
TOLERANCE_PCT (default 0.5) of ncu's sum over the occurrence's kernels. Exit 1 on any mismatch,
a missing occurrence, or nothing compared; with --info the verdict is printed and the exit is 0.
"""
import csv
import sys

import kprof_raw  # gpu-checks/gpu-run/ is sys.path[0]


def number(s):
    s = s.strip().replace(",", "") if s.replace(",", "").replace(".", "").strip().isdigit() else s.strip()
    return float(s)


def innermost(cell):
    entries = cell.split('"')[1::2]
    if not entries:
        return None
    return entries[-1].split(":")[1]


class NcuError(Exception):
    pass


def ncu_per_range(ncu_path, metric):
    """ncu's METRIC summed per (range name, occurrence) and its unit; raises NcuError."""
    lines = [l for l in open(ncu_path, errors="replace") if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3:
        raise NcuError(f"no ncu CSV rows in {ncu_path}")
    header, units = rows[0], rows[1]
    try:
        col = header.index(metric)
    except ValueError:
        raise NcuError(f"{metric} is not a column of {ncu_path}: {header}")
    nvtx = next((i for i, h in enumerate(header) if "Push/Pop_Range" in h or "Push/Pop Range" in h), None)
    if nvtx is None:
        raise NcuError(f"no push/pop NVTX column in {ncu_path} (was ncu run with --nvtx?)")
    ncu = {}
    occ = {}
    prev = None
    for r in rows[2:]:
        if len(r) <= max(col, nvtx):
            continue
        name = innermost(r[nvtx])
        if name is None:
            prev = None
            continue
        if name != prev:
            occ[name] = occ.get(name, -1) + 1
            prev = name
        key = (name, occ[name])
        ncu[key] = ncu.get(key, 0.0) + number(r[col])
    return ncu, units[col]


def main():
    args = [a for a in sys.argv[1:] if a != "--info"]
    info = "--info" in sys.argv[1:]
    raw_path, ncu_path, metric = args[0], args[1], args[2]
    tol = float(args[3]) if len(args) > 3 else 0.5
    try:
        ncu, ncu_unit = ncu_per_range(ncu_path, metric)
    except NcuError as e:
        print(e)
        sys.exit(0 if info else 1)
    print(f"ncu unit of {metric}: {ncu_unit!r}")
    kprof, unit = kprof_raw.per_range(raw_path, metric)
    print(f"kprof unit of {metric}: {sorted(unit)}")

    bad = checked = 0
    missing: list = []
    for key, n, k in kprof_raw.paired(ncu, kprof, raw_path, missing):
        diff = (k - n) / n * 100 if n else (0.0 if k == 0 else float("inf"))
        ok = abs(diff) <= tol
        checked += 1
        bad += not ok
        print(f"{'ok ' if ok else 'BAD'} {key[0]:>12} run {key[1]:>2}: kprof {k:>14.0f}  ncu {n:>14.0f}  {diff:+.3f}%")
    bad += len(missing)
    print(f"{checked} range occurrences compared, {bad} bad (tolerance {tol}%)")
    verdict = not bad and checked > 0
    print("PASS" if verdict else "FAIL")
    sys.exit(0 if verdict or info else 1)


if __name__ == "__main__":
    main()
