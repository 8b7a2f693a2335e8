#!/usr/bin/env bash
# The dashboard in a real browser: tests/dashboard/browser_check.mjs drives
# headless Chromium against a shared instance with a running server, a
# failing one and a quarantined tool. Screenshots go to $SCREENSHOTS
# (default target/dashboard-screenshots).
#
#   ZENMODE_BIN=target/ci/zenmode bash tests/dashboard/run.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
export ZENMODE_BIN=${ZENMODE_BIN:-$ROOT/target/debug/zenmode}
export SCREENSHOTS=${SCREENSHOTS:-$ROOT/target/dashboard-screenshots}
export FAULT_SERVER="$ROOT/tests/upstreams/fault_server.py"
export CHROMIUM=${CHROMIUM:-$(command -v chromium)}
[ -d "$HERE/node_modules/playwright-core" ] || bash "$HERE/install.sh"
node "$HERE/browser_check.mjs"
