#!/usr/bin/env bash
# Renders a kprof HTML report in headless Chromium (Debian's `chromium` package, installed when
# missing) and checks it: the page loads with no console errors, the DOM has the summary table
# and as many <svg> elements as the file, and a screenshot is written.
#
#   scripts/report-screenshot.sh REPORT.html [OUT.png]     (OUT defaults to REPORT.png)
#   scripts/report-screenshot.sh --install-only            (installs Chromium when missing, no check)
#
# Exit 0 when the checks pass, or when Chromium cannot be installed (prints "SKIP: reason"; set
# KPROF_REQUIRE_CHROMIUM=1 to fail instead). Exit 1 when a check fails.
# KPROF_SCREENSHOT_SIZE=W,H sets the window (and screenshot) size; the default is 1400,2000.
set -uo pipefail

report="${1:?usage: $0 REPORT.html [OUT.png] | --install-only}"
install_only=0
if [ "$report" = --install-only ]; then
    install_only=1
else
    [ -f "$report" ] || { echo "report-screenshot: no such file: $report" >&2; exit 1; }
    report="$(cd "$(dirname "$report")" && pwd)/$(basename "$report")"
    out="${2:-${report%.html}.png}"
    case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
fi

skip() {
    if [ "${KPROF_REQUIRE_CHROMIUM:-0}" = 1 ]; then
        echo "report-screenshot: FAIL: $1" >&2
        exit 1
    fi
    echo "SKIP: $1"
    exit 0
}

if ! command -v chromium >/dev/null 2>&1; then
    echo "report-screenshot: installing Debian's chromium"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium; } >/tmp/kprof-chromium-install.log 2>&1; then
        skip "chromium could not be installed (see /tmp/kprof-chromium-install.log)"
    fi
fi
command -v chromium >/dev/null 2>&1 || skip "chromium is not on PATH after installing"
[ "$install_only" = 0 ] || exit 0

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
flags=(--headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run --no-default-browser-check
       --user-data-dir="$work/profile" --enable-logging=stderr --v=0)
url="file://$report"

passed=0; failed=0
check() { # check NAME CONDITION-RESULT(0/1) DETAIL
    if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok: $1"; else failed=$((failed + 1)); echo "FAIL: $1 ($3)"; fi
}

timeout 120 chromium "${flags[@]}" --virtual-time-budget=3000 --dump-dom "$url" >"$work/dom.html" 2>"$work/dom.log"
rc=$?
check "page loads (--dump-dom exit $rc)" "$([ $rc = 0 ] && [ -s "$work/dom.html" ]; echo $?)" "see $work/dom.log"
errors="$(grep -E 'CONSOLE.*(Uncaught|Error)|Uncaught ' "$work/dom.log" || true)"
check "no console errors" "$([ -z "$errors" ]; echo $?)" "$errors"
grep -q '<table class="kprof-summary sortable"' "$work/dom.html"
check "summary table in the DOM" "$?" "table.kprof-summary missing"
want=$(grep -o '<svg' "$report" | wc -l)
got=$(grep -o '<svg' "$work/dom.html" | wc -l)
check "one <svg> per plot ($got in the DOM, $want in the file)" "$([ "$got" -gt 0 ] && [ "$got" = "$want" ]; echo $?)" "count differs"

timeout 120 chromium "${flags[@]}" --screenshot="$out" --window-size="${KPROF_SCREENSHOT_SIZE:-1400,2000}" "$url" >"$work/shot.log" 2>&1
rc=$?
sig="$(head -c 8 "$out" 2>/dev/null | od -An -tx1 | tr -d ' \n')"
check "screenshot written to $out" "$([ $rc = 0 ] && [ "$sig" = 89504e470d0a1a0a ]; echo $?)" "exit $rc, signature '$sig'"

echo "report-screenshot: $passed passed, $failed failed"
[ "$failed" = 0 ]
