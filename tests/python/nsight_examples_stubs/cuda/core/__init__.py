"""A stand-in for ``cuda.core``: ``system`` only."""

from . import system

__all__ = ["system"]
