"""`kprof compare --explain` on pairs captured on the GPU machine, each side in its own process
through the wheel (default settings plus the counters explain reads):

  tf32       an fp32 matmul 4096 with TF32 off, then on (cuBLAS picks another kernel)
  bytes      ``x * 2`` over 32M floats, then 64M (the same configuration key; twice the bytes)
  occupancy  a Triton elementwise kernel launched with 4 warps a block, then 32
  same       the fp32 matmul 4096 twice, nothing changed

    python gpu-checks/explain_pairs.py OUT [--pairs tf32,bytes,...]

Each side's raw CSV goes to OUT/<pair>-<side>/; the command `kprof compare A B --explain` (the
wheel's `kprof`) prints the table and the explanation into OUT/<pair>.txt; a verdict per pair says
whether the explanation names the expected cause (tf32: the kernels; bytes: ``dram__bytes``;
occupancy: ``sm__warps_active``; same: "no cause found among the counters"), and OUT/explain.json
keeps them. Exit 1 when a verdict fails.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

METRICS = [
    "dram__bytes.sum",
    "smsp__inst_executed.sum",
    "sm__warps_active.avg.pct_of_peak_sustained_active",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
]
EXPECTED = {"tf32": "kernel", "bytes": "dram__bytes", "occupancy": "sm__warps_active",
            "same": "no cause found among the counters"}


def side(pair: str, which: str, out: str) -> None:
    """One side of a pair, in this process: the benchmark and its raw CSV under `out`."""
    import torch

    import kprof

    second = which == "b"
    if pair in ("tf32", "same"):
        torch.backends.cuda.matmul.allow_tf32 = pair == "tf32" and second
        a = torch.randn(4096, 4096, device="cuda")

        def work(case: str) -> None:
            with kprof.annotate("matmul"):
                _ = a @ a
    elif pair == "bytes":
        x = torch.randn((64 if second else 32) << 20, device="cuda")

        def work(case: str) -> None:
            with kprof.annotate("x * 2"):
                _ = x * 2.0
    else:
        import triton
        import triton.language as tl

        @triton.jit
        def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 3.0, mask=mask)

        x = torch.randn(16 << 20, device="cuda")
        y = torch.empty_like(x)
        warps = 32 if second else 4

        def work(case: str) -> None:
            with kprof.annotate("triton scale"):
                scale[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, num_warps=warps)

    bench = kprof.analyze.kernel(configs=[(pair,)], runs=10, metrics=METRICS, output_csv=True,
                                 output_prefix=os.path.join(out, ""), verbosity=0)(work)
    bench()


def raw_csv(folder: str) -> str | None:
    files = sorted(glob.glob(os.path.join(folder, "**", "*raw*.csv"), recursive=True), key=os.path.getmtime)
    return files[-1] if files else None


def main() -> int:
    if sys.argv[1:2] == ["--side"]:
        side(sys.argv[2], sys.argv[3], sys.argv[4])
        return 0
    out = sys.argv[1]
    pairs = sys.argv[sys.argv.index("--pairs") + 1].split(",") if "--pairs" in sys.argv else list(EXPECTED)
    os.makedirs(out, exist_ok=True)
    verdicts = []
    for pair in pairs:
        files = []
        for which in ("a", "b"):
            folder = os.path.join(out, f"{pair}-{which}")
            p = subprocess.run([sys.executable, __file__, "--side", pair, which, folder], capture_output=True,
                               text=True, timeout=300)
            if p.returncode != 0:
                print(f"{pair} {which}: exit {p.returncode}\n{p.stderr[-1500:]}", file=sys.stderr)
            files.append(raw_csv(folder))
        written = [f for f in files if f is not None]
        if len(written) < 2:
            verdicts.append({"pair": pair, "ok": False, "why": "a side wrote no raw CSV"})
            continue
        cmp = subprocess.run(["kprof", "compare", written[0], written[1], "--explain"], capture_output=True,
                             text=True, timeout=120)
        text = cmp.stdout + cmp.stderr
        with open(os.path.join(out, f"{pair}.txt"), "w") as f:
            f.write(text)
        ok = EXPECTED[pair] in text
        verdicts.append({"pair": pair, "ok": ok, "expected": EXPECTED[pair], "compare_exit": cmp.returncode})
        print(f"{pair:<10} {'PASS' if ok else 'FAIL'}  (expects {EXPECTED[pair]!r}; compare exit {cmp.returncode})")
        print(text[-1500:])
    with open(os.path.join(out, "explain.json"), "w") as f:
        json.dump(verdicts, f, indent=2)
    return 0 if all(v["ok"] for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
