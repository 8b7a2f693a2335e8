# Sourced by .ci/run (the test command): every process it starts runs under a
# HOME and XDG directories of its own, so the tests neither see nor change
# the configuration, cache or state of a zenmode the user has set up (their
# upstreams file, Claude Code's ~/.claude.json, threads, tokens, catalogs),
# and pass the same on a machine where zenmode is in use.
#
#   test_home_enter DIR    empties DIR, and makes it HOME for what follows
#
# Before it switches, it pins the homes of the tools that must keep working
# (rustup, cargo's registry and bin, pyenv) and of the caches that only make
# installs faster (npm, pip, the test command's own install cache), and it
# unsets every ZEN_ setting and CLAUDE_CONFIG_DIR of the caller: the test
# command sets the ones it needs itself. tests/test_home.rs checks it.

test_home_enter() {
  local root=$1 name
  [ -n "$root" ] || { echo "test_home_enter: no folder given" >&2; return 1; }
  local real_home=${HOME:-/nonexistent}
  export RUSTUP_HOME="${RUSTUP_HOME:-$real_home/.rustup}"
  export CARGO_HOME="${CARGO_HOME:-$real_home/.cargo}"
  if [ -z "${PYENV_ROOT:-}" ] && [ -d "$real_home/.pyenv" ]; then
    export PYENV_ROOT="$real_home/.pyenv"
  fi
  local caches="${XDG_CACHE_HOME:-$real_home/.cache}"
  # Where scripts/install_cache.sh (sourced first) keeps its entries, fixed
  # before HOME moves.
  ZEN_INSTALL_CACHE=$(install_cache_root)
  export ZEN_INSTALL_CACHE
  export npm_config_cache="${npm_config_cache:-$real_home/.npm}"
  export PIP_CACHE_DIR="${PIP_CACHE_DIR:-$caches/pip}"
  for name in $(compgen -e); do
    case $name in
      ZEN_INSTALL_CACHE | ZEN_INSTALL_CACHE_DAYS) ;;
      ZEN_* | CLAUDE_CONFIG_DIR | XDG_*) unset "$name" ;;
    esac
  done
  rm -rf "$root"
  mkdir -p "$root/.config" "$root/.local/state" "$root/.cache" "$root/.local/share" || return 1
  export HOME="$root"
  export XDG_CONFIG_HOME="$root/.config" XDG_STATE_HOME="$root/.local/state"
  export XDG_CACHE_HOME="$root/.cache" XDG_DATA_HOME="$root/.local/share"
  # Marks the switch, for the test that checks the suite runs under it.
  export ZEN_TEST_HOME="$root"
}
