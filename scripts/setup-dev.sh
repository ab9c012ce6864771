#!/usr/bin/env bash
# Installs what building and testing kprof needs on a fresh Debian machine (idempotent):
# libclang-dev (the nvtx crate's build script runs bindgen) and the CUPTI wheel whose headers and
# libnvperf_host the offline tests read (never committed: NVIDIA's licence).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
dpkg -s libclang-dev >/dev/null 2>&1 || need_apt+=(libclang-dev)
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "setup: installing ${need_apt[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi

wheel_dir=target/cupti-wheel
if ! ls "$wheel_dir"/nvidia_cuda_cupti-13.0.85-*.whl >/dev/null 2>&1; then
    echo "setup: downloading nvidia-cuda-cupti 13.0.85 (headers for offline tests)"
    python3 -m pip download -q --no-deps nvidia-cuda-cupti==13.0.85 -d "$wheel_dir" \
        || echo "setup: could not download the CUPTI wheel; header checks will be skipped"
fi
if ls "$wheel_dir"/*.whl >/dev/null 2>&1 && [ ! -d "$wheel_dir/unpacked/nvidia" ]; then
    python3 -m zipfile -e "$wheel_dir"/nvidia_cuda_cupti-13.0.85-*.whl "$wheel_dir/unpacked"
fi
