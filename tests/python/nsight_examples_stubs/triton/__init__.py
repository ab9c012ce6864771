"""A stand-in for Triton: ``@jit`` kernels whose launch evaluates the grid and checks the arguments."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from . import language


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class JITFunction:
    def __init__(self, fn: Callable) -> None:
        self.fn = fn
        self.signature = inspect.signature(fn)

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        def launch(*args: Any, **kwargs: Any) -> None:
            bound = self.signature.bind(*args, **kwargs)
            g = grid(dict(bound.arguments)) if callable(grid) else grid
            if not all(isinstance(x, int) and x > 0 for x in g):
                raise ValueError(f"bad launch grid {g!r}")

        return launch


def jit(fn: Callable) -> JITFunction:
    return JITFunction(fn)


__all__ = ["JITFunction", "cdiv", "jit", "language"]
