"""Two zenmode binaries side by side (docs/decisions/0019): file size, the
median start (a stdio `serve` answering `initialize`) and the median
one-shot `select` over the 1,155-tool union catalog, alternating the two
binaries run by run so that the machine's drift falls on both.

    python3 scripts/dist/compare_builds.py target/release/zenmode target/dist/zenmode [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT.parent / "shared/catalogs/union_all.json"
TASK = "list the open pull requests of zenmode/zenmode that need a review"
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "compare", "version": "1"}}}) + "\n"


def start_seconds(binary: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    server = subprocess.Popen([str(binary), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env)
    assert server.stdin and server.stdout
    server.stdin.write(INITIALIZE.encode())
    server.stdin.flush()
    server.stdout.readline()
    took = time.perf_counter() - began
    server.stdin.close()
    server.wait(timeout=10)
    return took


def select_seconds(binary: Path, env: dict[str, str]) -> float:
    began = time.perf_counter()
    subprocess.run([str(binary), "select", TASK, "--catalog", str(CATALOG), "--json"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("binaries", type=Path, nargs=2)
    parser.add_argument("--runs", type=int, default=21)
    options = parser.parse_args()
    home = tempfile.mkdtemp(prefix="zenmode-compare-")
    # The model, where the user's install put it, unless the caller names one.
    env = {**os.environ, "HOME": home, "ZEN_CONFIG_DIR": f"{home}/config", "ZEN_CACHE_DIR": f"{home}/cache",
           "ZEN_STATE_DIR": f"{home}/state"}
    figures = {binary: {"start": [], "select": []} for binary in options.binaries}
    for binary in options.binaries:  # warm the page cache and the catalog cache
        select_seconds(binary, env)
    for _ in range(options.runs):
        for binary in options.binaries:
            figures[binary]["start"].append(start_seconds(binary, env))
            figures[binary]["select"].append(select_seconds(binary, env))
    print("| binary | size | start (initialize answered), median | one-shot select over 1,155 tools, median |")
    print("|---|---|---|---|")
    for binary in options.binaries:
        size = binary.stat().st_size / 1e6
        start = statistics.median(figures[binary]["start"]) * 1000
        select = statistics.median(figures[binary]["select"]) * 1000
        print(f"| {binary} | {size:.1f} MB | {start:.1f} ms | {select:.1f} ms |")


if __name__ == "__main__":
    main()
