# Sourced by run.sh and client.sh: installs the suite with `npm ci` into
# node_modules when the lock file changed since the last install. Needs
# HERE (this folder) and LABEL (the caller's name for messages).
want=$(sha256sum "$HERE/package-lock.json" | cut -d' ' -f1)
if [ ! -x "$HERE/node_modules/.bin/node" ] || [ "$(cat "$HERE/node_modules/.lock.sha256" 2>/dev/null)" != "$want" ]; then
  echo "$LABEL: npm ci in $HERE"
  (cd "$HERE" && npm ci --no-audit --no-fund </dev/null) || { echo "$LABEL: npm ci failed" >&2; exit 1; }
  echo "$want" > "$HERE/node_modules/.lock.sha256"
fi
