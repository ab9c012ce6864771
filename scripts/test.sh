#!/usr/bin/env bash
# kprof's whole test suite. Works on a fresh machine without a GPU: installs what it needs first.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-dev.sh
export KPROF_CUPTI_WHEEL_DIR="$PWD/target/cupti-wheel/unpacked"
cargo test --workspace --locked
# The Python package: pip install . (builds kprof._core with maturin), then pytest on the installed package.
scripts/test-python.sh
