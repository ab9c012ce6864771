"""RUNCOST lines for gpu-checks/gpu-check-run-cost.sh (the cost of `kprof run --metrics`): one JSON line per measurement.

usage:
  run_cost.py line WHAT WALL_S RC [--cmd TEXT] [--stdout FILE] [--split FILE] [--kprof-raw FILE]
                   [--ncu-csv FILE] [--metrics M1,M2]
      prints `RUNCOST {json}`: the wall time and exit code; with --stdout the program's last
      `APP {json}` line; with --split kprof's time-split.json; per region the values of every
      metric (kprof's raw.csv, or ncu's `--import --csv --page raw --print-units base` export,
      kernels summed per NVTX range occurrence as check_counters.py does), and ncu's passes
      (`profiler__replayer_passes`) per kernel.
  run_cost.py compare A B JSONL [--metrics M1,M2]
      per region and metric, measurement A against B (both RUNCOST lines of JSONL by WHAT):
      means, mean and largest difference per occurrence (percent for byte/count metrics, points
      for percentages).
  run_cost.py baseline RAW_CSV BASELINE_RAW_CSV [--metrics M1,M2]
      the cost of `kprof run --metrics`'s value criterion: every occurrence within 0.5 % of the baseline (bytes, counts),
      0.5 point (percentages). Prints a RUNCOST line with "ok"; exit 1 when it does not hold.
  run_cost.py summary JSONL
      the acceptance ratios (kprof wall / ncu wall with the same metrics and cache policy) and
      the cost per kernel and pass, as a RUNCOST line and a small table.
"""
import csv
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_counters import NcuError, ncu_per_range, number  # noqa: E402
from kprof_raw import per_range as kprof_per_range  # noqa: E402

TIMING = "gpu__time_duration.sum"


def opt(args, name, default=None):
    if name in args:
        i = args.index(name)
        return args[i + 1]
    return default


