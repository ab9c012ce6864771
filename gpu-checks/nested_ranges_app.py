"""The program of gpu-checks/nested_ranges.sh: three user NVTX ranges, each around work that
opens ranges of its own, repeated REPS times (argument 1, default 5) after one warm-up outside
every range:

- `sort16m`: torch.sort of 16M floats (CUB opens `cub::DeviceRadixSort...` in its own domain);
- `conv`: a cuDNN convolution (fp32, 32x64x56x56, 3x3, 64 filters);
- `own`: a range of the program's own, nesting two levels: `own` (a relu) > `level1` (a 1024
  matmul) > `level2` (an add).

The device is synchronised after each range, so no range's kernels run beside another's.
"""

import sys

import torch
import torch.nn.functional as F

REPS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
nvtx = torch.cuda.nvtx


def sort(x):
    nvtx.range_push("sort16m")
    torch.sort(x)
    nvtx.range_pop()


def conv(img, w):
    nvtx.range_push("conv")
    F.conv2d(img, w, padding=1)
    nvtx.range_pop()


def own(a, b):
    nvtx.range_push("own")
    torch.relu(a)
    nvtx.range_push("level1")
    a @ b
    nvtx.range_push("level2")
    a + b
    nvtx.range_pop()
    nvtx.range_pop()
    nvtx.range_pop()


def main():
    torch.backends.cudnn.enabled = True
    torch.backends.cudnn.benchmark = False
    x = torch.rand(16 << 20, device="cuda")
    img = torch.randn(32, 64, 56, 56, device="cuda")
    w = torch.randn(64, 64, 3, 3, device="cuda")
    a = torch.randn(1024, 1024, device="cuda")
    b = torch.randn(1024, 1024, device="cuda")
    # Warm-up outside every range: lazy initialisation, cuDNN's and cuBLAS's handles.
    torch.sort(x)
    F.conv2d(img, w, padding=1)
    torch.relu(a), a @ b, a + b
    torch.cuda.synchronize()
    for _ in range(REPS):
        sort(x)
        torch.cuda.synchronize()
        conv(img, w)
        torch.cuda.synchronize()
        own(a, b)
        torch.cuda.synchronize()
    print(f"cudnn {torch.backends.cudnn.version()} torch {torch.__version__} reps {REPS}")


if __name__ == "__main__":
    main()
