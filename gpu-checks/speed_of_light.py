"""Speed of light in-process against ncu's SpeedOfLight section, and an fp32 matmul sweep for a
roofline fixture, on a GPU machine with PyTorch, ncu and kprof's wheel installed:

    python gpu-checks/speed_of_light.py OUT

Parts (one line each, PASS/FAIL/INFO; OUT/summary.json holds every number):

  sections  kprof's section table against the section files of the installed ncu
            (gpu-checks/ncu_sections.py on ncu's sections/ folder vs
            tests/fixtures/ncu-sections/sections.json); OUT/installed-sections.json
  passes    `kprof metrics --passes SpeedOfLight` (the pass count shown before a run), and the
            metric names `--expand SpeedOfLight` gives
  step6     seed step 6 (fp16 matmul 4096, x * 2 over 64M floats, softmax 8192x1024; inputs made
            once; 5 runs, cold) with metrics=["SpeedOfLight"] in-process (application replay)
            and under ncu (backend="ncu", ncu_options sections=["SpeedOfLight"], application
            replay, --cache-control all --clock-control none). Every metric of the section per
            region: means within 0.5 point for % metrics, 1 % for the others. Then kprof's
            verdicts (speed_of_light()): the matmul compute-bound, x * 2 memory-bound
  sweep     fp32 matmul (TF32 off) 256..8192 with SpeedOfLight + SpeedOfLight_RooflineChart:
            OUT/sweep-fp32.json (raw and processed) for a roofline fixture, its speed of light
            (OUT/sweep-fp32-sol.csv), throughput from 2 n^3 FLOPs and 12 n^2 bytes per run
            (OUT/sweep-fp32-throughput.csv) and roofline (OUT/sweep-fp32-roofline.svg); INFO: achieved
            fp32 FLOP/s against 2 n^3 / duration (within 5 % expected)
  tensor    the fp16 matmul 4096 with the roofline metrics of kprof_core::sol (Hopper's hgmma
            tensor path included): OUT/tensor-fp16.json, INFO its FLOP/s against 2 n^3 / duration

Every backend="ncu" call re-runs this script under ncu; there only the selected function runs
and the checks run in the parent alone.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import torch

import kprof
from kprof import _core

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "speed-of-light-out")
PARENT = not os.environ.get("KPROF_NCU_CHILD")
os.makedirs(OUT, exist_ok=True)
summary: dict = {"checks": [], "numbers": {}}
RUNS = 5


def check(name, ok, detail):
    summary["checks"].append({"name": name, "ok": ok, "detail": detail})
    print(f"[{name}] {'PASS' if ok else ('INFO' if ok is None else 'FAIL')}: {detail}", flush=True)


def kprof_bin() -> str:
    carried = os.path.join(REPO, ".carry", "bin", "kprof")
    return carried if os.access(carried, os.X_OK) else (shutil.which("kprof") or "kprof")


# -- the work -------------------------------------------------------------------------------------

_inputs: dict = {}


def inputs():
    if not _inputs:
        g = torch.Generator(device="cuda").manual_seed(0)
        _inputs["a"] = torch.randn(4096, 4096, device="cuda", dtype=torch.float16, generator=g)
        _inputs["b"] = torch.randn(4096, 4096, device="cuda", dtype=torch.float16, generator=g)
        _inputs["x"] = torch.randn(64 * 1024 * 1024, device="cuda", generator=g)
        _inputs["s"] = torch.randn(8192, 1024, device="cuda", generator=g)
    return _inputs


def step6_body(n):
    t = inputs()
    with kprof.annotate("fp16 matmul 4096"):
        t["a"] @ t["b"]
    with kprof.annotate("x * 2 (256 MB)"):
        t["x"] * 2
    with kprof.annotate("softmax 8192x1024"):
        torch.softmax(t["s"], dim=-1)


# The section's metric names for this GPU, expanded once in the parent; the ncu child (where
# CUPTI belongs to ncu) gets them through the environment, for the same decorator.
if PARENT:
    SECTION_METRICS = _core.expand_metrics(["SpeedOfLight"])[0]
    os.environ["SOL_CHECK_METRICS"] = ",".join(SECTION_METRICS)
else:
    SECTION_METRICS = os.environ["SOL_CHECK_METRICS"].split(",")
COMMON = dict(configs=[(4096,)], runs=RUNS, cache_control="all", clock_control="none", replay_mode="application")
step6_kprof = kprof.analyze.kernel(metrics=["SpeedOfLight"], **COMMON)(step6_body)
step6_ncu = kprof.analyze.kernel(
    metrics=SECTION_METRICS,
    backend="ncu",
    ncu_options={"sections": ["SpeedOfLight"]},
    output_prefix=os.path.join(OUT, "ncu-"),
    **COMMON,
)(step6_body)


def sgemm(n):
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with kprof.annotate("sgemm"):
        a @ b


SIZES = [256, 512, 1024, 2048, 4096, 8192]
sweep = kprof.analyze.kernel(
    configs=[(n,) for n in SIZES],
    runs=RUNS,
    metrics=["SpeedOfLight", "SpeedOfLight_RooflineChart"],
    throughput=lambda n: {"flops:fp32": 2.0 * n**3, "bytes": 3 * 4.0 * n * n},
)(sgemm)


def hgemm(n):
    t = inputs()
    with kprof.annotate("fp16 matmul 4096"):
        t["a"] @ t["b"]


# -- the checks -----------------------------------------------------------------------------------


def part_sections():
    dirs = []
    ncu = shutil.which("ncu")
    if ncu:
        real = os.path.dirname(os.path.realpath(ncu))
        dirs += [os.path.join(real, "sections"), os.path.join(real, "..", "sections")]
    dirs += sorted(glob.glob("/opt/nvidia/nsight-compute/*/sections"), reverse=True)
    dirs += sorted(glob.glob("/usr/local/cuda*/nsight-compute*/sections"), reverse=True)
    folder = next((d for d in dirs if glob.glob(os.path.join(d, "*.section"))), None)
    if folder is None:
        check("sections", False, f"no ncu sections folder among {dirs}")
        return
    sys.path.insert(0, HERE)
    import ncu_sections

    installed = {s["identifier"]: s for s in ncu_sections.read_dir(__import__("pathlib").Path(folder))}
    with open(os.path.join(OUT, "installed-sections.json"), "w") as f:
        json.dump(list(installed.values()), f, indent=1)
    with open(os.path.join(REPO, "tests", "fixtures", "ncu-sections", "sections.json")) as f:
        record = json.load(f)
    diffs = []
    for s in record["sections"]:
        got = installed.get(s["identifier"])
        if got is None:
            diffs.append(f"{s['identifier']}: not installed")
            continue
        want = [(m["name"], m["arch"]) for m in s["metrics"]]
        have = [(m["name"], m["arch"]) for m in got["metrics"]]
        if want != have:
            missing = sorted({n for n, _ in want} - {n for n, _ in have})
            extra = sorted({n for n, _ in have} - {n for n, _ in want})
            diffs.append(f"{s['identifier']}: missing {missing} extra {extra} (or filters/order differ)")
    summary["numbers"]["sections_folder"] = folder
    check("sections", not diffs, f"{folder}: " + ("kprof's table matches" if not diffs else "; ".join(diffs)))


def part_passes():
    env = dict(os.environ)
    passes = subprocess.run([kprof_bin(), "metrics", "--passes", "SpeedOfLight"], capture_output=True, text=True, env=env)
    names = subprocess.run([kprof_bin(), "metrics", "--expand", "SpeedOfLight"], capture_output=True, text=True, env=env)
    ok = passes.returncode == 0 and passes.stdout.strip().isdigit() and names.stdout.split() == SECTION_METRICS
    summary["numbers"]["passes_speed_of_light"] = passes.stdout.strip()
    check("passes", ok, f"SpeedOfLight: {passes.stdout.strip()} passes, {len(names.stdout.split())} metrics; "
          f"{passes.stderr.strip()} {names.stderr.strip()}")


def means(results) -> dict:
    df = results.to_dataframe()
    return {(r.Annotation, r.Metric): (r.AvgValue, r.Unit) for r in df.itertuples()}


def part_step6():
    k = step6_kprof()
    k.save(os.path.join(OUT, "step6-kprof.json"))
    kprof.release_counters()  # the GPU's counters go to ncu's process
    n = step6_ncu()
    n.save(os.path.join(OUT, "step6-ncu.json"))
    km, nm = means(k), means(n)
    rows, bad = [], []
    for (ann, metric), (kv, unit) in sorted(km.items()):
        if (ann, metric) not in nm:
            bad.append(f"{ann}/{metric}: not in ncu's results")
            continue
        nv = nm[(ann, metric)][0]
        pct = unit == "%" or metric.endswith(("pct_of_peak_sustained_elapsed", "pct_of_peak_sustained_active"))
        diff = kv - nv if pct else (kv - nv) / nv * 100 if nv else float("nan")
        ok = abs(diff) <= (0.5 if pct else 1.0)
        rows.append({"annotation": ann, "metric": metric, "kprof": kv, "ncu": nv, "diff": diff,
                     "unit": "point" if pct else "%", "ok": ok})
        if not ok:
            bad.append(f"{ann}/{metric}: kprof {kv:.4g} ncu {nv:.4g} ({diff:+.2f} {'pt' if pct else '%'})")
    with open(os.path.join(OUT, "step6-kprof-vs-ncu.json"), "w") as f:
        json.dump(rows, f, indent=1)
    judged = {r["metric"] for r in rows}
    missing = sorted(set(SECTION_METRICS) - judged)
    check("step6", not bad and not missing and rows,
          f"{sum(r['ok'] for r in rows)}/{len(rows)} values within 0.5 pt / 1 %"
          + (f"; off: {'; '.join(bad)}" if bad else "") + (f"; not compared: {missing}" if missing else ""))
    sol = k.speed_of_light()
    sol.to_csv(os.path.join(OUT, "step6-sol.csv"), index=False)
    verdict = dict(zip(sol["Annotation"], sol["Verdict"]))
    reason = dict(zip(sol["Annotation"], sol["Reason"]))
    ok = verdict.get("fp16 matmul 4096") == "compute-bound" and verdict.get("x * 2 (256 MB)") == "memory-bound"
    check("step6-verdicts", ok, "; ".join(f"{a}: {v} ({reason[a]})" for a, v in verdict.items()))
    nsol = n.speed_of_light()
    same = dict(zip(nsol["Annotation"], nsol["Verdict"])) == verdict
    check("step6-verdicts-ncu", same, f"ncu's values give {dict(zip(nsol['Annotation'], nsol['Verdict']))}")


def part_sweep():
    r = sweep()
    r.save(os.path.join(OUT, "sweep-fp32.json"))
    sol = r.speed_of_light()
    sol.to_csv(os.path.join(OUT, "sweep-fp32-sol.csv"), index=False)
    r.throughput().to_csv(os.path.join(OUT, "sweep-fp32-throughput.csv"), index=False)
    try:
        r.plot_roofline(os.path.join(OUT, "sweep-fp32-roofline.svg"), title="fp32 matmul 256..8192")
    except Exception as e:  # noqa: BLE001 - reported, the rest goes on
        check("sweep-roofline", False, repr(e))
    dur = {(row.n,): row.AvgValue for row in r.to_dataframe().itertuples() if row.Metric == "gpu__time_duration.sum"}
    lines = []
    for row in sol.itertuples():
        n = int(row.Config.split("=")[1])
        expected = 2 * n**3 / (dur[(n,)] * 1e-9)
        got = row.FLOPsPerS_fp32
        lines.append(f"n={n}: {got / 1e12:.2f} TFLOP/s vs 2n^3/t {expected / 1e12:.2f} ({(got / expected - 1) * 100:+.1f} %), "
                     f"{row.Verdict}")
    summary["numbers"]["sweep"] = lines
    check("sweep", None, "; ".join(lines))


def run_tensor():
    metrics = ["SpeedOfLight", "SpeedOfLight_RooflineChart", "SpeedOfLight_HierarchicalHalfRooflineChart",
               "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.per_cycle_elapsed",
               "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained"]
    bench = kprof.analyze.kernel(configs=[(4096,)], runs=RUNS, metrics=metrics)(hgemm)
    r = bench()
    r.save(os.path.join(OUT, "tensor-fp16.json"))
    r.speed_of_light().to_csv(os.path.join(OUT, "tensor-fp16-sol.csv"), index=False)
    row = r.speed_of_light().iloc[0]
    t = [x.AvgValue for x in r.to_dataframe().itertuples() if x.Metric == "gpu__time_duration.sum"][0]
    expected = 2 * 4096**3 / (t * 1e-9)
    check("tensor", None, f"tensor fp16 {row['FLOPsPerS_tensor_fp16'] / 1e12:.1f} TFLOP/s (peak "
          f"{row['PeakFLOPsPerS_tensor_fp16'] / 1e12:.1f}) vs 2n^3/t {expected / 1e12:.1f}; {row['Verdict']}")


if __name__ == "__main__":
    torch.backends.cuda.matmul.allow_tf32 = False
    if PARENT:
        for name, part in [("sections", part_sections), ("passes", part_passes), ("step6", part_step6),
                           ("sweep", part_sweep), ("tensor", run_tensor)]:
            try:
                part()
            except Exception as e:  # noqa: BLE001 - one part's failure does not hide the others
                check(name, False, f"{type(e).__name__}: {e}")
        with open(os.path.join(OUT, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        failed = [c["name"] for c in summary["checks"] if c["ok"] is False]
        print(f"speed_of_light: {len(summary['checks'])} checks, failed: {failed or 'none'}")
        sys.exit(1 if failed else 0)
    else:
        step6_ncu()
