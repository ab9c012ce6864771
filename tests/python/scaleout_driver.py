"""A script for the scale-out tests that need a script of their own (test_scaleout.py):

    python scaleout_driver.py sweep OUTPUT_PREFIX           # sweeps on two workers until interrupted
    python scaleout_driver.py cuda-at-import OUTPUT_PREFIX  # "starts CUDA" at import: the workers refuse

Without cloudpickle on purpose: its ``__main__`` function travels to the workers by name, and the
workers run this file's top level again (as multiprocessing does)."""

import signal
import sys
import types

# Ctrl-C raises KeyboardInterrupt here, as in a terminal, also when the tests run with SIGINT
# ignored (the suite started as a background command of a shell without job control, such as
# `scripts/test.sh > log &` in a script): Python keeps an inherited SIG_IGN, and this script would
# ignore the test's SIGINT.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.modules["cloudpickle"] = None

if sys.argv[1] == "cuda-at-import":  # a torch whose CUDA is already started, in every process
    sys.modules["torch"] = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: True))

import kprof  # noqa: E402

PREFIX = sys.argv[2]


@kprof.analyze.kernel(configs=[512, 1024, 2048, 4096, 8192], runs=10, devices=[0, 1], output_prefix=PREFIX)
def matmul(n):
    with kprof.annotate("matmul"):
        pass


if __name__ == "__main__":
    matmul()
