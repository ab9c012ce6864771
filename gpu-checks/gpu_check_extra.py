"""The in-process counters and 6 follow-ups on the GPU machine (run by gpu-checks/gpu-check-extra.sh through the
installed wheel), each over 10 runs so that a difference can be told from run-to-run variation:

  matmul  the fp16 matmul 4096's DRAM bytes in kprof's application replay against ncu's
          application replay, with the spread of each (Welch's t).
  gaps    where kprof's application replay and ncu disagreed (softmax 8192x1024's time and rates,
          the matmul's bytes written, x * 2's DRAM %): the three kernels with the clocks and cycles
          behind every rate (gpc__cycles_elapsed, its per-second clock, the DRAM clock), the
          kernel's L2 write requests (lts__t_sectors_op_write) next to its DRAM writes, and the
          duration from the counters (gpu__time_duration.max) next to the timing tier's, in kprof's
          application replay with the read and the discard flush (and with the read flush and the
          kernel activity records kept on during the counter passes, KPROF_COUNTER_PASS_RECORDS=on),
          and under ncu's application and kernel replay.
  warm    the same kernels with a warm cache (no flush anywhere), kprof's application replay
          against ncu's (--cache-control none): whether a gap in cycles comes with the flush.
  probe   softmax 8192x1024 in kprof's application replay (cold) three ways: as is, launched
          1 ms after its region opened (the GPU idle between the flush and the kernel), and after
          a small kernel that touched every 16 KB of its input (the input's address translations
          warm, 0.2 % of its bytes in the L2); the region's value is its last kernel's.
  flushes the fp16 matmul alone (two flushes back to back before it) and after a one-block
          kernel (one flush right before it), DRAM bytes against ncu's application replay.
  trace   the timing pass's kernel durations (CUPTI kernel records) with serial and concurrent
          kernel tracing (KPROF_KERNEL_TRACE), next to the counter pass's gpu__time_duration.max.
  evict   whether kprof's L2 flush leaves lines a kernel used before it (a scan-resistant L2
          keeps re-used lines through one read of twice its size): a 16 MB sum and the fp16
          matmul, each alone (the flush follows the same kernel's previous run) and after a
          512 MB read outside every region (then the flush), with DRAM bytes and the L2 read
          sectors that hit; against ncu's application replay (its flush invalidates the L2).
          Run with KPROF_L2_FLUSH_BYTES set (gpu-checks/gpu-check-extra.sh, FLUSH_BYTES) the
          results go to extra-flush<bytes>.json.
  alloc   whether a kernel's DRAM bytes depend on where its data lie: 8 copies of the fp16
          matmul's input and output and of the softmax's input, each its own allocation (shifted
          by spacer allocations), in kprof's application replay and under ncu's (another process, other
          physical pages): the spread over the copies next to the difference of the means.
          With part ncuflush too, also under ncu --cache-control none with kprof's kind of flush
          (a read of twice the L2 before each region) instead of ncu's invalidation, and kprof
          without its own flush after that same read (both tools then start from one L2 state).
  placement  part alloc's copies with the data where ncu's child has them: kprof runs in a child
          that allocates the copies exactly as ncu's child does, first thing in a fresh process
          (the driver then hands out the same physical pages: the per-copy pattern of ncu's bytes
          written repeats from one process to the next), against ncu's child twice; kprof with
          the read and the discard flush against ncu's invalidation, and after the torch read
          (no flush of its own) against ncu after that same read.
  dirty   whether ncu's invalidation counts the write-back of what the L2 held dirty: ncu
          --cache-control all on part alloc's copies as they are (the previous kernels' outputs
          dirty in the L2) and after the torch read (the L2 clean), against ncu after that read
          without its invalidation, and kprof's read flush.
  reset   whether cuCtxResetPersistingL2Cache after the torch read leaves the L2 as ncu's
          invalidation does: part alloc's copies under ncu (no flush of its own) against ncu's
          invalidation after the same read, and kprof after the read alone (the call launches a
          driver kernel that kprof's counter pass sees and its kernel records do not, so kprof
          cannot measure a closure that makes it).

`python3 gpu_check_extra.py OUT [PART...]` runs the parts named (all by default) and writes
OUT/extra.json; `python3 gpu_check_extra.py --ncu-child {matmul|gaps} REPS` is the program ncu
profiles: the same kernels without kprof, inputs made once, one NVTX range per region;
`python3 gpu_check_extra.py --kprof-child WHAT FLUSH CACHE OUT.json` makes the same inputs the
same way, then measures them with kprof (part placement)."""

