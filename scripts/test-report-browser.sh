#!/usr/bin/env bash
# The headless-browser check of the HTML report, callable from CI: writes the test report
# (the kprof-plot test `report_written_for_browser_check`) and renders it in Chromium.
# Skips with a printed reason when Chromium cannot be installed.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test -q --locked -p kprof-plot --test png_and_report report_written_for_browser_check >/dev/null
exec scripts/report-screenshot.sh target/kprof-plot/report-test.html target/kprof-plot/report-test.png
