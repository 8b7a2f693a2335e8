"""Summarize the stdio traces run.sh records: which protocol each peer negotiated.

run.sh points each peer at a wrapper that execs zenmode with its stdin and
stdout copied to TRACE_DIR/<peer>/<pid>.in / .out (one pair per spawned
server). This prints, per peer, how its sessions opened: an `initialize`
handshake (and the version the server answered), a `server/discover` probe, or
a 2026-07-28 per-request envelope with no handshake; plus any JSON-RPC error
replies. Informational only: always exits 0. Standard library only.
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

META_VERSION = "io.modelcontextprotocol/protocolVersion"


def messages(path: Path) -> list[dict]:
    out = []
    if not path.exists():
        return out
    for line in path.read_text(errors="replace").splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(msg, dict):
            out.append(msg)
    return out


def session_kind(inbound: list[dict], outbound: list[dict]) -> str:
    requests = [m for m in inbound if "method" in m]
    if not requests:
        return "no requests"
    first = requests[0]
    method = first["method"]
    if method == "initialize":
        offered = first.get("params", {}).get("protocolVersion")
        reply = next((m for m in outbound if m.get("id") == first.get("id")), {})
        answered = reply.get("result", {}).get("protocolVersion") or f"error {reply.get('error')}"
        return f"initialize (offered {offered}, server answered {answered})"
    version = first.get("params", {}).get("_meta", {}).get(META_VERSION)
    if method == "server/discover":
        reply = next((m for m in outbound if m.get("id") == first.get("id")), {})
        ok = "ok" if "result" in reply else f"error {reply.get('error')}"
        later = [m["method"] for m in requests[1:]]
        return f"server/discover {version} ({ok})" + ("" if later else " [probe only]")
    if version:
        return f"{version} envelope, no handshake (first: {method})"
    return f"first request {method} with no handshake"


def main() -> int:
    root = Path(sys.argv[1])
    if not root.is_dir():
        return 0
    print("protocol negotiated per peer (from stdio traces):")
    for peer in sorted(p for p in root.iterdir() if p.is_dir()):
        kinds: collections.Counter[str] = collections.Counter()
        errors: collections.Counter[str] = collections.Counter()
        for inp in sorted(peer.glob("*.in")):
            inbound, outbound = messages(inp), messages(inp.with_suffix(".out"))
            if not inbound and not outbound:
                continue  # a TCP-mode server: its traffic is not on stdio
            kinds[session_kind(inbound, outbound)] += 1
            methods = {m.get("id"): m.get("method") for m in inbound if "method" in m}
            for m in outbound:
                if "error" in m:
                    err = m["error"]
                    errors[f"{methods.get(m.get('id'), '?')} -> {err.get('code')} {err.get('message', '')[:80]}"] += 1
        print(f"  {peer.name}:")
        for kind, n in sorted(kinds.items()):
            print(f"    {n:3d} x {kind}")
        for err, n in sorted(errors.items()):
            print(f"    {n:3d} x error reply: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
