"""The opt-in ``nsight`` alias (kprof/nsight_alias.py): kprof under nsight-python's name, never by default."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import kprof
import kprof.nsight_alias as alias
import pytest


@pytest.fixture
def no_nsight(monkeypatch):
    """No module named nsight imported; the alias, once installed, is undone afterwards."""
    monkeypatch.delitem(sys.modules, "nsight", raising=False)
    yield
    for name in [n for n in sys.modules if n == "nsight" or n.startswith("nsight.")]:
        del sys.modules[name]


def _env(*paths: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, paths), *filter(None, [env.get("PYTHONPATH")])])
    return env


def test_import_kprof_does_not_register_nsight():
    code = "import sys, kprof, kprof.analyze, kprof.nsight_alias as a; print('nsight' in sys.modules, a.installed())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_install_makes_import_nsight_give_kprof(no_nsight):
    assert alias.install() is kprof
    import nsight

    assert nsight is kprof and alias.installed()
    assert alias.install() is kprof  # twice is fine
    from nsight.analyze import kernel
    from nsight.experimental import collect

    assert kernel is kprof.analyze.kernel and collect is kprof.experimental.collect
    assert sys.modules["nsight.analyze"] is kprof.analyze  # the same module, not a second copy
    # ... which keeps its own spec: its relative imports must not warn "__package__ != __spec__.parent".
    assert kprof.analyze.__spec__ is not None and kprof.analyze.__spec__.name == "kprof.analyze"


def test_a_real_nsight_is_kept_unless_replace(no_nsight, tmp_path, monkeypatch):
    (tmp_path / "nsight").mkdir()
    (tmp_path / "nsight" / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(kprof.ConfigError, match="replace=True"):
        alias.install()
    assert "nsight" not in sys.modules
    assert alias.install(replace=True) is kprof
    import nsight

    assert nsight is kprof


def test_run_a_script_or_a_module_with_the_alias(tmp_path):
    script = tmp_path / "uses_nsight.py"
    script.write_text("import sys, nsight, kprof\nassert nsight is kprof\nprint('ok', sys.argv[1:])\n")
    run = [sys.executable, "-m", "kprof.nsight_alias"]
    out = subprocess.run([*run, str(script), "x"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ok ['x']"
    out = subprocess.run(
        [*run, "-m", "uses_nsight", "y"], capture_output=True, text=True, check=True, env=_env(tmp_path)
    )
    assert out.stdout.strip() == "ok ['y']"
    bad = subprocess.run([*run], capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_the_command_refuses_a_real_nsight_without_replace(tmp_path):
    (tmp_path / "nsight").mkdir()
    (tmp_path / "nsight" / "__init__.py").write_text("")
    script = tmp_path / "s.py"
    script.write_text("import nsight, kprof\nprint(nsight is kprof)\n")
    run = [sys.executable, "-m", "kprof.nsight_alias"]
    refused = subprocess.run([*run, str(script)], capture_output=True, text=True, check=False, env=_env(tmp_path))
    assert refused.returncode != 0 and "replace" in refused.stderr
    ok = subprocess.run(
        [*run, "--replace", str(script)], capture_output=True, text=True, check=True, env=_env(tmp_path)
    )
    assert ok.stdout.strip() == "True"
