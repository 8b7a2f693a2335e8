#!/usr/bin/env python3
"""Processes and memory of three clients with ten upstream servers: each
client with a zenmode of its own (`zenmode serve`, as before) against all
three on the shared instance (`zenmode connect`).

The ten servers are the real ones the gateway tests install
(tests/upstreams/install.sh): everything, filesystem and memory from npm;
fetch, git and time from PyPI; and second copies of filesystem, memory, git
and time with other settings, as a user with two projects would have. Every
entry starts eagerly, so each zenmode runs every server; each client then
asks one select, so each zenmode has its selection index built.

Memory is counted over every process of each setup (the zenmode processes,
their guards and the servers): resident (RSS) and proportional (PSS, which
splits shared pages between the processes sharing them).

    python3 scripts/shared_bench.py [--bin target/release/zenmode] [--model DIR]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UPSTREAMS = ROOT / "tests" / "upstreams"


def servers(work: Path) -> dict:
    npm = UPSTREAMS / "node_modules" / ".bin"
    venv = UPSTREAMS / ".venv" / "bin"
    for name in ("one", "two"):
        (work / name).mkdir(exist_ok=True)
        subprocess.run(["git", "init", "-q", str(work / name)], check=True)
    eager = {"startup": "eager"}
    return {
        "everything": {"command": str(npm / "mcp-server-everything"), **eager},
        "files": {"command": str(npm / "mcp-server-filesystem"), "args": [str(work / "one")], **eager},
        "files2": {"command": str(npm / "mcp-server-filesystem"), "args": [str(work / "two")], **eager},
        "memory": {"command": str(npm / "mcp-server-memory"),
                   "env": {"MEMORY_FILE_PATH": str(work / "memory.json")}, **eager},
        "memory2": {"command": str(npm / "mcp-server-memory"),
                    "env": {"MEMORY_FILE_PATH": str(work / "memory2.json")}, **eager},
        "fetch": {"command": str(venv / "mcp-server-fetch"), **eager},
        "git": {"command": str(venv / "mcp-server-git"), "args": ["--repository", str(work / "one")], **eager},
        "git2": {"command": str(venv / "mcp-server-git"), "args": ["--repository", str(work / "two")], **eager},
        "time": {"command": str(venv / "mcp-server-time"), **eager},
        "time2": {"command": str(venv / "mcp-server-time"), "args": ["--local-timezone", "Europe/Paris"], **eager},
    }


def children() -> dict:
    """pid -> parent pid, for every process."""
    tree = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        tree[int(entry)] = int(fields[1])
    return tree


def descendants(roots: list) -> set:
    tree = children()
    found = set(pid for pid in roots if pid in tree)
    grew = True
    while grew:
        grew = False
        for pid, parent in tree.items():
            if parent in found and pid not in found:
                found.add(pid)
                grew = True
    return found


def memory(pids: set) -> tuple:
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
        except OSError:
            pass
    return rss / 1024, pss / 1024


class Client:
    def __init__(self, args, env, name):
        self.process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, env=env, text=True, bufsize=1)
        self.next = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": name, "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def request(self, method, params):
        self.next += 1
        self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise SystemExit(f"{method}: the client's zenmode ended")
            message = json.loads(line)
            if message.get("id") == self.next:
                return message

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def settle(roots: list, want: int, limit: float = 90) -> set:
    """Waits until the processes under `roots` hold `want` servers' worth
    and stop changing for two seconds."""
    started = time.monotonic()
    last, since = None, time.monotonic()
    while time.monotonic() - started < limit:
        now = descendants(roots)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 2 and len(now) >= want:
            return now
        time.sleep(0.2)
    return last


def measure(kind: str, binary: str, env: dict) -> dict:
    started = time.monotonic()
    if kind == "separate":
        clients = [Client([binary, "serve"], env, f"client-{n}") for n in range(3)]
        roots = [client.process.pid for client in clients]
    else:
        clients = [Client([binary, "connect", "--idle-stop-secs", "30"], env, f"client-{n}") for n in range(3)]
        record = json.loads((Path(env["ZEN_STATE_DIR"]) / "shared" / "instance.json").read_text())
        roots = [client.process.pid for client in clients] + [record["pid"]]
    for client in clients:
        reply = client.request("tools/call", {"name": "zen_select_mode",
                                              "arguments": {"task_description": "what time is it in Tokyo"}})
        assert "result" in reply, reply
    pids = settle(roots, want=len(roots) + 10)
    rss, pss = memory(pids)
    names = {}
    for pid in pids:
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
        except OSError:
            continue
        names[name] = names.get(name, 0) + 1
    for client in clients:
        client.close()
    if kind == "shared":
        subprocess.run([binary, "connect", "--stop"], env=env, capture_output=True)
    return {"setup": kind, "processes": len(pids), "by_name": names,
            "rss_mib": round(rss, 1), "pss_mib": round(pss, 1),
            "seconds": round(time.monotonic() - started, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--model", default="none", help="the embedding model's folder (default: none)")
    args = parser.parse_args()
    results = []
    for kind in ("separate", "shared"):
        with tempfile.TemporaryDirectory() as work:
            work = Path(work)
            upstreams = work / "upstreams.json"
            upstreams.write_text(json.dumps({"mcpServers": servers(work)}))
            env = {**os.environ, "ZEN_UPSTREAMS": str(upstreams), "ZEN_CONFIG_DIR": str(work / "config"),
                   "ZEN_CACHE_DIR": str(work / "cache"), "ZEN_STATE_DIR": str(work / "state"),
                   "ZEN_EMBEDDING_MODEL": args.model, "ZEN_STORE": "memory:", "RUST_LOG": "warn"}
            # One run to fill the catalog cache, so both setups start from it.
            subprocess.run([args.bin, "upstream", "refresh"], env=env, capture_output=True, check=True)
            results.append(measure(kind, args.bin, env))
            print(json.dumps(results[-1]), file=sys.stderr)
    separate, shared = results
    print(f"| setup | processes | RSS (MiB) | PSS (MiB) |")
    print(f"|---|---|---|---|")
    for row in results:
        print(f"| {row['setup']} | {row['processes']} | {row['rss_mib']} | {row['pss_mib']} |")
    print(f"shared / separate: processes {shared['processes'] / separate['processes']:.2f}x, "
          f"PSS {shared['pss_mib'] / separate['pss_mib']:.2f}x")


if __name__ == "__main__":
    main()
