# Sourced by the GPU-machine scripts that run kprof's Python package (gpu-check-python.sh,
# gpu-check-ncu.sh, gpu-check-step8.sh, gpu-check-extra.sh, gpu-check-scaleout.sh): installs the wheel carried in
# .carry/wheels (built here by scripts/build-carry.sh) into a private folder, puts it on
# PYTHONPATH and sets PY to the machine's PyTorch Python; creates $OUT when it is set. Expects the
# repo root as the working folder; exits 2 when the wheel cannot be installed.
[ -z "${OUT:-}" ] || mkdir -p "$OUT"
PY="${PY:-/opt/torch/.venv/bin/python3}"
KPROF_SITE=/tmp/kprof-site
rm -rf "$KPROF_SITE"
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$KPROF_SITE" .carry/wheels/kprof-*.whl || exit 2
export PYTHONPATH="$KPROF_SITE${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
