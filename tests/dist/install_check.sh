#!/usr/bin/env bash
# Installs a release's artifacts as a user without Rust would, and checks
# that they run: packs BINARY with scripts/dist.sh (no second compile),
# then, with no cargo or rustc on PATH and a throwaway HOME,
#
# - in a fresh virtual environment, `pip install zenmode` from the local
#   wheels (the binary's and the model's): `zenmode --version`, `zenmode
#   doctor` (the model found, installed with the binary), `zenmode select`
#   over a real catalog with the model, `zenmode setup claude-code` against
#   the throwaway HOME's Claude Code file;
# - in a fresh npm prefix, the two npm tarballs: `npx zenmode --version`
#   and `zenmode model show` (no model: it says how to add one).
#
# Prints each install's wall time and the artifacts' sizes.
#
#   bash tests/dist/install_check.sh BINARY MODEL_DIR [CLAUDE]
#
# MODEL_DIR: the model fetched already (scripts/embedding/fetch_model.sh).
# CLAUDE: a `claude` command for the setup check (.ci/run passes the one the
# peer installs bring); without it that check is skipped, said on stderr.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
binary=$(realpath "${1:?usage: install_check.sh BINARY MODEL_DIR [CLAUDE]}")
model_dir=$(realpath "${2:?usage: install_check.sh BINARY MODEL_DIR [CLAUDE]}")
claude=${3:-}
[ -z "$claude" ] || claude=$(realpath "$claude")
catalog="$repo/../shared/catalogs/filesystem.json"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
seconds() { python3 -c 'import sys, time; print(f"{time.time() - float(sys.argv[1]):.1f}")' "$1"; }

bash "$repo/scripts/dist.sh" --binary "$binary" --model-dir "$model_dir" --out "$work/dist" --no-crates

# PATH without Rust: every folder that holds cargo or rustc is left out.
clean_path=""
IFS=: read -r -a folders <<<"$PATH"
for folder in "${folders[@]}"; do
  [ -n "$folder" ] || continue
  if [ -e "$folder/cargo" ] || [ -e "$folder/rustc" ]; then continue; fi
  clean_path="${clean_path:+$clean_path:}$folder"
done
if [ -n "$claude" ]; then
  mkdir -p "$work/claude-bin"
  ln -s "$claude" "$work/claude-bin/claude"
fi

# A user's shell: throwaway HOME and XDG folders, no Rust.
as_user() {
  env -u ZEN_CONFIG_DIR -u ZEN_CACHE_DIR -u ZEN_STATE_DIR -u ZEN_EMBEDDING_MODEL -u ZEN_UPSTREAMS \
    HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_DATA_HOME="$work/home/.local/share" \
    XDG_CACHE_HOME="$work/home/.cache" XDG_STATE_HOME="$work/home/.local/state" \
    PATH="$1:$work/claude-bin:$clean_path" "${@:2}"
}
mkdir -p "$work/home"
as_user /nonexistent sh -c '! command -v cargo && ! command -v rustc' >/dev/null \
  || fail "cargo or rustc is still on the PATH the install runs with"

# --- the wheel ---------------------------------------------------------------
python3 -m venv "$work/venv"
venv_bin="$work/venv/bin"
started=$(python3 -c 'import time; print(time.time())')
as_user "$venv_bin" pip install --quiet --no-index --find-links "$work/dist" zenmode
installed=$(seconds "$started")
version=$(as_user "$venv_bin" zenmode --version)
[ "$(command -v "$venv_bin/zenmode")" = "$venv_bin/zenmode" ] || fail "the wheel put no zenmode in the venv's bin"
echo "wheel: zenmode --version: $version"
case "$version" in "zenmode "*" ("*")") ;; *) fail "--version says $version" ;; esac

doctor=$(as_user "$venv_bin" zenmode doctor 2>&1) || true
grep -q "embedding model: .*installed with the binary" <<<"$doctor" \
  || fail "doctor did not find the model the wheel installed: $doctor"

selected=$(as_user "$venv_bin" zenmode select "show me what is in the folder /tmp/notes" --catalog "$catalog" --json)
first_select=$(seconds "$started")
python3 - "$selected" <<'PY' || fail "select over the catalog with the model: $selected"
import json, sys
reply = json.loads(sys.argv[1])
text = json.dumps(reply)
assert "list_directory" in text or "directory_tree" in text, text[:400]
PY
echo "wheel: install ${installed} s, install and first select ${first_select} s"

if [ -n "$claude" ]; then
  as_user "$venv_bin" zenmode setup claude-code >/dev/null
  as_user "$venv_bin" claude mcp get zenmode | grep -q "$venv_bin/zenmode" \
    || fail "setup claude-code did not register the wheel's binary"
  echo "wheel: setup claude-code registered $venv_bin/zenmode"
else
  echo "wheel: no claude command given; setup claude-code not checked" >&2
fi

# --- the npm packages ----------------------------------------------------------
prefix="$work/npm"
mkdir -p "$prefix"
started=$(python3 -c 'import time; print(time.time())')
# --offline: the platform package comes from its tarball, not the registry
# (where an unpublished version would be looked up).
as_user /nonexistent npm install --offline --silent --no-audit --no-fund --prefix "$prefix" \
  "$work"/dist/zenmode-linux-*.tgz "$work"/dist/zenmode-[0-9]*.tgz
installed=$(seconds "$started")
npx_version=$(cd "$prefix" && as_user /nonexistent npx --no-install zenmode --version)
[ "$npx_version" = "$version" ] || fail "npx zenmode --version says $npx_version, the wheel's $version"
shown=$(cd "$prefix" && as_user /nonexistent npx --no-install zenmode model show 2>&1) && fail "model show found a model: $shown"
grep -q "zenmode model install" <<<"$shown" || fail "without a model, model show does not say how to add it: $shown"
echo "npm: install ${installed} s; npx zenmode --version: $npx_version"

echo "artifacts:"
(cd "$work/dist" && for file in *; do printf '  %8s KiB  %s\n' "$(( $(stat -c %s "$file") / 1024 ))" "$file"; done)
echo "install check: ok"
