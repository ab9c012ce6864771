#!/usr/bin/env bash
# kprof's whole test suite. Works on a fresh machine without a GPU: fetches what it needs first (into
# target/ and venvs under it; only the browser check installs a Debian package, chromium).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
stage() { echo "test.sh: $1 after $((SECONDS - start)) s"; }
scripts/setup-dev.sh
export KPROF_CUPTI_WHEEL_DIR="$PWD/target/cupti-wheel/unpacked"
export KPROF_NVTX_INCLUDE="$PWD/target/nvtx-wheel/unpacked/nvidia/cu13/include"
export KPROF_CUDA_INCLUDE="$PWD/target/cudart-wheel/unpacked/nvidia/cu13/include"
# While the Rust tests compile (the critical path on 2 cores), what later steps fetch from the
# network is installed in the background: the wheel's build tools, the Python test venv's
# packages (dask and submitit for the scale-out tests), Chromium, then Debian's slurm-wlm and munge
# for the real single-node Slurm of tests/python/test_scaleout_slurm.py (one apt-get at a time).
# Each step below installs again whatever is still missing (logs: target/prep-*.log).
mkdir -p target
prep() { local name=$1; shift; "$@" >"target/prep-$name.log" 2>&1 & }
prep wheel-tools scripts/build-wheel.sh --tools-only
prep lint-tools scripts/lint-python.sh --install-only
prep test-venv scripts/test-python.sh --venv-only
prep chromium-slurm sh -c 'scripts/report-screenshot.sh --install-only; scripts/slurm-local.sh install'
cargo fmt --all --check
cargo test --workspace --locked
stage "cargo test"
# Lints: clippy on every target of the workspace, warnings as errors (the [workspace.lints] of
# Cargo.toml and clippy's defaults); ruff and mypy on the Python code (pyproject.toml).
cargo clippy --workspace --all-targets --locked -- -D warnings
stage "cargo clippy"
wait || true
scripts/lint-python.sh
stage "ruff and mypy"
# The HTML report in headless Chromium (Debian's chromium, installed when missing: about 1.5 min
# once; the check itself takes a few seconds). Prints "N passed, N failed"; fails on a failed check.
scripts/test-report-browser.sh
stage "browser check"
# The Python package: builds the wheel (scripts/build-wheel.sh), runs pytest on it in target/test-venv
# (the scale-out tests start their own dask LocalCluster and single-node Slurm), then checks the wheel
# as a user gets it (scripts/test-wheel.sh). Prints "test-wheel: N passed, N failed".
scripts/test-python.sh
stage "Python tests and the wheel check"
