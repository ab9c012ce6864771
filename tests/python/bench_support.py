"""What several test files share: a small benchmark of two regions over two configs, run on
conftest.py's FakeBackend."""

from __future__ import annotations

import kprof

SILENT = kprof.VerbosityLevel.SILENT


def make_bench(**kw):
    """A benchmark of regions "base" and "impl" over (n, dtype) = (1024, "fp32") and (4096, "fp16"),
    4 runs each, silent; `kw` goes to ``kprof.analyze.kernel`` as well."""

    @kprof.analyze.kernel(configs=[(1024, "fp32"), (4096, "fp16")], runs=4, verbosity=SILENT, **kw)
    def bench(n, dtype):
        with kprof.annotate("base"):
            pass
        with kprof.annotate("impl"):
            pass

    return bench
