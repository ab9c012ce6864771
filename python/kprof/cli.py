"""The ``kprof`` console command: the same CLI as the Rust binary, run from the extension."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kprof`` console script."""
    from kprof import _backend, _core

    # The command searches this environment's site-packages for pip's NVIDIA wheels (CUPTI), as
    # the Python API does.
    _backend._export_site_packages()
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["kprof"]
    code = _core.cli_main(args)
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
