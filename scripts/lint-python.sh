#!/usr/bin/env bash
# The Python checks of scripts/test.sh: ruff (the whole tree) and mypy (python/kprof), configured in
# pyproject.toml, from a venv of their own (target/lint-venv; nothing installed system-wide).
# `scripts/lint-python.sh --install-only` only creates the venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/lint-venv
if [ ! -x "$venv/bin/ruff" ] || [ ! -x "$venv/bin/mypy" ]; then
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q "ruff>=0.15,<1" "mypy>=1.15"
fi
[ "${1:-}" != --install-only ] || exit 0
"$venv/bin/ruff" check .
"$venv/bin/mypy"
