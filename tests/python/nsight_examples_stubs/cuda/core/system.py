"""``cuda.core.system`` of the stand-in."""

from __future__ import annotations


def get_user_mode_driver_version() -> tuple[int, int]:
    return (13, 0)
