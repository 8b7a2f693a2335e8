"""The npm packages of a zenmode release, in the pattern esbuild and biome
use (scripts/dist.sh calls this, then packs each folder with `npm pack`):

- zenmode-PLATFORM-ARCH (here linux-x64): the binary, with `os` and `cpu`
  so that npm installs it only where it runs;
- zenmode: the `zenmode` command (npm/zenmode.js), which runs the binary
  of the platform package npm installed beside it as an optional
  dependency. `npx -y zenmode` is this.

The model does not come through npm: `zenmode model install` fetches it.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# Node's names for the ELF machines wheels.py reads.
NODE_ARCH = {0x3E: "x64", 0xB7: "arm64"}


def node_arch(binary: Path) -> str:
    head = binary.read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        raise SystemExit(f"error: {binary} is not an ELF binary")
    return NODE_ARCH[int.from_bytes(head[18:20], "little")]


def write(folder: Path, manifest: dict, files: dict[str, Path | str]) -> None:
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for name, source in files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(source, Path):
            shutil.copyfile(source, target)
            shutil.copymode(source, target)
        else:
            target.write_text(source)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", type=Path, required=True, help="a folder for the two package folders")
    options = parser.parse_args()
    platform = f"linux-{node_arch(options.binary)}"
    platform_name = f"zenmode-{platform}"
    common = {"version": options.version, "license": "MIT"}
    readme = (ROOT / "scripts/dist/npm/README.md").read_text()
    write(options.out / platform_name,
          {"name": platform_name, **common,
           "description": f"The zenmode binary for {platform}; install `zenmode`, which uses it",
           "os": ["linux"], "cpu": [platform.split("-")[1]], "libc": ["glibc"],
           "files": ["bin/zenmode"], "preferUnplugged": True},
          {"bin/zenmode": options.binary, "README.md": readme, "LICENSE": ROOT / "LICENSE"})
    write(options.out / "zenmode",
          {"name": "zenmode", **common,
           "description": "A two-tool MCP server and gateway: zen_select_mode recommends a tool, zen_execute runs it",
           "bin": {"zenmode": "bin/zenmode.js"}, "files": ["bin/zenmode.js"],
           "engines": {"node": ">=18"},
           "optionalDependencies": {platform_name: options.version}},
          {"bin/zenmode.js": HERE / "npm/zenmode.js", "README.md": readme, "LICENSE": ROOT / "LICENSE"})
    (options.out / "zenmode/bin/zenmode.js").chmod(0o755)
    print(options.out / platform_name)
    print(options.out / "zenmode")


if __name__ == "__main__":
    main()