from __future__ import annotations

import ctypes
import json
import os
import statistics
import subprocess
import sys
import time

import torch

import gpu_ncu  # scripts/ is sys.path[0]

N = 10
ALLOC_COPIES = 8
MB2 = ["dram__bytes_read.sum", "dram__bytes_write.sum"]
GAP_METRICS = ["gpu__time_duration.max", "gpc__cycles_elapsed.max", "gpc__cycles_elapsed.avg.per_second",
               "dram__cycles_elapsed.avg.per_second", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum", "dram__bytes_write.sum",
               "lts__t_sectors_op_write.sum"]
TIME = "gpu__time_duration.sum"


def regions(what):
    """(name, function) per region, inputs made once; a name None is work outside every region."""
    a = torch.randn(4096, 4096, device="cuda").half()
    if what == "matmul":
        return [("matmul", lambda: a @ a)]
    if what == "alloc-flushed":
        # kprof's cold start under ncu --cache-control none: a read of a buffer of twice the L2
        # (128 MiB) outside every range before each region, instead of ncu's invalidation.
        fb = torch.randn(32 * 2 ** 20, device="cuda")
        return [x for r in regions("alloc") for x in ((None, lambda: fb.sum()), r)]
    if what == "alloc-reset":
        # The torch read, then cuCtxResetPersistingL2Cache (does the driver's reset of
        # persisting lines invalidate the L2, as ncu's --cache-control all does?).
        fb = torch.randn(32 * 2 ** 20, device="cuda")
        reset = ctypes.CDLL("libcuda.so.1").cuCtxResetPersistingL2Cache

        def flush_and_reset():
            fb.sum()
            torch.cuda.synchronize()
            rc = reset()
            assert rc == 0, f"cuCtxResetPersistingL2Cache: CUresult {rc}"
            torch.cuda.synchronize()
        return [x for r in regions("alloc") for x in ((None, flush_and_reset), r)]
    if what == "alloc":
        body = []
        for i in range(ALLOC_COPIES):
            torch.empty(3 * i * 2 ** 20 + 4096 * i + 1, dtype=torch.uint8, device="cuda")  # shifts the next block
            ai, si = torch.randn(4096, 4096, device="cuda").half(), torch.randn(8192, 1024, device="cuda")
            oi = torch.empty_like(ai)  # each matmul copy writes its own output too
            body += [(f"matmul {i}", lambda ai=ai, oi=oi: torch.matmul(ai, ai, out=oi)),
                     (f"softmax {i}", lambda si=si: torch.softmax(si, dim=-1))]
        return body
    if what in ("evict", "evict-scan", "matmul-scan"):
        v = torch.randn(4 * 2 ** 20, device="cuda")
        big = torch.randn(128 * 2 ** 20, device="cuda")
        scan = [(None, lambda: big.sum())] if what != "evict" else []
        return scan + ([("matmul", lambda: a @ a)] if what == "matmul-scan" else [("sum 16 MB", lambda: v.sum())])
    if what == "flushes":
        # The matmul after a one-block kernel: one flush right before it, not two back to back.
        t = torch.zeros(1, device="cuda")
        return [("tiny", lambda: t.add_(1.0)), ("matmul", lambda: a @ a)]
    s = torch.randn(8192, 1024, device="cuda")
    if what == "probe":
        return [("softmax", lambda: torch.softmax(s, dim=-1)),
                ("softmax 1 ms after the flush", lambda: (time.sleep(1e-3), torch.softmax(s, dim=-1))),
                ("softmax, input pages touched", lambda: (s.view(-1)[::4096].sum(), torch.softmax(s, dim=-1)))]
    x = torch.randn(64 * 2 ** 20, device="cuda")
    return [("softmax 8192x1024", lambda: torch.softmax(s, dim=-1)), ("x * 2 (256 MB)", lambda: x * 2.0),
            ("fp16 matmul 4096", lambda: a @ a)]


