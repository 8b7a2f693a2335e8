#!/usr/bin/env bash
# Installs the official MCP conformance suite (package-lock.json, with the
# npm package `node` for Node 22) into tests/conformance/node_modules, once
# per lock file, through the cache of scripts/install_cache.sh. Run on its
# own, or sourced by run.sh and client.sh (which set LABEL).
_conformance_install() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  # shellcheck source=../../scripts/install_cache.sh
  . "$here/../../scripts/install_cache.sh"
  cached_npm conformance "$here" || return 1
  [ -x "$here/node_modules/.bin/node" ] || {
    echo "${LABEL:-conformance}: $here/node_modules/.bin/node is missing after the install" >&2
    return 1
  }
}
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  _conformance_install
else
  _conformance_install || { echo "${LABEL:-conformance}: installing the suite failed" >&2; exit 1; }
fi
