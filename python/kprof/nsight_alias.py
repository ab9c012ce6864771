"""An opt-in ``nsight`` alias: code written for nsight-python (``import nsight``) runs on kprof.

kprof never registers the name by itself: a real nsight-python install stays what ``import
nsight`` gives, unless a program opts in, in one of two ways:

* in Python, before the first ``import nsight``::

      import kprof.nsight_alias
      kprof.nsight_alias.install()
      import nsight                 # kprof

* from the shell, for a script or a module, unchanged (the arguments as ``python``'s)::

      python -m kprof.nsight_alias examples/00_minimal.py
      python -m kprof.nsight_alias -m pytest examples/test_examples.py

:func:`install` refuses when a real ``nsight`` package can be imported (or is already
imported) unless ``replace=True`` (``--replace`` on the command line): the alias lasts for
the process and never touches what is installed.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import runpy
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

from .exceptions import ConfigError

__all__ = ["install", "installed", "main", "real_nsight"]

NAME = "nsight"


def _kprof() -> ModuleType:
    import kprof

    return kprof


def installed() -> bool:
    """Whether ``import nsight`` gives kprof in this process."""
    return sys.modules.get(NAME) is _kprof()


def real_nsight() -> str | None:
    """Where a real nsight package is (already imported, or importable), else None."""
    module = sys.modules.get(NAME)
    if module is _kprof():
        return None
    if module is not None:
        return getattr(module, "__file__", None) or repr(module)
    try:
        spec = importlib.util.find_spec(NAME)
    except (ImportError, ValueError):
        return None
    return None if spec is None else (spec.origin or "a namespace package")


def install(*, replace: bool = False) -> ModuleType:
    """Makes ``import nsight`` give the kprof package in this process; returns it.

    Raises :class:`kprof.ConfigError` when a real ``nsight`` is installed or imported, unless
    ``replace`` is true (then this process uses kprof under that name; the install is untouched).
    """
    kprof = _kprof()
    if installed():
        return kprof
    real = real_nsight()
    if real is not None and not replace:
        raise ConfigError(
            f"an nsight package is installed ({real}); kprof.nsight_alias.install(replace=True) "
            "(python -m kprof.nsight_alias --replace) makes 'import nsight' give kprof in this process anyway"
        )
    sys.modules[NAME] = kprof
    if not any(isinstance(f, _Submodules) for f in sys.meta_path):
        sys.meta_path.insert(0, _Submodules())
    return kprof


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``import nsight.X`` gives the module ``kprof.X`` itself (one copy of each module) while the
    alias is installed."""

    def __init__(self) -> None:
        self._own_specs: dict[str, ModuleSpec | None] = {}

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        if fullname.startswith(NAME + ".") and installed():
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module("kprof" + spec.name[len(NAME) :])
        # The import system sets the alias's spec on the module it gets; kprof's module keeps its
        # own (exec_module puts it back), or its relative imports would warn
        # "__package__ != __spec__.parent" for the rest of the process.
        self._own_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # kprof's module, already executed: only its own spec back.
        own = self._own_specs.pop(module.__name__, None)
        if own is not None:
            module.__spec__ = own


_USAGE = "usage: python -m kprof.nsight_alias [--replace] (SCRIPT | -m MODULE) [ARGS...]"


def main(argv: list[str] | None = None) -> int:
    """Runs a script or a module (``-m``) as ``__main__`` with the alias installed."""
    args = list(sys.argv[1:] if argv is None else argv)
    replace = False
    if args[:1] == ["--replace"]:
        replace, args = True, args[1:]
    if not args or args[0] in ("-h", "--help") or args[0] == "-m" and len(args) < 2:
        print(_USAGE, file=sys.stderr)
        return 2
    install(replace=replace)
    if args[0] == "-m":
        sys.argv = [args[1], *args[2:]]
        runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        return 0
    script = args[0]
    sys.argv = list(args)
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
