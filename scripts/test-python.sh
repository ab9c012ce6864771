#!/usr/bin/env bash
# The Python package's tests, in a virtual environment this script creates (target/test-venv; the
# global interpreter is never touched): builds the wheel (scripts/build-wheel.sh), installs it,
# runs pytest from outside the source tree so the installed package is the one tested, then
# checks the wheel as a user gets it (scripts/test-wheel.sh: tag, fresh venv without cargo).
# The wheel goes in with its scale-out extras (kprof[dask,slurm]: dask.distributed, submitit,
# cloudpickle), which tests/python/test_scaleout_dask.py and test_scaleout_slurm.py use, and its
# plot extra (matplotlib: nsight-python's example 06 styles its plot through plot_callback).
# nbclient, ipykernel and nbformat run examples/notebook.ipynb (tests/python/test_notebook.py).
# `scripts/test-python.sh --venv-only` only creates the venv and installs pytest, pandas and those.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/test-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ "${1:-}" = --venv-only ]; then
    "$venv/bin/python" -m pip install -q pytest pandas "dask[distributed]" submitit cloudpickle matplotlib nbclient ipykernel nbformat
    exit 0
fi
wheel=$(scripts/build-wheel.sh | tail -1)
"$venv/bin/python" -m pip install -q pytest nbclient ipykernel nbformat "$wheel[dask,slurm,plot]"
"$venv/bin/python" -m pip install -q --force-reinstall --no-deps "$wheel"
repo="$PWD"
pytest() { (cd "$(mktemp -d)" && "$repo/$venv/bin/python" -m pytest -q -p no:cacheprovider --rootdir "$repo" "$@"); }
# The dask and Slurm tests mostly wait on their clusters (worker start-up, Slurm's scheduler tick):
# they run beside the others, their output printed after them.
clusters=(tests/python/test_scaleout_dask.py tests/python/test_scaleout_slurm.py)
pytest "${clusters[@]/#/$repo/}" >target/pytest-clusters.log 2>&1 &
beside=$!
status=0
pytest "$repo/tests/python" "${clusters[@]/#/--ignore=$repo/}" || status=$?
wait "$beside" || status=$?
echo "test-python: the dask and Slurm tests (target/pytest-clusters.log):"
cat target/pytest-clusters.log
[ "$status" = 0 ] || exit "$status"
scripts/test-wheel.sh "$wheel"
