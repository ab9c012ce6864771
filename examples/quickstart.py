"""kprof in 20 lines: time a PyTorch matmul sweep in-process through CUPTI (needs a CUDA GPU).

    pip install . && python examples/quickstart.py
"""

import torch

import kprof


@kprof.kernel(configs=[1024, 2048, 4096], runs=10, thermal_mode="off")
def matmul(n: int) -> None:
    a = torch.randn(n, n, device="cuda")
    b = torch.randn(n, n, device="cuda")
    with kprof.annotate("matmul"):  # only the kernels launched in here are timed
        _ = a @ b


df = matmul().to_dataframe()
print(df[["Annotation", "n", "AvgValue", "CI95_Lower", "CI95_Upper", "RelativeStdDevPct", "Kernel"]])
