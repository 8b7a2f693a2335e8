#!/usr/bin/env bash
# Installs what the peer tests (run.sh) and the session benchmark need: the
# MCP Python SDK in tests/peers/.venv (requirements.txt) and the npm peers in
# tests/peers/node_modules (package-lock.json: the TypeScript SDKs, the
# Inspector CLI, Claude Code). Each is installed once per pin file into a
# cache outside the checkout and linked here (scripts/install_cache.sh).
#
#   tests/peers/install.sh [--python-only]
#
# Needs python3 >= 3.10, node >= 20 and npm.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/install_cache.sh
. "$HERE/../../scripts/install_cache.sh"

"${PYTHON:-python3}" -c 'import sys; sys.exit(sys.version_info < (3, 10))' || {
  echo "peers: ${PYTHON:-python3} is older than 3.10; the MCP Python SDK needs 3.10+ (set PYTHON=...)" >&2
  exit 1
}
cached_venv peers "$HERE/.venv" "$HERE/requirements.txt"
[ "${1:-}" = --python-only ] && exit 0

# Claude Code's postinstall puts its platform binary in place; npm can skip
# it (ignore-scripts), so run it again if the binary does not answer.
# --loglevel=error (in cached_npm): the Inspector and Claude Code declare
# node >= 22 but run on 20 (EBADENGINE warnings).
claude_binary='node_modules/.bin/claude --version >/dev/null 2>&1 </dev/null || (cd node_modules/@anthropic-ai/claude-code && node install.cjs </dev/null)'
cached_npm peers "$HERE" "$claude_binary"
"$HERE/node_modules/.bin/claude" --version </dev/null >/dev/null 2>&1 || {
  echo "peers: Claude Code's native binary does not run (node_modules/.bin/claude --version)" >&2
  exit 1
}
echo "peers: ready (MCP Python SDK, $(ls "$HERE/node_modules/.bin" | wc -l) npm commands)"
