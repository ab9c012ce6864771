"""Checks one `kprof run -- torchrun --nproc-per-node N` output folder (gpu-checks/gpu-check-torchrun.sh).

    check_ranks.py DIR N [--collective-kernels] [--medians-within PCT]

Prints per rank and region the median (ns), runs and kernels (`MEDIAN ...` lines), each
process's rank and devices from its status file (`PROC ...`), then checks: processed.csv has a
`Rank` column holding ranks 0..N-1; every rank has a `matmul` row with as many runs as every
other rank; every rank's status file names its rank (from RANK) and a device with a UUID. The
`allreduce` range: its rows per rank are printed (INFO when it has none: the backend launched no
kernel inside it); with --collective-kernels every rank must have one, whose kernels include an
NCCL kernel; with --medians-within PCT the ranks' `matmul` medians must lie within PCT % of
their mean. Exit 1 on a failed check.
"""
import csv
import glob
import json
import os
import sys


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    want_collective = "--collective-kernels" in sys.argv
    failed = []
    rows = list(csv.DictReader(open(os.path.join(d, "processed.csv"))))
    if not rows or "Rank" not in rows[0]:
        print(f"FAIL: {d}/processed.csv has no Rank column: {list(rows[0]) if rows else 'no rows'}")
        return 1
    for r in rows:
        print("MEDIAN " + json.dumps({k: r.get(k) for k in ("Rank", "Device", "Annotation", "Median", "NumRuns", "Kernel")}))
    ranks = sorted({r["Rank"] for r in rows})
    if ranks != [str(i) for i in range(n)]:
        failed.append(f"ranks {ranks}, expected 0..{n - 1}")
    runs = {}
    for i in range(n):
        mine = [r for r in rows if r["Rank"] == str(i)]
        mm = [r for r in mine if r["Annotation"] == "matmul"]
        if len(mm) != 1:
            failed.append(f"rank {i}: {len(mm)} matmul rows")
        else:
            runs[i] = mm[0]["NumRuns"]
        coll = [r for r in mine if r["Annotation"] == "allreduce"]
        if not coll:
            print(f"INFO: rank {i}: no kernel inside the allreduce range")
            if want_collective:
                failed.append(f"rank {i}: no allreduce row")
        elif want_collective and not any("nccl" in r["Kernel"].lower() for r in coll):
            failed.append(f"rank {i}: the allreduce row has no NCCL kernel: {coll[0]['Kernel']}")
        nccl = sorted({r["Annotation"] for r in mine if "nccl" in r["Annotation"].lower()})
        if nccl:
            print(f"INFO: rank {i}: NCCL kernels outside ranges: {nccl}")
    if len(set(runs.values())) > 1:
        failed.append(f"matmul runs differ between ranks: {runs}")
    if "--medians-within" in sys.argv:
        pct = float(sys.argv[sys.argv.index("--medians-within") + 1])
        med = {r["Rank"]: float(r["Median"]) for r in rows if r["Annotation"] == "matmul"}
        mean = sum(med.values()) / max(1, len(med))
        spread = {k: 100.0 * (v / mean - 1.0) for k, v in med.items()}
        print("MATMUL_MEDIANS " + json.dumps({"median_ns": med, "pct_from_mean": spread}))
        if not med or any(abs(d) > pct for d in spread.values()):
            failed.append(f"matmul medians of the ranks differ by more than {pct} %: {spread}")
    seen = {}
    for f in sorted(glob.glob(os.path.join(d, "procs", "rep0", "*.json"))):
        s = json.load(open(f))
        print("PROC " + json.dumps({"pid": s.get("pid"), "rank": s.get("rank"), "devices": s.get("devices"),
                                    "samples": (s.get("stats") or {}).get("samples"), "errors": s.get("errors")}))
        r = s.get("rank")
        if r is not None:
            seen[r["rank"]] = s
            if r.get("source") != "RANK":
                failed.append(f"rank {r['rank']} read from {r.get('source')}, expected RANK")
            if not any(dv.get("uuid") for dv in s.get("devices") or []):
                failed.append(f"rank {r['rank']}: no device with a UUID in its status file")
    if sorted(seen) != list(range(n)):
        failed.append(f"status files of ranks {sorted(seen)}, expected 0..{n - 1}")
    for m in failed:
        print("FAIL: " + m)
    print(("OK" if not failed else "FAILED") + f": {d}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
