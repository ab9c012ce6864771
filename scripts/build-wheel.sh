#!/usr/bin/env bash
# Builds kprof's wheel for real machines: abi3 (one wheel for CPython >= 3.10), manylinux_2_28
# (glibc >= 2.28: RHEL 8, Ubuntu 20.04 and newer), linked with zig from the `ziglang` PyPI
# package, with libkprof_inject.so inside the package (kprof/lib/) so that `kprof run` works from a
# pip install. The build tools (maturin, ziglang, cargo-zigbuild, auditwheel) go into a venv under
# target/; nothing is installed system-wide. Needs Rust (cargo) and python3 >= 3.10.
#
# Usage: scripts/build-wheel.sh [OUT_DIR]    (default: target/wheels)
#        scripts/build-wheel.sh --tools-only  (only installs the build tools)
# The wheel's path is printed on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/wheels}
venv=target/wheel-build-venv
if [ ! -x "$venv/bin/maturin" ] || [ ! -x "$venv/bin/cargo-zigbuild" ]; then
    echo "build-wheel: installing maturin, ziglang, cargo-zigbuild, auditwheel into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -m pip install -q "maturin>=1.9,<2" ziglang cargo-zigbuild auditwheel >&2
fi
[ "$out" != --tools-only ] || exit 0
export PATH="$PWD/$venv/bin:$PATH"
arch=$(uname -m)
glibc=2.28

# 1. The injection library, linked against glibc 2.28's symbols. Its own target folder: cargo-zigbuild
#    and maturin pass different flags, and in one folder each would rebuild everything the other built.
cargo zigbuild --release --locked -p kprof-inject --target "$arch-unknown-linux-gnu.$glibc" \
    --target-dir target/inject-zig >&2
mkdir -p python/kprof/lib
cp -f "target/inject-zig/$arch-unknown-linux-gnu/release/libkprof_inject.so" python/kprof/lib/libkprof_inject.so
strip --strip-unneeded python/kprof/lib/libkprof_inject.so 2>/dev/null || true

# 2. The wheel (kprof._core; the CLI inside it does not need its own embedded copy of the library).
mkdir -p "$out"
rm -f "$out"/kprof-*.whl
KPROF_EMBED_INJECT=0 maturin build --release --locked --strip --zig --compatibility "manylinux_${glibc//./_}" \
    --out "$out" >&2
ls "$out"/kprof-*.whl
