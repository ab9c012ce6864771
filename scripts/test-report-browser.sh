#!/usr/bin/env bash
# The headless-browser check of the HTML report, callable from CI. Renders two reports in
# Chromium (scripts/report-screenshot.sh: page loads, no console errors, summary table and every
# <svg> in the DOM, screenshot written):
#   1. the kprof-plot test report (the test `report_written_for_browser_check`: synthetic data
#      with every warning kind);
#   2. `kprof report` on the recorded H200 results in tests/fixtures/h200-python.
# Prints "N passed, N failed" over both. Skips with a printed reason when Chromium cannot be
# installed (KPROF_REQUIRE_CHROMIUM=1 makes that a failure).
set -euo pipefail
cd "$(dirname "$0")/.."
out=target/kprof-plot
mkdir -p "$out"
# With the workspace's features (as scripts/test.sh built them: nothing is compiled again).
cargo test -q --locked --workspace report_written_for_browser_check >/dev/null
cargo build -q --locked --workspace --bins
target/debug/kprof report \
    tests/fixtures/h200-python-tutorial-steps/sgemm-raw.csv tests/fixtures/h200-python-tutorial-steps/step5-tflops.csv \
    --title "kprof report: H200 recordings" -o "$out/report-h200.html"

passed=0; failed=0
for report in "$out/report-test.html" "$out/report-h200.html"; do
    set +e
    log="$(scripts/report-screenshot.sh "$report" "${report%.html}.png")"
    rc=$?
    set -e
    echo "$log"
    case "$log" in *"SKIP:"*) exit 0 ;; esac
    p=$(grep -c '^ok: ' <<<"$log" || true)
    f=$(grep -c '^FAIL: ' <<<"$log" || true)
    passed=$((passed + p)); failed=$((failed + f))
    [ "$rc" = 0 ] || [ "$f" -gt 0 ] || failed=$((failed + 1))
done
echo "test-report-browser: $passed passed, $failed failed"
[ "$failed" = 0 ]
