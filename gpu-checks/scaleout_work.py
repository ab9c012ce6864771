"""What the two scale-out checks (gpu_check_scaleout.py on one GPU, gpu_check_multigpu.py on
several) share: the matmul their workers measure (optionally killing its worker once, inside the
region) and the closing table of checks with the summary file.

Each check keeps its own top-level functions, which call :func:`matmul`: without cloudpickle the
functions travel to the workers by name, and the workers look for their kprof wrappers at the top
of the function's own module.
"""

from __future__ import annotations

import json
import os
import signal

import torch  # first, on purpose: kprof has no import-order rule

import kprof


def matmul(n: int, kill_at: int | None = None) -> None:
    """fp32 ``a @ b`` of two n x n matrices made here, in region ``matmul``. At ``n == kill_at`` the
    worker SIGKILLs itself inside the region (its CUDA context live), once: the first time, it
    creates the file ``$KILL_MARKER`` (unset: never)."""
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with kprof.annotate("matmul"):
        _ = a @ b
        marker = os.environ.get("KILL_MARKER")
        if n == kill_at and marker and not os.path.exists(marker):
            open(marker, "w").close()
            torch.cuda.synchronize()
            os.kill(os.getpid(), signal.SIGKILL)


def finish(label: str, checks: list[tuple[str, bool, str]], summary_path: str, summary: dict) -> int:
    """Prints one PASS/FAIL line per check and the count, writes ``summary`` with the checks, the
    torch version and the GPU name to ``summary_path`` (JSON); 1 when a check failed, else 0."""
    print()
    width = max(len(c[0]) for c in checks)
    for name, ok, detail in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {name:<{width}}  {detail}")
    failed = [c for c in checks if not c[1]]
    print(f"\n{label}: {len(checks) - len(failed)} passed, {len(failed)} failed")
    with open(summary_path, "w") as f:
        json.dump({**summary, "checks": [{"name": c[0], "ok": c[1], "detail": c[2]} for c in checks],
                   "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}, f, indent=2)
    return 1 if failed else 0
