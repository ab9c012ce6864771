#!/usr/bin/env bash
# kprof's whole test suite. Works on a fresh machine without a GPU: fetches what it needs first (into
# target/ and venvs under it; only the browser check installs a Debian package, chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-dev.sh
export KPROF_CUPTI_WHEEL_DIR="$PWD/target/cupti-wheel/unpacked"
export KPROF_NVTX_INCLUDE="$PWD/target/nvtx-wheel/unpacked/nvidia/cu13/include"
cargo test --workspace --locked
# The HTML report in headless Chromium (Debian's chromium, installed when missing: about 1.5 min
# once; the check itself takes a few seconds). Prints "N passed, N failed"; fails on a failed check.
scripts/test-report-browser.sh
# The Python package: builds the wheel (scripts/build-wheel.sh), runs pytest on it in target/test-venv,
# then checks the wheel as a user gets it (scripts/test-wheel.sh). Prints "test-wheel: N passed, N failed".
scripts/test-python.sh
