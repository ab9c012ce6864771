"""What several test files share: a small benchmark of two regions over two configs, run on
conftest.py's FakeBackend, and loading a script of the repository (a bench, a GPU check) as a
module."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

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


def load_module(path: str | Path) -> ModuleType:
    """The script at ``path`` as a module named by its stem, its folder on ``sys.path`` as when
    it runs (the benches import their shared ``bench_log`` from there)."""
    path = Path(path)
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
