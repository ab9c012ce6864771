"""No message of the Python package names a GPU model: warnings and exceptions are read on whatever
GPU the user has, where "on the H200 by up to 3 %" says nothing true. Every string constant of
``python/kprof`` outside docstrings and comments is checked (the Rust sources:
``crates/kprof/tests/all/gpu_names.rs``); the documentation may name the GPU of a measurement."""

from __future__ import annotations

import ast
import os
import re

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PACKAGE = os.path.join(REPO, "python", "kprof")
MODELS = re.compile(
    r"\b(H100|H200|H800|H20|GH200|A100|A800|A10|A30|A40|V100|B100|B200|GB200|L4|L40S?|T4|P100)\b"
)


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring constants of a module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def offenders(source: str, name: str) -> list[str]:
    tree = ast.parse(source)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            m = MODELS.search(node.value)
            if m:
                found.append((node.lineno, f"{name}:{node.lineno}: {m.group(1)}: {node.value[:120]}"))
    return [f for _, f in sorted(found)]


def test_the_scan_finds_models_in_strings_only_outside_docstrings_and_comments():
    src = '"""On the H200."""\n# H100\ndef f():\n    """H200 too."""\n    warn(f"slower on the H100 by {x} %")\n    s = "GH100 chip, H200X"\n    raise E("A100")\n'
    found = offenders(src, "x.py")
    assert [f.split(": ")[1] for f in found] == ["H100", "A100"], found
    assert found[0].startswith("x.py:5:"), found


def test_no_message_of_the_python_package_names_a_gpu_model():
    found = []
    files = sorted(f for f in os.listdir(PACKAGE) if f.endswith(".py"))
    assert len(files) > 10, files
    for f in files:
        with open(os.path.join(PACKAGE, f), encoding="utf-8") as fh:
            found.extend(offenders(fh.read(), f"python/kprof/{f}"))
    assert not found, (
        "messages that name a GPU model (say it in general terms, or give the value measured on the device in "
        "use; the documentation keeps what was measured where):\n" + "\n".join(found)
    )
