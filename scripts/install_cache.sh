# Sourced by the install scripts of the tests (tests/upstreams/install.sh,
# tests/peers/install.sh, tests/conformance/install.sh): npm packages and
# Python venvs installed once per lock file, in a cache outside the checkout,
# and linked into it. A second checkout, or a second run of .ci/run on a
# fresh clone, finds them there and installs nothing.
#
#   cached_npm LABEL DIR             DIR/node_modules from DIR/package-lock.json
#   cached_venv LABEL VENV REQS      VENV from the pins in REQS
#
# An entry is named after a hash of what it is built from (the lock or pin
# file, and the node or python it runs on), so a changed pin makes a new
# one. An entry counts only once its install finished (.complete), and a
# lock file serializes two runs that want the same one. Entries of the
# same kind unused for ZEN_INSTALL_CACHE_DAYS days (7) are deleted.
#
# The cache: $ZEN_INSTALL_CACHE, else $XDG_CACHE_HOME/zenmode-test-installs,
# else ~/.cache/zenmode-test-installs (beside zenmode's own cache, not in it:
# the test command leaves a user's zenmode folders alone).
# ZEN_INSTALL_CACHE=off installs inside the checkout instead, as before.

install_cache_root() {
  if [ -n "${ZEN_INSTALL_CACHE:-}" ]; then
    echo "$ZEN_INSTALL_CACHE"
  else
    echo "${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/zenmode-test-installs"
  fi
}

# cache_entry KIND TEXT...: prints the entry's path for the hash of TEXT.
cache_entry() {
  local kind=$1 key
  shift
  key=$(printf '%s\n' "$@" | sha256sum | cut -c1-16)
  echo "$(install_cache_root)/$kind-$key"
}

# with_entry ENTRY BUILDER...: runs BUILDER ENTRY unless ENTRY is complete,
# under ENTRY.lock; a failed build leaves no entry behind.
with_entry() {
  local entry=$1 status=0
  shift
  mkdir -p "$(dirname "$entry")" || return 1
  (
    flock 9 || exit 1
    if [ ! -f "$entry/.complete" ]; then
      rm -rf "$entry"
      mkdir -p "$entry" || exit 1
      if ! "$@" "$entry"; then
        rm -rf "$entry"
        exit 1
      fi
      touch "$entry/.complete"
    fi
    touch "$entry"
  ) 9>"$entry.lock" || status=1
  prune_cache "$entry"
  return $status
}

# prune_cache ENTRY: deletes the other entries of ENTRY's kind that no run
# has used for ZEN_INSTALL_CACHE_DAYS days.
prune_cache() {
  local entry=$1 kind old
  kind=$(basename "$entry" | sed 's/-[0-9a-f]*$//')
  find "$(dirname "$entry")" -mindepth 1 -maxdepth 1 -type d -name "$kind-*" \
    -mtime +"${ZEN_INSTALL_CACHE_DAYS:-7}" 2>/dev/null | while read -r old; do
    [ "$old" = "$entry" ] && continue
    ( flock -n 9 && rm -rf "$old" && rm -f "$old.lock" ) 9>"$old.lock"
  done
}

# link_into LINK TARGET: LINK (a folder of an earlier install inside the
# checkout, a stale link, or nothing) becomes a link to TARGET.
link_into() {
  local link=$1 target=$2
  if [ -L "$link" ] || [ -e "$link" ]; then
    [ "$(readlink "$link")" = "$target" ] && return 0
    rm -rf "$link"
  fi
  ln -s "$target" "$link"
}

# cached_npm LABEL DIR [AFTER]: `npm ci` for DIR's package-lock.json; AFTER,
# if given, runs in the entry's folder once npm ci succeeded.
cached_npm() {
  local label=$1 dir=$2 after=${3:-} entry
  command -v node >/dev/null && command -v npm >/dev/null || {
    echo "$label: node and npm are needed" >&2
    return 1
  }
  if [ "${ZEN_INSTALL_CACHE:-}" = off ]; then
    local stamp="$dir/node_modules/.zenmode-lock.sha256" want
    want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    [ -L "$dir/node_modules" ] && rm -f "$dir/node_modules"
    if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
      echo "$label: npm ci in $dir"
      (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error </dev/null) || return 1
      if [ -n "$after" ]; then (cd "$dir" && eval "$after") || return 1; fi
      echo "$want" >"$stamp"
    fi
    return 0
  fi
  entry=$(cache_entry "$label-npm" "$(sha256sum <"$dir/package-lock.json")" \
    "$(sha256sum <"$dir/package.json")" "$(node --version)" "$(npm --version)")
  if [ ! -f "$entry/.complete" ]; then echo "$label: npm ci into $entry"; fi
  # shellcheck disable=SC2317  # called through with_entry
  build_npm() {
    cp "$dir/package.json" "$dir/package-lock.json" "$1/" || return 1
    (cd "$1" && npm ci --no-audit --no-fund --loglevel=error </dev/null) || return 1
    if [ -n "$after" ]; then (cd "$1" && eval "$after") || return 1; fi
  }
  with_entry "$entry" build_npm || { echo "$label: npm ci failed" >&2; return 1; }
  link_into "$dir/node_modules" "$entry/node_modules"
}

# cached_venv LABEL VENV REQS: a venv with `pip install -r REQS`.
cached_venv() {
  local label=$1 venv=$2 reqs=$3 python=${PYTHON:-python3} entry
  if [ "${ZEN_INSTALL_CACHE:-}" = off ]; then
    local want
    want=$(sha256sum "$reqs" | cut -d' ' -f1)
    [ -L "$venv" ] && rm -f "$venv"
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$venv/.zenmode-reqs.sha256" 2>/dev/null)" != "$want" ]; then
      echo "$label: creating $venv"
      rm -rf "$venv"
      "$python" -m venv "$venv" || return 1
      "$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$reqs" </dev/null || return 1
      echo "$want" >"$venv/.zenmode-reqs.sha256"
    fi
    return 0
  fi
  entry=$(cache_entry "$label-venv" "$(sha256sum <"$reqs")" \
    "$(command -v "$python")" "$("$python" -c 'import sys; print(sys.version)')")
  if [ ! -f "$entry/.complete" ]; then echo "$label: creating a venv in $entry"; fi
  # shellcheck disable=SC2317  # called through with_entry
  build_venv() {
    "$python" -m venv "$1" || return 1
    "$1/bin/pip" install --disable-pip-version-check --no-input -q -r "$reqs" </dev/null
  }
  with_entry "$entry" build_venv || { echo "$label: pip install -r $reqs failed" >&2; return 1; }
  link_into "$venv" "$entry"
}
