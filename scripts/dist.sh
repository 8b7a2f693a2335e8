#!/usr/bin/env bash
# Builds a release's artifacts into dist/ (docs/releasing.md says how a
# release is cut):
#
#   zenmode-VERSION-py3-none-manylinux_2_N_ARCH.whl   the binary, for pip/uv/pipx
#   zenmode_model-MODELVERSION-py3-none-any.whl        the embedding model, its dependency
#   zenmode-linux-ARCH-VERSION.tgz, zenmode-VERSION.tgz  the npm packages (npx -y zenmode)
#   zenmode-VERSION.crate, zenmode-bert-VERSION.crate  the crates (cargo package)
#
#   bash scripts/dist.sh                      # compiles with the dist profile first
#   bash scripts/dist.sh --binary PATH        # packs a binary already built
#   bash scripts/dist.sh --out DIR            # another folder than dist/
#   bash scripts/dist.sh --model-dir DIR      # the model fetched already (else fetched, checked by hash)
#   bash scripts/dist.sh --no-crates          # skip the crates
#
# The binary is Linux's (manylinux wheel, linux npm package) for the
# machine's architecture. Other platforms are built on them with the same
# script: an aarch64 Linux machine gives manylinux_2_N_aarch64 and
# zenmode-linux-arm64; macOS and Windows need their own tags (macosx_11_0_arm64,
# win_amd64) and npm names (darwin-arm64, win32-x64), which wheels.py and
# npm.py do not write yet.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

binary="" out="$ROOT/dist" model_dir="" crates=1
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$(realpath "${2:?--binary needs a path}"); shift 2 ;;
    --out) out=$(realpath -m "${2:?--out needs a folder}"); shift 2 ;;
    --model-dir) model_dir=$(realpath "${2:?--model-dir needs a folder}"); shift 2 ;;
    --no-crates) crates=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

version=$(python3 -c 'import tomllib; print(tomllib.load(open("Cargo.toml", "rb"))["package"]["version"])')
if [ -z "$binary" ]; then
  cargo build --locked --profile dist --bin zenmode >&2
  binary=$(cargo metadata --locked --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')/dist/zenmode
fi
[ -x "$binary" ] || { echo "error: $binary is not an executable" >&2; exit 1; }

mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -z "$model_dir" ]; then
  model_dir=$(bash scripts/embedding/fetch_model.sh "$work/model" | tail -n 1)
fi

python3 scripts/dist/wheels.py --binary "$binary" --model-dir "$model_dir" --version "$version" --out "$out" >/dev/null

python3 scripts/dist/npm.py --binary "$binary" --version "$version" --out "$work/npm" >/dev/null
for package in "$work"/npm/zenmode-linux-* "$work/npm/zenmode"; do
  (cd "$package" && npm pack --silent --pack-destination "$out" >/dev/null)
done

if [ "$crates" = 1 ]; then
  # Packaged, not compiled: `cargo publish --dry-run` compiles both crates
  # again from the packages (docs/releasing.md).
  cargo package --locked --no-verify --allow-dirty --workspace >&2
  target=$(cargo metadata --locked --format-version 1 --no-deps \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')
  cp "$target/package/zenmode-$version.crate" "$target"/package/zenmode-bert-*.crate "$out/"
fi

echo "artifacts in $out:"
for file in "$out"/*.whl "$out"/*.tgz "$out"/*.crate; do
  [ -e "$file" ] && printf '  %8s KiB  %s\n' "$(( $(stat -c %s "$file") / 1024 ))" "${file##*/}"
done
exit 0
