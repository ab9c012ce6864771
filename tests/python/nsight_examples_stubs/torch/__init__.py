"""A stand-in for the few torch calls nsight-python's examples make (no data, only shapes)."""

from __future__ import annotations

from typing import Any

from . import cuda


class dtype:
    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


float32 = dtype("float32")
float16 = dtype("float16")


class Tensor:
    def __init__(self, shape: tuple[int, ...], dtype: dtype = float32, device: str = "cpu") -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self.device = device

    def _check(self, other: Any) -> Tensor:
        if not isinstance(other, Tensor):
            raise TypeError(f"expected a Tensor, got {type(other).__name__}")
        if other.device != self.device:
            raise RuntimeError(f"tensors on {self.device} and {other.device}")
        return other

    def __matmul__(self, other: Tensor) -> Tensor:
        other = self._check(other)
        if self.shape[-1] != other.shape[0]:
            raise RuntimeError(f"matmul shapes {self.shape} and {other.shape}")
        return Tensor((self.shape[0], other.shape[-1]), self.dtype, self.device)

    def __add__(self, other: Tensor) -> Tensor:
        other = self._check(other)
        if self.shape != other.shape:
            raise RuntimeError(f"add shapes {self.shape} and {other.shape}")
        return Tensor(self.shape, self.dtype, self.device)

    @property
    def T(self) -> Tensor:
        return Tensor(tuple(reversed(self.shape)), self.dtype, self.device)

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


def randn(*shape: int, device: str = "cpu", dtype: dtype = float32) -> Tensor:
    if not all(isinstance(s, int) and s > 0 for s in shape):
        raise TypeError(f"randn needs positive int sizes, got {shape}")
    return Tensor(shape, dtype, device)


def empty_like(t: Tensor) -> Tensor:
    return Tensor(t.shape, t.dtype, t.device)


def matmul(a: Tensor, b: Tensor) -> Tensor:
    return a @ b


def einsum(equation: str, a: Tensor, b: Tensor) -> Tensor:
    if equation.replace(" ", "") != "ij,jk->ik":
        raise NotImplementedError(f"the stand-in einsum knows 'ij,jk->ik' only, got {equation!r}")
    return a @ b


__all__ = ["Tensor", "cuda", "dtype", "einsum", "empty_like", "float16", "float32", "matmul", "randn"]
