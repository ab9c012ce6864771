"""``backend="ncu"``: profile a decorated function under Nsight Compute, in relaunch mode.

**Parent** (the script as the user started it): calling a function decorated with
``@kprof.analyze.kernel(backend="ncu")`` re-runs the script (``sys.executable`` with the
original command line, ``sys.orig_argv``) under ``ncu ... --`` with ``KPROF_NCU_CHILD`` set to
the function's *signature* ``<module>.<qualname>#<k>`` (``k`` counts the earlier calls of that
function in the process), waits, exports the report with ``ncu --import REP --csv --page raw
--print-units base`` and reads it by key into the usual raw table. The ``.ncu-rep``, ncu's log
and the CSV are kept next to the output prefix (or in ``<tmp>/kprof-ncu/``) under names that
never collide. The mode used and why (always relaunch today: attach mode, ncu >= 2026.2.1, is not
implemented) is reported at INFO and in ``results.fingerprint["ncu"]``.

**Child** (the same script under ncu): the decorated function whose signature matches runs its
configs and runs without CUPTI, each :func:`kprof.annotate` region inside an NVTX range
``region#c0.<config>.<run>`` in the ``kprof`` domain, and then the process exits
(``os._exit(0)``). Every other kprof-decorated function returns an *empty*
:class:`kprof.ProfileResults` at once (no GPU work, no files), so code that looks at the results
of earlier benchmarks keeps working. Code outside decorated functions runs again in the child.

Not possible in a notebook or an interactive session (there is no script to re-run): that is an
error pointing to ``backend="cupti"``.

``ncu_options`` (a dict, decorator option) passes more to ncu: ``set`` (e.g. ``"full"``),
``sections`` (list), ``target_processes`` (``"all"`` | ``"application-only"``), ``launch_skip``,
``launch_count`` (ints) and ``extra_args`` (list of raw arguments); and ``mode`` (``"auto"``,
the default | ``"relaunch"`` | ``"attach"``), which wins over the ``KPROF_NCU_MODE`` environment
variable. ``auto`` relaunches; ``attach`` is an error that names the ncu found and the fallback.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from .exceptions import BackendError, ConfigError

CHILD_ENV = "KPROF_NCU_CHILD"

_NCU_OPTION_KEYS = ("set", "sections", "target_processes", "launch_skip", "launch_count", "extra_args", "mode")

#: The values of ``ncu_options["mode"]`` and ``KPROF_NCU_MODE``.
NCU_MODES = ("auto", "relaunch", "attach")

_calls: dict[str, int] = {}
_calls_lock = threading.Lock()


def in_child() -> bool:
    """Whether this process is an ncu child started by kprof."""
    return bool(os.environ.get(CHILD_ENV))


def check_ncu_options(value: Any) -> dict | None:
    """Validates the ``ncu_options`` decorator option."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(f"ncu_options must be a dict (keys {', '.join(_NCU_OPTION_KEYS)}), got {value!r}")
    unknown = sorted(set(value) - set(_NCU_OPTION_KEYS))
    if unknown:
        raise ConfigError(f"ncu_options has unknown key(s) {unknown}; known: {', '.join(_NCU_OPTION_KEYS)}")
    for k in ("set",):
        if value.get(k) is not None and not isinstance(value[k], str):
            raise ConfigError(f"ncu_options[{k!r}] must be a string, got {value[k]!r}")
    for k in ("sections", "extra_args"):
        v = value.get(k)
        if v is not None and (isinstance(v, str) or not all(isinstance(x, str) for x in v)):
            raise ConfigError(f"ncu_options[{k!r}] must be a list of strings, got {v!r}")
    for k in ("launch_skip", "launch_count"):
        v = value.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise ConfigError(f"ncu_options[{k!r}] must be an int >= 0, got {v!r}")
    mode = value.get("mode")
    if mode is not None and (not isinstance(mode, str) or mode not in NCU_MODES):
        raise ConfigError(f"ncu_options['mode'] must be one of {', '.join(map(repr, NCU_MODES))}, got {mode!r}")
    tp = value.get("target_processes")
    if tp is not None and tp not in ("all", "application-only"):
        raise ConfigError(f"ncu_options['target_processes'] must be 'all' or 'application-only', got {tp!r}")
    return {k: (list(v) if isinstance(v, (list, tuple)) else v) for k, v in value.items()}


