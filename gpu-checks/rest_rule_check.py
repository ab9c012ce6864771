"""The GPU's rests under each rule (``KPROF_GPU_REST``), on the GPU machine: the same sweeps in a
process with ``power`` and one with ``fixed`` (the default), so that the waived rests are seen to
change no number.

    python gpu-checks/rest_rule_check.py            # both rules, each in its own process
    python gpu-checks/rest_rule_check.py --child    # one process, the rule from the environment

Each child prints one ``REST {json}`` line per sweep: the rule, the sweep, its wall time, the rests
it took (``gpu_rest_s`` of ``kprof._core.counter_cost()``) and every configuration's mean duration
(ns, ncu's ``gpu__time_duration`` from the counters). The sweeps: heavy tensor-core work that the
power cap slows back to back (bf16 matmuls 16384 and 8192, 10 runs), the seed's fp32 matmuls, and
short kernels (a multiply and an add on 64K floats, 300 configurations x 5 runs). The parent prints
a table: per sweep the wall time and rests of each rule and the largest difference of a
configuration's duration between the rules (the heavy ones must stay within run-to-run noise).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def child() -> None:
    import torch

    import kprof

    torch.backends.cuda.matmul.allow_tf32 = False

    def bf16(n: int) -> None:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        with kprof.annotate("matmul"):
            _ = a @ a

    def fp32(n: int) -> None:
        a = torch.randn(n, n, device="cuda")
        with kprof.annotate("matmul"):
            _ = a @ a

    x = torch.ones(1 << 16, device="cuda")

    def small(i: int) -> None:
        with kprof.annotate("mul"):
            x.mul_(1.0001)
        with kprof.annotate("add"):
            x.add_(1.0)

    sweeps = [
        ("bf16 matmul", bf16, "n", [(16384,), (8192,)], 10),
        ("fp32 matmul", fp32, "n", [(1024,), (2048,), (4096,)], 10),
        ("short kernels", small, "i", [(i,) for i in range(300)], 5),
    ]
    for name, fn, param, configs, runs in sweeps:
        bench = kprof.analyze.kernel(configs=configs, runs=runs, thermal_mode="off", verbosity=0)(fn)
        before = kprof._core.counter_cost()["gpu_rest_s"]
        t0 = time.perf_counter()
        df = bench().to_dataframe()
        wall = time.perf_counter() - t0
        rests = kprof._core.counter_cost()["gpu_rest_s"] - before
        values = {f"{a}|{c}": float(v) for a, c, v in zip(df["Annotation"], df[param], df["AvgValue"])}
        print("REST " + json.dumps({"rule": os.environ.get("KPROF_GPU_REST", "fixed"), "sweep": name, "wall_s": wall,
                                    "rests_s": rests, "avg_ns": values, "gpu": torch.cuda.get_device_name()}),
              flush=True)


def report(rows: list[dict]) -> str:
    out = [f"{'sweep':<14} {'rule':<6} {'wall s':>7} {'rests s':>8} {'largest difference to fixed':>28}"]
    for sweep in dict.fromkeys(r["sweep"] for r in rows):
        fixed = next((r for r in rows if r["sweep"] == sweep and r["rule"] == "fixed"), None)
        for r in (r for r in rows if r["sweep"] == sweep):
            diff = ""
            if fixed and r is not fixed:
                worst = max(fixed["avg_ns"], key=lambda k: abs(r["avg_ns"][k] / fixed["avg_ns"][k] - 1))
                diff = f"{(r['avg_ns'][worst] / fixed['avg_ns'][worst] - 1) * 100:+.2f} % ({worst})"
            out.append(f"{sweep:<14} {r['rule']:<6} {r['wall_s']:>7.3f} {r['rests_s']:>8.3f} {diff:>28}")
    if rows:
        out.append(f"GPU: {rows[0]['gpu']}")
    return "\n".join(out)


def main() -> int:
    if "--child" in sys.argv:
        child()
        return 0
    rows = []
    for rule in ("fixed", "power"):
        env = dict(os.environ, KPROF_GPU_REST=rule)
        p = subprocess.run([sys.executable, __file__, "--child"], capture_output=True, text=True, env=env, timeout=300)
        got = [line for line in p.stdout.splitlines() if line.startswith("REST ")]
        print("\n".join(got), flush=True)
        if p.returncode != 0:
            print(f"{rule}: exit {p.returncode}\n{p.stderr[-2000:]}", file=sys.stderr)
        rows += [json.loads(line[5:]) for line in got]
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
