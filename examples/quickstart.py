"""kprof in 20 lines: time a PyTorch matmul sweep in-process through CUPTI (needs a CUDA GPU).

    pip install . && python examples/quickstart.py
"""

import sys

import kprof

try:
    import torch
except ImportError:
    sys.exit("quickstart: this example profiles PyTorch matmuls; install PyTorch with CUDA (pip install torch)")


@kprof.kernel(configs=[1024, 2048, 4096], runs=10, thermal_mode="off")
def matmul(n: int) -> None:
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with kprof.annotate("matmul"):  # only the kernels launched in here are timed
        _ = a @ b


try:
    df = matmul().to_dataframe()
except kprof.ProfilerError as e:  # e.g. no NVIDIA driver on this machine: says what is missing and the fix
    sys.exit(f"quickstart: {e}")
print(df[["Annotation", "n", "AvgValue", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "Kernel"]])
