"""Experimental API (as nsight-python's ``nsight.experimental``): info collectors.

>>> @kprof.experimental.collect(scope=kprof.CollectionScope.RUN)
... def sm_clock():
...     return pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)
>>> @kprof.kernel(info_collectors=[sm_clock])
... def bench(n): ...
"""

from .collectors import CollectionScope, InfoCollector, collect

__all__ = ["collect", "CollectionScope", "InfoCollector"]