def child(what: str, reps: int) -> None:
    body = regions(what)
    for _, fn in body:
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(reps):
        for name, fn in body:
            if name is None:
                fn()
                continue
            torch.cuda.nvtx.range_push(name)
            fn()
            torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if len(sys.argv) > 1 and sys.argv[1] == "--ncu-child":
    child(sys.argv[2], int(sys.argv[3]))
    sys.exit(0)

CHILD_BODY = None
if len(sys.argv) > 1 and sys.argv[1] == "--kprof-child":
    # ncu's child's allocations in its order (inputs, then the outputs of one call of each
    # region), before kprof allocates anything.
    CHILD_BODY = regions(sys.argv[2])
    for _, fn in CHILD_BODY:
        fn()
    torch.cuda.synchronize()

import kprof  # noqa: E402

OUT = sys.argv[1]
PARTS = sys.argv[2:] or ["matmul", "gaps", "warm", "probe", "flushes", "trace", "evict", "alloc"]
SILENT = kprof.VerbosityLevel.SILENT
out: dict = {}


def welch(a, b):
    """Welch's t statistic of the difference of the means of a and b."""
    return (statistics.mean(a) - statistics.mean(b)) / (statistics.variance(a) / len(a) + statistics.variance(b) / len(b)) ** 0.5


def kprof_values(what, metrics, flush="read", cache="all", records="off", trace="serial", body=None):
    """{region: {metric: [value per run]}}: kprof's application replay, N runs, a region's value
    its last kernel's; `records`: KPROF_COUNTER_PASS_RECORDS (kernel records during counter passes),
    `trace`: KPROF_KERNEL_TRACE (how the timing pass records kernels); `body`: regions already
    made (default: `regions(what)`)."""
    body = body if body is not None else regions(what)

    def bench():
        for name, fn in body:
            if name is None:
                fn()
                continue
            with kprof.annotate(name):
                fn()

    os.environ["KPROF_L2_FLUSH"] = flush
    os.environ["KPROF_COUNTER_PASS_RECORDS"] = records
    os.environ["KPROF_KERNEL_TRACE"] = trace
    try:
        df = kprof.kernel(runs=N, metrics=metrics, replay_mode="application", cache_control=cache,
                          combine_kernel_metrics="last", thermal_mode="off", verbosity=SILENT)(bench)().raw()
    finally:
        del os.environ["KPROF_L2_FLUSH"], os.environ["KPROF_COUNTER_PASS_RECORDS"], os.environ["KPROF_KERNEL_TRACE"]
    vals: dict = {}
    for ann, m, v, k in zip(df.Annotation, df.Metric, df.Value, df.Kernel):
        vals.setdefault(ann, {}).setdefault(m, []).append(float(v))
        names = vals[ann].setdefault("_kernels", [])
        if k not in names:
            names.append(k)
    return vals


if CHILD_BODY is not None:
    _, _, _, child_flush, child_cache, child_out = sys.argv
    with open(child_out, "w") as f:
        json.dump(kprof_values(None, [TIME, *MB2], child_flush, child_cache, body=CHILD_BODY), f)
    sys.exit(0)


def kprof_child(what, flush, cache):
    """kprof_values of `what` measured in a fresh process that made its inputs as ncu's child does."""
    path = os.path.join(OUT, f"kprof-child-{what}-{flush}-{cache}.json")
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--kprof-child", what, flush, cache, path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"kprof child {what}/{flush}/{cache} exit {p.returncode}: {p.stderr[-2000:]}", flush=True)
        return {}
    with open(path) as f:
        return json.load(f)


def ncu_values(what, metrics, replay, cache="all"):
    """{region: {metric: [value per repetition]}} under ncu (one kernel per region), and the kernels' names."""
    p, _ = gpu_ncu.run_ncu(__file__, ["--replay-mode", replay, "--nvtx", "--print-nvtx-rename", "kernel", "--metrics",
                                      ",".join(metrics), "--csv", "--page", "details", "--print-units", "base"], what, N,
                           cache)
    if p.returncode != 0:
        print(f"ncu ({replay}) exit {p.returncode}: {p.stderr[-2000:]}", flush=True)
    vals: dict = {}
    names: dict = {}
    for k in gpu_ncu.ncu_rows(p.stdout).values():
        # ncu 2025.3 names a kernel "<NVTX range>/<kernel>" with --print-nvtx-rename kernel.
        region, _, kernel = k["name"].partition("/")
        names.setdefault(region, set()).add(kernel)
        for m, v in k.items():
            if m != "name":
                vals.setdefault(region, {}).setdefault(m, []).append(v)
    return vals, {r: sorted(n) for r, n in names.items()}


