#!/usr/bin/env bash
# Installs the real MCP servers the gateway tests put behind zenmode:
# npm packages into tests/upstreams/node_modules (package-lock.json) and
# PyPI packages into tests/upstreams/.venv (requirements.txt). Each is
# reinstalled only when its pin file changes. Needs node/npm and python3.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
hash_of() { sha256sum "$1" | cut -d' ' -f1; }

want=$(hash_of "$HERE/package-lock.json")
if [ "$(cat "$HERE/node_modules/.zenmode.sha256" 2>/dev/null)" != "$want" ]; then
  echo "upstreams: npm ci in $HERE"
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error </dev/null)
  echo "$want" > "$HERE/node_modules/.zenmode.sha256"
fi

want=$(hash_of "$HERE/requirements.txt")
if [ ! -x "$HERE/.venv/bin/python" ] || [ "$(cat "$HERE/.venv/.zenmode.sha256" 2>/dev/null)" != "$want" ]; then
  echo "upstreams: creating $HERE/.venv"
  rm -rf "$HERE/.venv"
  "${PYTHON:-python3}" -m venv "$HERE/.venv"
  "$HERE/.venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$HERE/requirements.txt" </dev/null
  echo "$want" > "$HERE/.venv/.zenmode.sha256"
fi
echo "upstreams: ready ($(ls "$HERE/node_modules/.bin" | grep -c '^mcp-server') npm servers, $(ls "$HERE/.venv/bin" | grep -c '^mcp-server') PyPI servers)"
