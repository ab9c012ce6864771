"""GPU checks of the pytest plugin, the timeline and the notebook (gpu-checks/workflow-check.sh).

1. trace: a cuBLAS sgemm sweep with a counter metric; ``results.to_trace``: every kernel on a named
   GPU and stream track, started after its region opened, every region's counter value on a
   counter track.
2. pytest: the plugin on real matmuls: a stored run, the same again compared with ``last`` (expects
   no regression), then the matmul done twice in the region (expects exit 1 and REGRESSION in the
   Markdown).
3. run-trace: ``kprof run --trace`` on a PyTorch script with NVTX ranges: the ranges and the
   kernels on their stream tracks.
4. notebook: examples/notebook.ipynb measured live (when nbclient and ipykernel are installed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

OUT = sys.argv[1]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
results: dict[str, str] = {}


def check(name, fn):
    try:
        detail = fn()
        results[name] = f"PASS {detail or ''}"
    except Exception as e:  # a failed part is reported, the others still run
        results[name] = f"FAIL {type(e).__name__}: {e}"
    print(f"{name}: {results[name]}", flush=True)


def trace():
    import torch

    import kprof

    @kprof.kernel(configs=[1024, 2048], runs=5, metrics=["gpu__time_duration.sum", "dram__bytes_read.sum"])
    def sgemm(n):
        a = torch.randn(n, n, device="cuda")
        with kprof.annotate("matmul"):
            _ = a @ a

    r = sgemm()
    path = r.to_trace(os.path.join(OUT, "sgemm-trace.json"))
    doc = json.load(open(path))
    ev = doc["traceEvents"]
    names = {(m["pid"], m["tid"] if m["name"] == "thread_name" else None): m["args"]["name"] for m in ev if m["ph"] == "M"}
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    regions = [e for e in ev if e.get("cat") == "region"]
    counters = [e for e in ev if e["ph"] == "C"]
    assert len(regions) == 10, len(regions)
    assert len(kernels) >= 10, len(kernels)
    assert all(names[(k["pid"], None)].startswith("GPU ") and names[(k["pid"], k["tid"])].startswith("stream ") for k in kernels)
    ts = [e["ts"] for e in ev if e["ph"] != "M"]
    assert ts == sorted(ts)
    for k in kernels:
        r_ = [x for x in regions if x["args"]["config"] == k["args"]["config"] and x["args"]["run"] == k["args"]["run"]]
        # A region's slice is host time (opened, closed); its kernels start on the GPU after it
        # opened and may end after it closed (launches are asynchronous).
        assert r_ and r_[0]["ts"] <= k["ts"] + 1e-3, (k, r_)
    assert {c["name"] for c in counters} == {"dram__bytes_read.sum"} and len(counters) == 10, counters[:2]
    return f"{len(kernels)} kernels, {len(regions)} regions, {len(counters)} counter points, streams {sorted({names[(k['pid'], k['tid'])] for k in kernels})}"


TEST = """
import os, pytest, torch

@pytest.mark.parametrize("n", [2048, 4096])
def test_matmul(gpu_bench, n):
    a = torch.randn(n, n, device="cuda")
    times = int(os.environ.get("MATMULS", "1"))
    def step():
        for _ in range(times):
            _ = a @ a
    gpu_bench(step, name="matmul", runs=20)
"""


def pytest_plugin():
    folder = os.path.join(OUT, "pytest")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "test_gpu_bench.py"), "w") as f:
        f.write(TEST)

    def run(matmuls, *args):
        env = {**os.environ, "MATMULS": str(matmuls)}
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                           cwd=folder, env=env, capture_output=True, text=True)
        with open(os.path.join(folder, f"run-{len(os.listdir(folder))}.log"), "w") as f:
            f.write(p.stdout + p.stderr)
        return p

    first = run(1, "--kprof-store", "kprof.db", "--kprof-json", "first.json")
    assert first.returncode == 0, first.stdout[-2000:]
    same = run(1, "--kprof-store", "kprof.db", "--kprof-compare", "last", "--kprof-markdown", "same.md")
    slow = run(2, "--kprof-compare", "best", "--kprof-store", "kprof.db", "--kprof-markdown", "slow.md")
    md = open(os.path.join(folder, "slow.md")).read()
    assert slow.returncode == 1 and "REGRESSION" in md, slow.stdout[-2000:]
    return f"same code again: exit {same.returncode}; twice the work: exit {slow.returncode}"


SCRIPT = """
import torch
a = torch.randn(2048, 2048, device="cuda")
for _ in range(5):
    torch.cuda.nvtx.range_push("step")
    _ = a @ a
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
"""


def run_trace():
    folder = os.path.join(OUT, "run-trace")
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "steps.py")
    with open(script, "w") as f:
        f.write(SCRIPT)
    trace_file = os.path.join(folder, "trace.json")
    cli = [sys.executable, "-c", "import sys; from kprof.cli import main; sys.exit(main(['kprof'] + sys.argv[1:]))"]
    p = subprocess.run([*cli, "run", "--out", os.path.join(folder, "out"), "--trace", trace_file, "--",
                        sys.executable, script], capture_output=True, text=True)
    with open(os.path.join(folder, "kprof-run.log"), "w") as f:
        f.write(p.stdout + p.stderr)
    assert p.returncode == 0, p.stderr[-2000:]
    ev = json.load(open(trace_file))["traceEvents"]
    names = {(m["pid"], m["tid"] if m["name"] == "thread_name" else None): m["args"]["name"] for m in ev if m["ph"] == "M"}
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    steps = [e for e in ev if e.get("cat") == "region" and e["name"] == "step"]
    assert len(steps) == 5 and len(kernels) >= 5, (len(steps), len(kernels))
    assert all(names[(k["pid"], k["tid"])].startswith("stream ") for k in kernels)
    inside = sum(any(s["ts"] <= k["ts"] <= s["ts"] + s["dur"] + 50 for s in steps) for k in kernels)
    return f"{len(kernels)} kernels ({inside} starting inside a step range), {len(steps)} step ranges"


def notebook():
    import nbclient
    import nbformat

    nb = nbformat.read(os.path.join(REPO, "examples", "notebook.ipynb"), as_version=4)
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": os.path.join(REPO, "examples")}}).execute()
    nbformat.write(nb, os.path.join(OUT, "notebook-executed.ipynb"))
    text = json.dumps(nb)
    assert "measuring on the GPU" in text and "<svg" in text
    return "executed live (notebook-executed.ipynb)"


check("trace", trace)
check("pytest", pytest_plugin)
check("run-trace", run_trace)
try:
    import ipykernel  # noqa: F401
    import nbclient  # noqa: F401

    check("notebook", notebook)
except ImportError:
    print("notebook: SKIPPED (nbclient or ipykernel not installed here)")
json.dump(results, open(os.path.join(OUT, "workflow-check.json"), "w"), indent=2)
sys.exit(0 if all(v.startswith("PASS") for v in results.values()) else 1)
