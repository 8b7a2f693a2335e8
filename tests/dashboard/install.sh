#!/usr/bin/env bash
# Installs what the dashboard's browser test (run.sh) needs: Debian's
# Chromium (headless, driven over the DevTools protocol) and playwright-core
# from npm (tests/dashboard/package-lock.json), cached outside the checkout
# (scripts/install_cache.sh).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../../scripts/install_cache.sh
. "$HERE/../../scripts/install_cache.sh"

# The lock timeout: .ci/run installs redis-server with apt at the same time.
if ! command -v chromium >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo -n"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends chromium \
    || { $sudo apt-get -o DPkg::Lock::Timeout=600 update -qq && $sudo apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends chromium; }
fi
chromium --version
cached_npm dashboard "$HERE"
echo "dashboard: ready (playwright-core, $(chromium --version))"