def describe(m, k, n):
    """kprof vs ncu: difference of the means (points for percentages) and Welch's t."""
    km, nm = statistics.mean(k), statistics.mean(n)
    if nm == 0 and "pct" not in m:
        return f"{km - nm:+,.4g} (reference 0)"
    diff = f"{km - nm:+.2f} pt" if "pct" in m else f"{(km / nm - 1) * 100:+.2f}%"
    t = welch(k, n) if len(k) > 1 and len(n) > 1 and (statistics.variance(k) or statistics.variance(n)) else float("nan")
    return f"{diff} (t {t:+.1f})"


if "matmul" in PARTS:
    k = kprof_values("matmul", MB2)["matmul"]
    n, _ = ncu_values("matmul", MB2, "application")
    n = n.get("matmul", {})
    out["matmul"] = {m: {"kprof": k[m], "ncu": n.get(m, [])} for m in MB2}
    for m in MB2:
        if n.get(m):
            print(f"matmul {m}: kprof {statistics.mean(k[m]) / 1e6:.2f} MB (sd {statistics.stdev(k[m]) / statistics.mean(k[m]) * 100:.2f}%, "
                  f"n={len(k[m])}) vs ncu application {statistics.mean(n[m]) / 1e6:.2f} MB (sd "
                  f"{statistics.stdev(n[m]) / statistics.mean(n[m]) * 100:.2f}%, n={len(n[m])}): {describe(m, k[m], n[m])}",
                  flush=True)

def table(setups, ref_label, metrics, names):
    """Per region and metric, each setup's mean and its difference to the reference setup's."""
    ref = setups.get(ref_label, {})
    for region in names:
        print(f"\n== {region}: each setup's mean, then vs {ref_label or '-'}", flush=True)
        for m in metrics:
            cells = []
            for label, vals in setups.items():
                v = vals.get(region, {}).get(m)
                if not v:
                    cells.append(f"{label}: -")
                    continue
                cell = f"{label}: {statistics.mean(v):,.4g}"
                r = ref.get(region, {}).get(m)
                if r and label != ref_label:
                    cell += f" {describe(m, v, r)}"
                cells.append(cell)
            print(f"  {m}: " + "; ".join(cells), flush=True)


GAP_NAMES = [name for name, _ in regions("gaps")]
if "gaps" in PARTS:
    setups = {f"kprof application/{f}": kprof_values("gaps", [TIME, *GAP_METRICS], f) for f in ("read", "discard")}
    setups["kprof application/read, records on"] = kprof_values("gaps", [TIME, *GAP_METRICS], records="on")
    kernels = {}
    for replay in ("application", "kernel"):
        setups[f"ncu {replay}"], kernels[replay] = ncu_values("gaps", [TIME, *GAP_METRICS], replay)
    out["gaps"] = {"setups": setups, "ncu_kernels": kernels}
    print(f"ncu kernels: {kernels['application']}")
    table(setups, "ncu application", [TIME, *GAP_METRICS], GAP_NAMES)
    for region in GAP_NAMES:
        # The duration from the counters against the timing tier's, in kprof's own run.
        kp = setups["kprof application/read"].get(region, {})
        if kp.get(TIME) and kp.get("gpu__time_duration.max"):
            print(f"{region}: kprof timing tier {statistics.mean(kp[TIME]):,.0f} ns vs its counter pass "
                  f"{statistics.mean(kp['gpu__time_duration.max']):,.0f} ns", flush=True)

WARM_METRICS = ["gpu__time_duration.max", "gpc__cycles_elapsed.max", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
                "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes_read.sum"]
