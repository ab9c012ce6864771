"""The ``kprof`` console command: the same CLI as the Rust binary, run from the extension."""

from __future__ import annotations

import os
import sys


def inject_search_dirs() -> list[str]:
    """Where ``kprof run`` and ``kprof doctor`` look for ``libkprof_inject.so`` from a pip install
    (after ``KPROF_INJECT_PATH`` and the folder of the executable): the installed package's ``lib``
    folder, where the wheel ships it, then the environment's ``bin`` and ``lib`` (``sys.prefix``:
    the virtual environment, not the interpreter's real folder)."""
    package = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(package, "lib"), os.path.join(sys.prefix, "bin"), os.path.join(sys.prefix, "lib")]


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``kprof`` console script."""
    from kprof import _backend, _core

    # The command searches this environment's site-packages for pip's NVIDIA wheels (CUPTI), as
    # the Python API does.
    _backend._export_site_packages()
    args = list(sys.argv if argv is None else argv)
    if not args:
        args = ["kprof"]
    code = _core.cli_main(args, inject_search_dirs())
    if argv is None:
        sys.exit(code)
    return code


if __name__ == "__main__":  # pragma: no cover
    main()
