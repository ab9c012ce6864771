#!/usr/bin/env bash
# Builds what the GPU checks run (release) on the dev machine and copies it into .carry/bin/, the
# repo's ignored folder that travels to the GPU machine (see docs/gpu-check.md): the engine's
# examples, the check binaries of gpu-checks/harness, the `kprof` command and its injection
# library, and the wheel. Then `gpu-checks/run.sh` lists and runs the checks there.
#
# A plain build is enough: it needs glibc >= 2.34 at run time (dlopen@GLIBC_2.34) and the H200
# test machine has 2.39. Nothing here needs CUDA: cudarc and kprof dlopen every library at run time.
set -euo pipefail
cd "$(dirname "$0")/.."

EXAMPLES=(vector_scale sgemm multi_kernel graph)
CHECKS=(gpu_check counters_check conditions_check seed_counters truth_check)

cargo build --release -p kprof --examples
cargo build --release -p kprof-gpu-checks --bins
# kprof without its built-in copy of the injection library: the file is copied next to it below.
KPROF_EMBED_INJECT=0 cargo build --release -p kprof-cli -p kprof-inject

mkdir -p .carry/bin
for ex in "${EXAMPLES[@]}"; do
    src="target/release/examples/$ex"
    [ -x "$src" ] || { echo "missing $src" >&2; exit 1; }
    cp -f "$src" ".carry/bin/$ex"
done
for check in "${CHECKS[@]}"; do
    src="target/release/$check"
    [ -x "$src" ] || { echo "missing $src" >&2; exit 1; }
    cp -f "$src" ".carry/bin/$check"
done
cp -f target/release/kprof .carry/bin/kprof
cp -f target/release/libkprof_inject.so .carry/bin/libkprof_inject.so   # kprof run finds it next to kprof
# The Python package: the same wheel as for any machine (abi3 for Python >= 3.10, manylinux_2_28,
# libkprof_inject.so inside); on the GPU machine: pip install --no-deps .carry/wheels/kprof-*.whl
rm -rf .carry/wheels && mkdir -p .carry/wheels
scripts/build-wheel.sh .carry/wheels
strip .carry/bin/* 2>/dev/null || true
# The reference cases of the duration checks (graph_app.cu, small_ref.py, small_ncu_target.py) from the
# shared folder beside the repo, and nsight-python 0.9.6 for the speed comparison of
# gpu-checks/gpu-check-truth.sh (the GPU machine has no network): both only when available.
if [ -d ../shared/cases ]; then
    rm -rf .carry/cases && cp -r ../shared/cases .carry/cases && chmod -R u+w .carry/cases
fi
if [ ! -e .carry/wheels-extra/nsight_python-0.9.6-py3-none-any.whl ]; then
    # With the dependencies the GPU machine's torch venv lacks (numpy and pandas come from it), as
    # wheels for its Python 3.12.
    mkdir -p .carry/wheels-extra
    { pip download -q --no-deps nsight-python==0.9.6 -d .carry/wheels-extra \
        && pip download -q --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
            --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .carry/wheels-extra \
            nvtx deepdiff nvidia-ml-py matplotlib \
        && rm -f .carry/wheels-extra/numpy-* .carry/wheels-extra/tzdata-*; } \
        || echo "warning: nsight-python 0.9.6 not downloaded (the truth check's sweep comparison is skipped)" >&2
fi
git rev-parse --short HEAD > .carry/bin/BUILT_FROM 2>/dev/null || true
echo "built from $(cat .carry/bin/BUILT_FROM 2>/dev/null || echo '?'):"
ls -la .carry/bin
du -sh .carry
