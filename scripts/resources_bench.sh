#!/usr/bin/env bash
# The cost of forwarding resources and prompts: median latency of a
# `resources/read` and of a `prompts/get` through zenmode's gateway against
# server-everything directly, the same Python SDK client, one run.
# Usage: scripts/resources_bench.sh [COUNT] (default 200). Uses
# target/release/zenmode if built, else target/debug/zenmode (ZENMODE_BIN
# overrides); needs tests/upstreams/install.sh.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
COUNT=${1:-200}
BIN=${ZENMODE_BIN:-$REPO/target/release/zenmode}
[ -x "$BIN" ] || BIN=$REPO/target/debug/zenmode
EVERYTHING=$REPO/tests/upstreams/node_modules/.bin/mcp-server-everything
PY=$REPO/tests/upstreams/.venv/bin/python
[ -x "$EVERYTHING" ] && [ -x "$PY" ] || { echo "run tests/upstreams/install.sh first" >&2; exit 1; }
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
printf '{"mcpServers": {"everything": {"command": "%s"}}}\n' "$EVERYTHING" > "$DIR/upstreams.json"
cat > "$DIR/zenmode.sh" <<SH
#!/bin/sh
export ZEN_UPSTREAMS='$DIR/upstreams.json' ZEN_CACHE_DIR='$DIR/cache' ZEN_STATE_DIR='$DIR/state' RUST_LOG=warn
exec '$BIN' serve 2>>'$DIR/zenmode.log'
SH
chmod +x "$DIR/zenmode.sh"
echo "zenmode: $BIN" >&2
"$PY" "$REPO/tests/peers/resources_check.py" compare "$COUNT" "$DIR/zenmode.sh" "$EVERYTHING"
