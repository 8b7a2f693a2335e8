#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance,
# server side) against `zenmode serve --transport http`.
#
#   tests/conformance/run.sh        (ZENMODE_BIN: the binary to test)
#
# Installs the suite with npm ci on first use (it needs Node 22, which the
# npm package `node` provides). Failures listed in expected-failures.yml are
# by design; any other failure, or a listed one that now passes, fails the
# run. Prints `conformance: N passed, M failed (all expected)`.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
BIN="${ZENMODE_BIN:-$REPO/target/release/zenmode}"
[ -x "$BIN" ] || { echo "conformance: $BIN is not an executable file" >&2; exit 1; }

LABEL="conformance"
# shellcheck source=install.sh
. "$HERE/install.sh"

LOG=$(mktemp -d)
trap 'kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null; rm -rf "$LOG"' EXIT
"$BIN" serve --transport http --listen 127.0.0.1:0 </dev/null >/dev/null 2>"$LOG/server.err" &
SERVER=$!
ADDRESS=""
for _ in $(seq 100); do
  ADDRESS=$(sed -n 's/^zenmode: listening on //p' "$LOG/server.err" | head -1)
  [ -n "$ADDRESS" ] && break
  kill -0 "$SERVER" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ADDRESS" ] || { echo "conformance: the server announced no address" >&2; cat "$LOG/server.err" >&2; exit 1; }
URL="http://$ADDRESS/mcp"
echo "conformance: suite $(cd "$HERE" && node_modules/.bin/node -p 'require("@modelcontextprotocol/conformance/package.json").version') against $URL"

(cd "$LOG" && timeout 900 "$HERE/node_modules/.bin/node" "$HERE/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
  server --url "$URL" --expected-failures "$HERE/expected-failures.yml") >"$LOG/suite.out" 2>&1
status=$?
sed -n '/=== SUMMARY ===/,$p' "$LOG/suite.out"
total=$(sed -n 's/^Total: \([0-9]*\) passed, \([0-9]*\) failed.*/\1 \2/p' "$LOG/suite.out" | tail -1)
if [ $status -ne 0 ] || [ -z "$total" ]; then
  [ -n "$total" ] || tail -40 "$LOG/suite.out"
  echo "conformance: failed (exit $status): see the unexpected failures above"
  exit 1
fi
read -r passed failed <<<"$total"
echo "conformance: $passed passed, $failed failed (all expected; see expected-failures.yml)"
