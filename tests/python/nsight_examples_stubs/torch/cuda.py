"""``torch.cuda`` of the stand-in: one stream."""

from __future__ import annotations


class Stream:
    pass


_STREAM = Stream()


def current_stream() -> Stream:
    return _STREAM


def is_available() -> bool:
    return True