def per_region(pairs):
    """{(name, occ): v} -> {name: [v by occurrence]}"""
    out = {}
    for (name, occ), v in sorted(pairs.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        out.setdefault(name, []).append(v)
    return out


def stats(vals):
    good = [v for v in vals if not math.isnan(v)]
    return {
        "n": len(vals),
        "mean": sum(good) / len(good) if good else None,
        "min": min(good) if good else None,
        "max": max(good) if good else None,
        "runs": vals,
    }


def ncu_passes(path):
    lines = [l for l in open(path, errors="replace") if l.startswith('"')]
    rows = list(csv.reader(lines))
    if len(rows) < 3 or "profiler__replayer_passes" not in rows[0]:
        return None
    col = rows[0].index("profiler__replayer_passes")
    vals = sorted({number(r[col]) for r in rows[2:] if len(r) > col and r[col].strip()})
    return vals


def app_line(path):
    last = None
    for l in open(path, errors="replace"):
        if l.startswith("APP {"):
            last = json.loads(l[4:])
    return last


def cmd_line(args):
    what, wall, rc = args[0], float(args[1]), int(args[2])
    rest = args[3:]
    metrics = [m for m in (opt(rest, "--metrics", "") or "").split(",") if m]
    out = {"what": what, "wall_s": round(wall, 3), "rc": rc}
    if opt(rest, "--cmd"):
        out["cmd"] = opt(rest, "--cmd")
    if opt(rest, "--stdout") and os.path.exists(opt(rest, "--stdout")):
        out["app"] = app_line(opt(rest, "--stdout"))
    split = opt(rest, "--split")
    if split and os.path.exists(split):
        out["split"] = json.load(open(split))
    raw = opt(rest, "--kprof-raw")
    if raw and os.path.exists(raw):
        values = {}
        for m in metrics + [TIMING]:
            got, unit = kprof_per_range(raw, m)
            for name, vals in per_region(got).items():
                values.setdefault(name, {})[m] = dict(stats(vals), unit=sorted(unit))
        out["values"] = values
    ncu = opt(rest, "--ncu-csv")
    if ncu and os.path.exists(ncu):
        values = {}
        for m in metrics:
            try:
                got, unit = ncu_per_range(ncu, m)
            except NcuError as e:
                out.setdefault("errors", []).append(str(e)[:300])
                continue
            for name, vals in per_region(got).items():
                values.setdefault(name, {})[m] = dict(stats(vals), unit=[unit])
        out["values"] = values
        out["ncu_passes"] = ncu_passes(ncu)
    print("RUNCOST " + json.dumps(out), flush=True)


def load(jsonl):
    by = {}
    for l in open(jsonl):
        l = l.strip()
        if l.startswith("RUNCOST "):
            l = l[len("RUNCOST "):]
        if l.startswith("{"):
            d = json.loads(l)
            by[d.get("what")] = d
    return by


def is_pct(metric, unit):
    return "pct" in metric or "%" in (unit or [])


def diff(a, b, pct):
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return None
    if pct:
        return a - b
    return (a - b) / b * 100 if b else (0.0 if a == 0 else math.inf)


def cmd_compare(args):
    a_name, b_name, jsonl = args[0], args[1], args[2]
    by = load(jsonl)
    a, b = by.get(a_name), by.get(b_name)
    out = {"what": f"compare {a_name} vs {b_name}", "per_region": {}}
    if not a or not b:
        out["error"] = "missing measurement"
        print("RUNCOST " + json.dumps(out))
        return
    metrics = [m for m in (opt(args, "--metrics", "") or "").split(",") if m]
    for region, mv in (a.get("values") or {}).items():
        for m, av in mv.items():
            if metrics and m not in metrics:
                continue
            bv = ((b.get("values") or {}).get(region) or {}).get(m)
            if not bv:
                continue
            pct = is_pct(m, av.get("unit"))
            per = [diff(x, y, pct) for x, y in zip(av["runs"], bv["runs"])]
            per = [d for d in per if d is not None]
            out["per_region"].setdefault(region, {})[m] = {
                "occurrences": [av["n"], bv["n"]],
                "a_mean": av["mean"],
                "b_mean": bv["mean"],
                "mean_diff": diff(av["mean"], bv["mean"], pct),
                "max_abs_diff": max((abs(d) for d in per), default=None),
                "diff_unit": "points" if pct else "%",
            }
    print("RUNCOST " + json.dumps(out), flush=True)
    for region, mv in out["per_region"].items():
        for m, d in mv.items():
            md = d["mean_diff"]
            mx = d["max_abs_diff"]
            print(
                f"  {region:>8} {m:<52} {a_name} {d['a_mean']:.6g}  {b_name} {d['b_mean']:.6g}  "
                f"mean diff {md:+.3f} {d['diff_unit']}  largest |diff| per occurrence "
                f"{mx:.3f} {d['diff_unit']}" if md is not None and mx is not None else f"  {region} {m}: n/a"
            )


#: The H200's L2 (50 MiB): byte counts below it are of data that may stay in the L2.
L2_BYTES = 50 * 1024 * 1024


def cmd_baseline(args):
    raw, base = args[0], args[1]
    metrics = [m for m in (opt(args, "--metrics", "") or "").split(",") if m]
    worst = {}
    info = {}
    ok = True
    checked = 0
    for m in metrics:
        got, unit = kprof_per_range(raw, m)
        ref, _ = kprof_per_range(base, m)
        pct = is_pct(m, sorted(unit))
        tol = 0.5
        for key, v in ref.items():
            if key not in got:
                ok = False
                worst.setdefault(m, {"missing": []}).setdefault("missing", []).append(list(key))
                continue
            d = diff(got[key], v, pct)
            if not pct and abs(v) < L2_BYTES:
                # Bytes of data that fit in the L2 (the randn kernels' few KB) move from process to
                # process (the short-kernel and graph durations' retired rows): information, not the 0.5 % criterion.
                info.setdefault(m, []).append({"at": list(key), "baseline": v, "got": got[key], "diff_pct": d})
                continue
            checked += 1
            if d is None or abs(d) > tol:
                ok = False
            w = worst.setdefault(m, {"largest_abs_diff": 0.0, "unit": "points" if pct else "%"})
            if d is not None and abs(d) >= w.get("largest_abs_diff", 0.0):
                w["largest_abs_diff"] = abs(d)
                w["at"] = list(key)
    out = {"what": "values vs baseline", "ok": ok and checked > 0, "checked": checked, "worst": worst,
           "l2_resident_bytes_not_judged": info}
    print("RUNCOST " + json.dumps(out), flush=True)
    sys.exit(0 if out["ok"] else 1)


def replay_of(d):
    for e in ((d or {}).get("split") or {}).get("executions", []):
        if e.get("replay"):
            return e
    return None


def cmd_summary(args):
    by = load(args[0])
    w = lambda k: (by.get(k) or {}).get("wall_s")  # noqa: E731
    ratios = {}
    for kprof, ncu in [
        ("kprof-metrics2", "ncu-metrics2-none"),
        ("kprof-metrics2", "ncu-metrics2-all"),
        ("kprof-dram", "ncu-dram-none"),
        ("kprof-metrics2-records", "ncu-metrics2-none"),
    ]:
        if w(kprof) and w(ncu):
            ratios[f"{kprof} / {ncu}"] = round(w(kprof) / w(ncu), 3)
    cost = {}
    for k in ["kprof-metrics2", "kprof-metrics2-records", "kprof-dram", "kprof-metrics2-iters10",
              "kprof-metrics2-iters10-extra"]:
        e = replay_of(by.get(k))
        if not e:
            continue
        r = e["replay"]
        app = (by.get(k) or {}).get("app") or {}
        cost[k] = {
            "counter_launch_wall_s": e["wall_s"],
            "launches": r["launches"],
            "passes": r["passes"],
            "per_launch_ms": round(r["per_launch_ms"], 2),
            "overhead_per_launch_pass_ms": round(r["overhead_per_launch_pass_ms"], 3),
            "passes_gpu_source": r["passes_gpu_source"],
            "profiler_start_s": round((e.get("collection") or {}).get("start_s", 0.0), 3),
            "profiler_start_parts_s": {
                p: round((e.get("collection") or {}).get(p, 0.0), 3)
                for p in ("load_s", "enable_s", "config_s", "first_image_s")
            },
            "first_image_ranges": (e.get("collection") or {}).get("first_image_ranges"),
            "program_rest_s": e.get("program_rest_s"),
            "reserved_mb": app.get("reserved_mb"),
        }
    slope = None
    a, b = cost.get("kprof-metrics2-iters10"), cost.get("kprof-metrics2-iters10-extra")
    if a and b and a.get("reserved_mb") is not None and b.get("reserved_mb") is not None:
        gb = (b["reserved_mb"] - a["reserved_mb"]) / 1024
        if gb > 0:
            slope = round((b["overhead_per_launch_pass_ms"] - a["overhead_per_launch_pass_ms"]) / gb, 3)
    out = {
        "what": "summary",
        "walls_s": {k: v.get("wall_s") for k, v in by.items() if "wall_s" in v},
        "ratios": ratios,
        "target_ratio": 0.7,
        "cost": cost,
        "overhead_ms_per_launch_pass_per_gib_held": slope,
    }
    print("RUNCOST " + json.dumps(out), flush=True)
    for k, v in out["walls_s"].items():
        print(f"  wall {k:<32} {v:8.2f} s")
    for k, v in ratios.items():
        print(f"  ratio {k:<44} {v:.3f}  (target <= 0.7)")
    for k, c in cost.items():
        print(
            f"  {k:<30} {c['launches']} launches x {c['passes']} passes: {c['per_launch_ms']} ms per launch, "
            f"{c['overhead_per_launch_pass_ms']} ms per launch and pass besides the kernel, "
            f"profiler start {c['profiler_start_s']} s, held {c['reserved_mb']} MiB"
        )
    if slope is not None:
        print(f"  per launch and pass, per GiB the program holds: {slope} ms")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    cmd, args = sys.argv[1], sys.argv[2:]
    {"line": cmd_line, "compare": cmd_compare, "baseline": cmd_baseline, "summary": cmd_summary}[cmd](args)


if __name__ == "__main__":
    main()
