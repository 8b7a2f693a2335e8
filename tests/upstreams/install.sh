#!/usr/bin/env bash
# Installs the real MCP servers the gateway tests put behind zenmode: the
# npm packages of package-lock.json (tests/upstreams/node_modules) and the
# PyPI packages of requirements.txt (tests/upstreams/.venv). Both are
# installed once per pin file into a cache outside the checkout and linked
# here (scripts/install_cache.sh). Needs node/npm and python3.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/install_cache.sh
. "$HERE/../../scripts/install_cache.sh"

cached_npm upstreams "$HERE"
cached_venv upstreams "$HERE/.venv" "$HERE/requirements.txt"
echo "upstreams: ready ($(ls "$HERE/node_modules/.bin" | grep -c '^mcp-server') npm servers, $(ls "$HERE/.venv/bin" | grep -c '^mcp-server') PyPI servers)"
