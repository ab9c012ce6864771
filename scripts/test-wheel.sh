#!/usr/bin/env bash
# Checks a built wheel as a user gets it (the manylinux wheel's acceptance), without a GPU:
#   1. `auditwheel show` reports manylinux_2_28 or older, and the wheel carries kprof/lib/libkprof_inject.so;
#   2. it installs into a fresh venv (Python 3.10 when there is one: the wheel is abi3 for >= 3.10),
#      and there, with a PATH that has no cargo and no KPROF_* variable:
#      `kprof doctor` reports the injection library found (it may exit non-zero for the missing GPU:
#      the line is checked), `kprof --version`, `kprof run --help`, `kprof summarize` on an H200
#      fixture and `python -c "import kprof"` work.
# Prints "test-wheel: N passed, N failed"; exits non-zero on a failure.
# Usage: scripts/test-wheel.sh [WHEEL]   (default: the one in target/wheels)
set -euo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"
wheel=${1:-$(ls target/wheels/kprof-*.whl | head -1)}
tools=target/wheel-build-venv/bin
passed=0; failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }

show=$("$tools/auditwheel" show "$wheel" 2>&1 || true)
echo "$show"
tag=$(tr '\n' ' ' <<<"$show" | grep -oE 'platform tag: *"[a-z0-9_]+"' | grep -oE '"[^"]+"' | tr -d '"' || true)
minor=$(grep -oE '^manylinux_2_[0-9]+' <<<"$tag" | grep -oE '[0-9]+$' || true)
if [[ "$tag" =~ ^manylinux(1|2010|2014)_ ]] || { [ -n "$minor" ] && [ "$minor" -le 28 ]; }; then
    ok "auditwheel: $tag (glibc >= 2.${minor:-17})"
else
    fail "auditwheel: platform tag '${tag:-none}' is newer than manylinux_2_28 or missing"
fi
listing=$(python3 -m zipfile -l "$wheel")   # whole, then grep: `| grep -q` would break the pipe
if grep -q 'kprof/lib/libkprof_inject.so' <<<"$listing"; then
    ok "the wheel carries kprof/lib/libkprof_inject.so"
else
    fail "the wheel has no kprof/lib/libkprof_inject.so"
fi

py=python3
for cand in python3.10 "$HOME"/.pyenv/versions/3.10*/bin/python3.10; do
    if "$cand" -c 'import sys; assert sys.version_info[:2] == (3, 10)' >/dev/null 2>&1; then py=$cand; break; fi
done
venv="$repo/target/wheel-smoke-venv"
rm -rf "$venv"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q "$wheel"
echo "wheel installed into a fresh venv with $("$venv/bin/python" --version)"

work=$(mktemp -d)
# A user's shell: the venv's bin and the system's, nothing of the build (no cargo, no KPROF_*).
clean() { (cd "$work" && env -i HOME="$HOME" LANG=C.UTF-8 PATH="$venv/bin:/usr/local/bin:/usr/bin:/bin" "$@"); }
if clean bash -c 'command -v cargo' >/dev/null; then
    fail "the clean PATH still has cargo: $(clean bash -c 'command -v cargo')"
else
    ok "no cargo on the clean PATH"
fi
doctor=$(clean kprof doctor 2>&1 || true)
if grep -qE "kprof run: injection library .*/site-packages/kprof/lib/libkprof_inject\.so" <<<"$doctor"; then
    ok "kprof doctor: $(grep -oE 'kprof run: injection library .*' <<<"$doctor")"
else
    fail "kprof doctor does not report the packaged injection library:"; echo "$doctor"
fi
version=$(clean python -c 'import kprof; print(kprof.__version__)' 2>&1) && ok "import kprof ($version)" \
    || fail "import kprof: $version"
out=$(clean kprof --version 2>&1) && [ "$out" = "kprof $version" ] && ok "kprof --version: $out" \
    || fail "kprof --version: $out (want kprof $version)"
out=$(clean kprof run --help 2>&1) && grep -q -- '--metrics' <<<"$out" && ok "kprof run --help" \
    || fail "kprof run --help: $out"
out=$(clean kprof summarize "$repo/tests/fixtures/h200-python-tutorial-steps/sgemm-raw.csv" 2>&1) \
    && grep -q 'gpu__time_duration' <<<"$out" && ok "kprof summarize tests/fixtures/h200-python-tutorial-steps/sgemm-raw.csv" \
    || fail "kprof summarize: $out"
rm -rf "$work"
echo "test-wheel: $passed passed, $failed failed"
[ "$failed" = 0 ]
