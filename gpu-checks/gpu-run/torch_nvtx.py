"""GPU check for `kprof run` with PyTorch: NVTX ranges from torch.cuda.nvtx, CUDA-event timing
of the same ranges printed as `EVENT <range> <iteration> <ns>`."""
import os
import sys
import time

import torch

t0 = time.perf_counter()
n = int(os.environ.get("N", "4096"))
a = torch.randn(n, n, device="cuda")
b = torch.randn(n, n, device="cuda")
x = torch.randn(64 << 20, device="cuda")
cushion = torch.randn(64 << 20, device="cuda")
for _ in range(3):
    a @ b
    x * 2.0
torch.cuda.synchronize()
# The event-pair floor: an empty pair recorded the same way (GPU kept busy before it).
floors = []
for _ in range(21):
    for _ in range(8):
        cushion.mul_(1.0)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    e.record()
    e.synchronize()
    floors.append(s.elapsed_time(e) * 1e6)
print(f"FLOOR {sorted(floors)[10]:.0f}")
for it in range(10):
    for name, fn in (("matmul", lambda: a @ b), ("scale", lambda: x * 2.0)):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        # A cushion of GPU work outside the range keeps the GPU busy while the host enqueues the
        # event and the kernels, so the event pair times GPU work, not host launch latency.
        for _ in range(8):
            cushion.mul_(1.0)
        torch.cuda.nvtx.range_push(name)
        s.record()
        fn()
        e.record()
        e.synchronize()
        torch.cuda.nvtx.range_pop()
        print(f"EVENT {name} {it} {s.elapsed_time(e) * 1e6:.0f}")
torch.cuda.synchronize()
print(f"WALL {time.perf_counter() - t0:.3f}", file=sys.stderr)
