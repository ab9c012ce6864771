#!/usr/bin/env bash
# Fetches what the offline tests read on a fresh machine (idempotent), from PyPI: the CUPTI wheel
# (headers and libnvperf_host), the NVTX wheel (NVTX v3 headers, against which the
# hand-written NVTX bindings are checked) and the CUDA runtime wheel (its `cuda.h`, against which
# the hand-written driver bindings are checked). Never committed: NVIDIA's licence. Nothing is
# installed system-wide: building kprof needs only Rust (and a C linker), no libclang.
set -euo pipefail
cd "$(dirname "$0")/.."

# fetch NAME VERSION DIR: downloads the wheel into DIR and unpacks it into DIR/unpacked.
fetch() {
    local name=$1 version=$2 dir=$3 file=${1//-/_}
    if ! ls "$dir/$file-$version-"*.whl >/dev/null 2>&1; then
        echo "setup: downloading $name $version (headers for offline tests)"
        python3 -m pip download -q --no-deps "$name==$version" -d "$dir" \
            || { echo "setup: could not download $name; the tests that need it will be skipped"; return 0; }
    fi
    if [ ! -d "$dir/unpacked/nvidia" ]; then
        python3 -m zipfile -e "$dir/$file-$version-"*.whl "$dir/unpacked"
    fi
}
fetch nvidia-cuda-cupti 13.0.85 target/cupti-wheel
fetch nvidia-nvtx 13.0.85 target/nvtx-wheel
fetch nvidia-cuda-runtime 13.0.96 target/cudart-wheel
# clippy and rustfmt for scripts/test.sh's lints (rustup's default profile has both; a minimal one
# does not).
if command -v rustup >/dev/null 2>&1 && ! { cargo clippy --version && cargo fmt --version; } >/dev/null 2>&1; then
    rustup component add clippy rustfmt
fi