if "warm" in PARTS:
    setups = {"kprof application/warm": kprof_values("gaps", [TIME, *WARM_METRICS], cache="none"),
              "kprof application/warm, records on": kprof_values("gaps", [TIME, *WARM_METRICS], cache="none",
                                                                 records="on")}
    setups["ncu application/warm"], _ = ncu_values("gaps", [TIME, *WARM_METRICS], "application", cache="none")
    out["warm"] = {"setups": setups}
    table(setups, "ncu application/warm", [TIME, *WARM_METRICS], GAP_NAMES)

if "probe" in PARTS:
    probe = kprof_values("probe", [TIME, "gpu__time_duration.max", "gpc__cycles_elapsed.max",
                                   "dram__throughput.avg.pct_of_peak_sustained_elapsed"])
    out["probe"] = probe
    table({"kprof application/read": probe}, "", list(next(iter(probe.values()))), [n for n, _ in regions("probe")])

if "flushes" in PARTS:
    # Alone in the function the matmul follows two flushes back to back (the run's and its
    # region's); after a tiny kernel, one. Bytes read of each against ncu's matmul alone.
    fl = {"kprof matmul alone": kprof_values("matmul", MB2), "kprof matmul after a tiny kernel": kprof_values("flushes", MB2)}
    fl["ncu application"], _ = ncu_values("matmul", MB2, "application")
    out["flushes"] = fl
    table(fl, "ncu application", MB2, ["matmul"])

if "trace" in PARTS:
    trace = {f"kprof {t} records": kprof_values("gaps", [TIME, "gpu__time_duration.max"], trace=t)
             for t in ("serial", "concurrent")}
    out["trace"] = trace
    table(trace, "kprof serial records", [TIME, "gpu__time_duration.max"], GAP_NAMES)

EVICT_METRICS = [*MB2, "lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum"]
FLUSH_BYTES = os.environ.get("KPROF_L2_FLUSH_BYTES", "")
if "evict" in PARTS:
    ev = {"kprof alone/read": {**kprof_values("evict", EVICT_METRICS), **kprof_values("matmul", EVICT_METRICS)},
          "kprof after 512 MB/read": {**kprof_values("evict-scan", EVICT_METRICS),
                                      **kprof_values("matmul-scan", EVICT_METRICS)},
          "kprof alone/discard": {**kprof_values("evict", EVICT_METRICS, "discard"),
                                  **kprof_values("matmul", EVICT_METRICS, "discard")}}
    kernels = {}
    if not FLUSH_BYTES:
        (sum_n, k_sum), (mm_n, k_mm) = (ncu_values(w, [TIME, *EVICT_METRICS], "application")
                                          for w in ("evict", "matmul"))
        ev["ncu application"] = {**sum_n, **mm_n}
        kernels = {**k_sum, **k_mm}
        print(f"ncu kernels: {kernels}", flush=True)
    for label, vals in ev.items():
        if label.startswith("kprof"):
            print(f"{label} kernels: { {r: v.get('_kernels') for r, v in vals.items()} }", flush=True)
    out["evict"] = {"setups": ev, "ncu_kernels": kernels, "flush_bytes": FLUSH_BYTES or "default (2x L2)"}
    table(ev, "ncu application" if not FLUSH_BYTES else "kprof after 512 MB/read", [TIME, *EVICT_METRICS],
          ["sum 16 MB", "matmul"])

if "alloc" in PARTS:
    names = [n for n, _ in regions("alloc")]
    al = {"kprof application/read": kprof_values("alloc", [TIME, *MB2])}
    al["ncu application"], _ = ncu_values("alloc", [TIME, *MB2], "application")
    if "ncuflush" in PARTS:
        al["ncu application, read flush"], _ = ncu_values("alloc-flushed", [TIME, *MB2], "application", cache="none")
        # kprof in the same state: no flush of its own, the same torch read before each region.
        al["kprof application, torch read flush"] = kprof_values("alloc-flushed", [TIME, *MB2], cache="none")
    out["alloc"] = al
    for kind in ("matmul", "softmax"):
        for m in [TIME, *MB2]:
            # Per setup: the mean of every copy, then their spread and the mean over the copies.
            per = {label: [statistics.mean(v[n][m]) for n in names if n.startswith(kind) and v.get(n, {}).get(m)]
                   for label, v in al.items()}
            cells = [f"{label}: copies {min(c):,.4g}..{max(c):,.4g} (spread {(max(c) / min(c) - 1) * 100:.2f}%), "
                     f"mean {statistics.mean(c):,.4g}" for label, c in per.items() if c and min(c) > 0]
            n = per["ncu application"]
            for label, c in per.items():
                if c and n and label != "ncu application" and statistics.mean(n) > 0:
                    cells.append(f"{label} mean vs ncu application {(statistics.mean(c) / statistics.mean(n) - 1) * 100:+.2f}%")
            print(f"{kind} {m}: " + "; ".join(cells), flush=True)

