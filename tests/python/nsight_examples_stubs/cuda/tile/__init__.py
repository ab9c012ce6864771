"""A stand-in for cuTile (``cuda.tile``): ``@kernel`` and ``launch`` check their arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any


class Constant:
    def __class_getitem__(cls, item: Any) -> type:
        return cls


class Kernel:
    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.signature = inspect.signature(fn)


def kernel(fn: Callable) -> Kernel:
    return Kernel(fn)


def launch(stream: Any, grid: tuple[int, ...], k: Kernel, args: tuple) -> None:
    if not isinstance(k, Kernel):
        raise TypeError("launch needs a @cuda.tile.kernel")
    k.signature.bind(*args)
    if len(grid) != 3 or not all(isinstance(x, int) and x > 0 for x in grid):
        raise ValueError(f"bad grid {grid!r}")


def _device_only(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("cuda.tile functions run inside kernels only")


bid = load = store = _device_only
