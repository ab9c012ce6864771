"""Compares kprof run's per-range durations (raw.csv) with the program's CUDA-event lines.

usage: check_ranges.py RAW_CSV EVENTS_TXT [TOLERANCE_PCT]
Matches range occurrence i of annotation A with `EVENT A i ns` (the event value minus the
program's event-pair floor, `FLOOR ns`: the median of empty event pairs measured the same way,
1.3-3.9 us on the H200, which every event pair adds to what it brackets). For every range whose
kernels take >= 50 us, the median over its occurrences of kprof's value must be within
TOLERANCE_PCT (default 1) of the median event value; every occurrence is listed, flagged `>tol`
when it alone is outside (the floor itself varies by ~1 us, 1% of a 100 us kernel). Exit 1 on a
range outside the tolerance or a missing occurrence."""
import statistics
import sys

import kprof_raw  # gpu-checks/gpu-run/ is sys.path[0]

raw, events = sys.argv[1], sys.argv[2]
tol = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
ev = {}
floor = 0.0
for line in open(events):
    p = line.split()
    if len(p) == 4 and p[0] == "EVENT":
        ev[(p[1], int(p[2]))] = float(p[3])
    elif len(p) == 2 and p[0] == "FLOOR":
        floor = float(p[1])
print(f"event-pair floor subtracted: {floor:.0f} ns")
ev = {k: v - floor for k, v in ev.items()}
# raw.csv of `kprof run --metrics` also holds counter rows: compare the durations only.
got, _ = kprof_raw.per_range(raw, "gpu__time_duration.sum")
missing: list = []
per_range: dict = {}
for key, e, k in kprof_raw.paired(ev, got, raw, missing):
    diff = (k - e) / e * 100
    per_range.setdefault(key[0], []).append((k, e))
    flag = "    " if e < 50_000 or abs(diff) <= tol else ">tol"
    print(f"{flag} {key[0]:>12} run {key[1]:>2}: kprof {k:>12.0f} ns  events {e:>12.0f} ns  {diff:+.2f}%")
bad = len(missing)
checked = 0
for name, pairs in sorted(per_range.items()):
    km, em = statistics.median(k for k, _ in pairs), statistics.median(e for _, e in pairs)
    if em < 50_000:
        continue
    checked += 1
    d = (km - em) / em * 100
    ok = abs(d) <= tol
    bad += not ok
    print(f"{'ok ' if ok else 'BAD'} range {name}: median kprof {km:,.0f} ns vs events {em:,.0f} ns over "
          f"{len(pairs)} occurrences: {d:+.2f}%")
print(f"{checked} ranges >= 50 us checked, {bad} bad (tolerance {tol}%)")
sys.exit(1 if bad or not checked else 0)
