"""kprof: GPU kernel profiling you can trust, with a Rust core.

The API of NVIDIA's nsight-python 1.1 (``import kprof as nsight`` runs nsight-style code):

>>> import kprof
>>> @kprof.analyze.kernel(configs=[1024, 4096], runs=20)
... def matmul(n):
...     a = torch.randn(n, n, device="cuda")
...     with kprof.annotate("matmul"):
...         a @ a
>>> df = matmul().to_dataframe()

No import-order rule: kprof can be imported before or after torch/CUDA.
"""

from __future__ import annotations

from . import _core, analyze, exceptions
from .analyze import kernel
from ._measurement import configure, release_counters
from . import experimental
from .annotation import annotate, in_counter_pass
from .collectors import CollectionScope, InfoCollector
from .exceptions import (
    AnnotationError,
    BackendError,
    ConfigError,
    NotAvailableYetError,
    ProfilerError,
    ProfilerException,
    WorkerError,
)
from .results import ProfileResults, load
from .utils import VerbosityLevel

__version__: str = _core.__version__

__all__ = [
    "annotate",
    "in_counter_pass",
    "CollectionScope",
    "InfoCollector",
    "experimental",
    "analyze",
    "kernel",
    "configure",
    "release_counters",
    "VerbosityLevel",
    "ProfileResults",
    "load",
    *exceptions.__all__,
    "exceptions",
    "__version__",
]