def per_copy_table(setups, names, refs):
    """Per kind and metric, each setup's mean per copy, and the differences to its reference setup
    (`refs`: label -> reference label) per copy and of the means over the copies."""
    for kind in ("matmul", "softmax"):
        for m in [TIME, *MB2]:
            per = {label: [statistics.mean(v[n][m]) if v.get(n, {}).get(m) else float("nan")
                           for n in names if n.startswith(kind)] for label, v in setups.items()}
            print(f"\n== {kind} {m}: per copy", flush=True)
            for label, c in per.items():
                line = f"  {label}: " + " ".join(f"{x:,.5g}" for x in c)
                ref = per.get(refs.get(label, ""))
                if ref:
                    diffs = [(x / r - 1) * 100 for x, r in zip(c, ref)]
                    line += (f" | vs {refs[label]} per copy " + " ".join(f"{d:+.2f}%" for d in diffs)
                             + f", mean {(statistics.mean(c) / statistics.mean(ref) - 1) * 100:+.2f}%")
                print(line, flush=True)


if "placement" in PARTS:
    names = [n for n, _ in regions("alloc")]
    pl = {}
    pl["ncu application"], _ = ncu_values("alloc", [TIME, *MB2], "application")
    pl["ncu application, again"], _ = ncu_values("alloc", [TIME, *MB2], "application")
    pl["ncu application, read flush"], _ = ncu_values("alloc-flushed", [TIME, *MB2], "application", cache="none")
    pl["kprof child/read"] = kprof_child("alloc", "read", "all")
    pl["kprof child/discard"] = kprof_child("alloc", "discard", "all")
    pl["kprof child, torch read flush"] = kprof_child("alloc-flushed", "read", "none")
    out["placement"] = pl
    per_copy_table(pl, names, {"ncu application, again": "ncu application", "kprof child/read": "ncu application",
                               "kprof child/discard": "ncu application",
                               "kprof child, torch read flush": "ncu application, read flush"})

if "dirty" in PARTS:
    names = [n for n, _ in regions("alloc")]
    dt = {}
    dt["ncu application"], _ = ncu_values("alloc", [TIME, *MB2], "application")
    dt["ncu application, torch read, then its invalidation"], _ = ncu_values("alloc-flushed", [TIME, *MB2],
                                                                             "application")
    dt["ncu application, torch read"], _ = ncu_values("alloc-flushed", [TIME, *MB2], "application", cache="none")
    dt["kprof application/read"] = kprof_values("alloc", [TIME, *MB2])
    out["dirty"] = dt
    per_copy_table(dt, names, {"ncu application, torch read, then its invalidation": "ncu application",
                               "ncu application, torch read": "ncu application, torch read, then its invalidation",
                               "kprof application/read": "ncu application, torch read, then its invalidation"})

if "reset" in PARTS:
    names = [n for n, _ in regions("alloc")]
    rs = {}
    rs["ncu application, torch read, then its invalidation"], _ = ncu_values("alloc-flushed", [TIME, *MB2],
                                                                             "application")
    rs["ncu application, torch read, reset"], _ = ncu_values("alloc-reset", [TIME, *MB2], "application", cache="none")
    rs["kprof application, torch read"] = kprof_values("alloc-flushed", [TIME, *MB2], cache="none")
    out["reset"] = rs
    ref = "ncu application, torch read, then its invalidation"
    per_copy_table(rs, names, {label: ref for label in rs if label != ref})

name = f"extra-flush{FLUSH_BYTES}.json" if FLUSH_BYTES else "extra.json"
with open(os.path.join(OUT, name), "w") as f:
    json.dump(out, f, indent=1)
