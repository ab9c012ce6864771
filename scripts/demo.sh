#!/usr/bin/env bash
# The README's first command: set up and run kprof's main job on this machine.
#
# - With an NVIDIA GPU and PyTorch: builds the wheel (scripts/build-wheel.sh), installs it into
#   target/demo-venv (seeing the system's site-packages, for torch) and profiles the matmul sweep of
#   examples/quickstart.py, printing the table.
# - Without a GPU: says that live profiling needs one, then runs the offline demo on a recorded H200
#   result (tests/fixtures/h200-python-tutorial-steps): the summary table, a plot
#   (target/demo/sweep.svg) and the self-contained HTML report (target/demo/report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/demo
mkdir -p "$OUT"

has_gpu() {
    command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 \
        && python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" >/dev/null 2>&1
}

if has_gpu; then
    echo "demo: a GPU and PyTorch are here: building the wheel and profiling examples/quickstart.py"
    wheel=$(scripts/build-wheel.sh | tail -n 1)
    python3 -m venv --system-site-packages target/demo-venv
    target/demo-venv/bin/python -m pip install -q --force-reinstall --no-deps "$wheel"
    target/demo-venv/bin/python examples/quickstart.py
    exit 0
fi

echo "demo: no usable NVIDIA GPU (with PyTorch) here: live profiling needs one (kprof doctor says what is"
echo "      missing). Running the offline demo on a result recorded on an H200 instead."
cargo build -q --locked -p kprof-cli
K=target/debug/kprof
REC=tests/fixtures/h200-python-tutorial-steps
"$K" summarize "$REC/sgemm-raw.csv" -o "$OUT/processed.csv"
"$K" show "$OUT/processed.csv"
"$K" plot "$OUT/processed.csv" --metric gpu__time_duration.sum --x n -o "$OUT/sweep.svg"
"$K" report "$REC/sgemm-raw.csv" "$REC/step5-tflops.csv" --title "kprof demo: H200 recordings" -o "$OUT/report.html"
echo "demo: wrote $OUT/processed.csv, $OUT/sweep.svg and $OUT/report.html (open it in a browser)"
