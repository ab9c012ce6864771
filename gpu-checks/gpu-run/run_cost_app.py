"""The cost of `kprof run --metrics`'s program: what `kprof run --metrics` was timed on (gpu-checks/gpu-check-run-cost.sh).

3 `randn` (two 4096x4096 fp32 matrices, 64M floats), 3 warm-up fp32 matmuls 4096, then
APP_ITERS (default 30) times an NVTX range `gemm` around a 4096 matmul and a range `scale`
around `x * 2.0` over the 64M floats: 6 + 2 x 30 = 66 kernels. TF32 stays off (fp32 matmul).

APP_EXTRA_MB (default 0) keeps that many MiB allocated on the device during the ranges (no
kernel touches them): CUPTI's kernel replay saves and restores the device memory a program
holds, so the counter launch's cost per kernel and pass can be measured against it.

Prints one line `APP {json}` at the end: kernels launched by the script, the memory PyTorch's
caching allocator holds (reserved) and uses (allocated), in MiB.
"""
import json
import os

import torch

ITERS = int(os.environ.get("APP_ITERS", "30"))
EXTRA_MB = int(os.environ.get("APP_EXTRA_MB", "0"))

torch.backends.cuda.matmul.allow_tf32 = False
dev = "cuda"
a = torch.randn(4096, 4096, device=dev)
b = torch.randn(4096, 4096, device=dev)
x = torch.randn(64 * 1024 * 1024, device=dev)
for _ in range(3):
    c = a @ b
pad = torch.empty(EXTRA_MB * 2**20, dtype=torch.uint8, device=dev) if EXTRA_MB > 0 else None
torch.cuda.synchronize()
for _ in range(ITERS):
    torch.cuda.nvtx.range_push("gemm")
    c = a @ b
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("scale")
    y = x * 2.0
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
print(
    "APP "
    + json.dumps(
        {
            "iters": ITERS,
            "extra_mb": EXTRA_MB,
            "kernels_expected": 6 + 2 * ITERS,
            "reserved_mb": round(torch.cuda.memory_reserved() / 2**20),
            "allocated_mb": round(torch.cuda.memory_allocated() / 2**20),
        }
    ),
    flush=True,
)