def _next_id(tag: str) -> tuple[str, int]:
    with _calls_lock:
        k = _calls.get(tag, 0)
        _calls[tag] = k + 1
    return f"{tag}#{k}", k


def script_command() -> tuple[str, list[str]]:
    """The command that re-runs this script: ``sys.executable`` and the original arguments.

    Raises BackendError in a notebook / interactive session (no script file to re-run).
    """
    import __main__

    main_file = getattr(__main__, "__file__", None)
    interactive = hasattr(sys, "ps1") or bool(getattr(sys.flags, "interactive", 0))
    if not main_file or interactive or "ipykernel" in sys.modules:
        raise BackendError(
            "backend='ncu' re-runs your script under Nsight Compute (relaunch mode), but this is a notebook "
            "or an interactive session with no script to re-run. Use backend='cupti' here (kernel durations "
            "without ncu), or move the benchmark into a .py script and run it with python."
        )
    orig = getattr(sys, "orig_argv", None)
    args = list(orig[1:]) if orig else list(sys.argv)
    return sys.executable, args


class Skip:
    """In an ncu child: this benchmark is not the selected one."""


class NcuBackend:
    """One call of an ``backend="ncu"`` function (see the module doc string)."""

    def __init__(self, tag: str, installed, report_prefix: str | None = None):
        self.tag = tag
        self.installed = installed
        self.id, self.call_index = _next_id(tag)
        self.child = in_child()
        self.report_prefix = report_prefix
        self.info: dict | None = None
        if not self.child:
            self.program, self.args = script_command()

    @property
    def skip(self) -> bool:
        return self.child and os.environ.get(CHILD_ENV) != self.id

    def run_benchmark(self, name, func, configs, options, progress):
        if self.child:
            opts = dict(options, backend="ncu")
            try:
                self.installed.run_benchmark(name, func, configs, opts, progress)
            except BaseException:  # the parent shows ncu's log tail, which holds this
                import traceback

                traceback.print_exc()
                sys.stderr.flush()
                os._exit(1)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)
        from . import _core

        # Report names: <script>:<module.qualname> (the stem hashes it, so names never collide).
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        module = f"{os.path.basename(main_file)}:{self.tag}" if main_file else self.tag
        progress.info(f"kprof: {name}: running the script again under ncu (KPROF_NCU_CHILD={self.id})")
        launch = {
            "program": self.program,
            "args": self.args,
            "child_id": self.id,
            "module": module,
            "call_index": self.call_index,
            "report_prefix": self.report_prefix,
            "env": None,
        }
        table, info = _core.ncu_relaunch(name, configs, options, launch)
        self.info = info
        progress.info(f"kprof: {name}: {info['summary']}, {info['wall_s']:.1f} s; report {info['report']}")
        return table

    def fingerprint(self) -> dict | None:
        """What the results record about the ncu run (``results.fingerprint``); None before it."""
        if self.info is None:
            return None
        keys = ("version", "mode", "mode_requested", "mode_reason", "summary", "report", "log", "csv")
        return {"backend": "ncu", "ncu": {"path": self.info["ncu"], **{k: self.info[k] for k in keys}}}

    def _enter_region(self, name: str) -> None:
        self.installed._enter_region(name)

    def _exit_region(self, name: str, failed: bool) -> None:
        self.installed._exit_region(name, failed)


def empty_table() -> dict[str, list]:
    from ._backend import RAW_COLUMNS

    return {c: [] for c in (*RAW_COLUMNS, "_config")}
