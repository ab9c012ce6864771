#!/usr/bin/env bash
# The Python package's tests: builds and installs kprof (pip install . builds the PyO3 extension with
# maturin), then runs pytest from outside the source tree so the installed package is the one tested.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet pytest
python3 -m pip install --quiet .
repo="$PWD"
cd "$(mktemp -d)"
python3 -m pytest -q -p no:cacheprovider --rootdir "$repo" "$repo/tests/python"
