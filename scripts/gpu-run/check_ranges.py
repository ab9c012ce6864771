"""Compares kprof run's per-range durations (raw.csv) with the program's CUDA-event lines.

usage: check_ranges.py RAW_CSV EVENTS_TXT [TOLERANCE_PCT]
Matches range occurrence i of annotation A with `EVENT A i ns`; for every kernel >= 50 us the
CUPTI value must be within TOLERANCE_PCT (default 1) of the event value minus the program's
event-pair floor (`FLOOR ns`: the median of empty event pairs measured the same way, about 2.3 us
on the H200, which every event pair adds to what it brackets). Exit 1 on any mismatch."""
import csv
import sys

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
got = {}
for row in csv.DictReader(open(raw)):
    # raw.csv of `kprof run --metrics` also holds counter rows: compare the durations only.
    if row.get("Metric", "gpu__time_duration.sum") != "gpu__time_duration.sum":
        continue
    got[(row["Annotation"], int(row["Run"]))] = float(row["Value"])
bad = checked = 0
for key, e in sorted(ev.items()):
    if key not in got:
        print(f"MISSING {key} in {raw}")
        bad += 1
        continue
    k = got[key]
    diff = (k - e) / e * 100
    ok = e < 50_000 or abs(diff) <= tol
    checked += e >= 50_000
    print(f"{'ok ' if ok else 'BAD'} {key[0]:>12} run {key[1]:>2}: kprof {k:>12.0f} ns  events {e:>12.0f} ns  {diff:+.2f}%")
    bad += not ok
print(f"{checked} occurrences >= 50 us checked, {bad} bad (tolerance {tol}%)")
sys.exit(1 if bad or not checked else 0)
