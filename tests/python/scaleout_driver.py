"""A script that sweeps on two workers until it is interrupted (test_scaleout.py sends it Ctrl-C):
``python scaleout_driver.py devices OUTPUT_PREFIX``. Without cloudpickle on purpose: its
``__main__`` function travels to the workers by name."""

import sys

sys.modules["cloudpickle"] = None

import kprof  # noqa: E402

PREFIX = sys.argv[2]


@kprof.analyze.kernel(configs=[512, 1024, 2048, 4096, 8192], runs=10, devices=[0, 1], output_prefix=PREFIX)
def matmul(n):
    with kprof.annotate("matmul"):
        pass


if __name__ == "__main__":
    matmul()
