"""What the checks of `kprof run`'s raw.csv against a reference (check_ranges.py: CUDA events,
check_counters.py: ncu) share: kprof's values per range occurrence, and their pairing with the
reference's."""
import csv


def per_range(raw_path, metric):
    """kprof's METRIC per (annotation, run) from raw.csv (an empty value: NaN; a raw.csv without a
    Metric column holds durations), and the set of its units."""
    values = {}
    units = set()
    for row in csv.DictReader(open(raw_path)):
        if row.get("Metric", "gpu__time_duration.sum") == metric:
            values[(row["Annotation"], int(row["Run"]))] = float(row["Value"]) if row["Value"] else float("nan")
            units.add(row.get("Unit"))
    return values, units


def paired(reference, kprof, raw_path, missing):
    """``(key, reference value, kprof's value)`` for every key of ``reference`` in order; a key kprof
    lacks is printed as MISSING and appended to ``missing`` instead."""
    for key, ref in sorted(reference.items()):
        if key not in kprof:
            print(f"MISSING {key} in {raw_path}")
            missing.append(key)
            continue
        yield key, ref, kprof[key]
