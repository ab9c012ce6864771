"""The scale-out part 4's program: one rank of `torchrun --nproc-per-node 2` (gpu-checks/gpu-check-torchrun.sh).

Every rank uses device 0 (APP_DEVICE; the check has one GPU), joins the process group of the
launcher's environment (APP_BACKEND: gloo, default, or nccl), then APP_ITERS (default 20) times:
an NVTX range `matmul` around a 2048 fp32 matmul, and a range `allreduce` around
`dist.all_reduce` of a CUDA tensor of 1M floats (gloo copies it through the host: its kernels,
if any, are copies and fills; NCCL runs its own kernels, `ncclDevKernel_AllReduce_...`).

Prints `APP {json}` at the end: rank, backend, device, the first element after the reductions
(each rank starts with rank + 1, so 3 * 2**(iters - 1) for two ranks), whether it is right.
"""
import json
import os

import torch
import torch.distributed as dist

ITERS = int(os.environ.get("APP_ITERS", "20"))
BACKEND = os.environ.get("APP_BACKEND", "gloo")
# APP_DEVICE: the CUDA device of every rank (default 0: all ranks share GPU 0), or "local_rank"
# (rank r of a node on GPU LOCAL_RANK: one GPU per rank, as NCCL needs).
_dev = os.environ.get("APP_DEVICE", "0")
DEVICE = int(os.environ["LOCAL_RANK"]) if _dev == "local_rank" else int(_dev)

torch.backends.cuda.matmul.allow_tf32 = False
rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
dev = torch.device("cuda", DEVICE)
torch.cuda.set_device(dev)
if BACKEND == "nccl":
    dist.init_process_group("nccl", device_id=dev)
else:
    dist.init_process_group(BACKEND)
a = torch.randn(2048, 2048, device=dev)
x = torch.full((1 << 20,), float(rank + 1), device=dev)
torch.cuda.synchronize()
for _ in range(ITERS):
    torch.cuda.nvtx.range_push("matmul")
    c = a @ a
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("allreduce")
    dist.all_reduce(x)
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
first = x[0].item()
expect = float(sum(range(1, world + 1)) * world ** (ITERS - 1))
print("APP " + json.dumps({"rank": rank, "world": world, "backend": BACKEND, "device": DEVICE,
                           "x0": first, "expected": expect, "ok": first == expect}), flush=True)
dist.destroy_process_group()
