"""zenmode registered in Claude Code (npm @anthropic-ai/claude-code, in
tests/peers/node_modules), without an API key and without stdin.

In a throw-away HOME / CLAUDE_CONFIG_DIR and project directory:
`claude mcp add` registers `zenmode serve`, `zenmode serve --full`, every other
`--strategy`, and a
server that exits at once (/bin/false, the negative control), and zenmode
over a broken upstreams file (a bad entry; not JSON); then
`claude mcp list` and `claude mcp get` run Claude Code's own health check
(spawn, handshake, tools/list) and must report zenmode as connected, also
with the broken files (whose bad entry a select reply names), and the
control as failed. Then claude_session.py runs whole `claude -p` sessions
against a loopback fake of the model API. Standard library only. Prints `claude-code: N passed,
M failed`; exits non-zero if any check failed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from claude_session import run_session_checks
from harness import Checks
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ZENMODE_BIN = os.path.abspath(os.environ.get("ZENMODE_BIN") or str(REPO / "target" / "release" / "zenmode"))
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
# The strategies besides the default and --full; each is registered and health-checked.
STRATEGIES = ("lazy", "categories", "groups", "discover")
TIMEOUT = 90  # `mcp list` health-checks every server; a hung one costs Claude Code's own 30 s
EXPECTED_VERSION = "2.1.330"

# Claude Code marks a healthy server "✔ Connected" and a broken one "✘ Failed to connect"
# (older releases used ✓ / ✗); match the words, accept any of the marks.
CONNECTED = re.compile(r"[✓✔]\s*Connected\b")
FAILED = re.compile(r"[✗✘]\s*Failed\b")

CHECKS = Checks("claude-code")
check = CHECKS.check


def main() -> int:
    if not os.access(ZENMODE_BIN, os.X_OK):
        print(f"claude-code: zenmode binary not found at {ZENMODE_BIN}", file=sys.stderr)
        print("claude-code: 0 passed, 1 failed")
        return 1
    home = Path(tempfile.mkdtemp(prefix="zenmode-claude-home-"))
    project = home / "project"
    project.mkdir()
    # A clean environment: no API key or auth token, no inherited Claude settings,
    # no telemetry or update traffic (there is no network to send it to anyway).
    drop = ("ANTHROPIC_", "CLAUDE", "AWS_", "GOOGLE_", "VERTEX", "OPENAI")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(drop)}
    env.update(
        HOME=str(home),
        CLAUDE_CONFIG_DIR=str(home / ".claude"),
        CI="true",
        NO_COLOR="1",
        DISABLE_TELEMETRY="1",
        DISABLE_AUTOUPDATER="1",
        DISABLE_ERROR_REPORTING="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        RUST_LOG="error",
    )

    def claude(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLAUDE), *args], cwd=project, env=env, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=TIMEOUT,
        )

    def show(p: subprocess.CompletedProcess[str]) -> str:
        return f"exit {p.returncode}; stdout={p.stdout.strip()!r}; stderr={p.stderr.strip()[-400:]!r}"

    upstreams = home / "upstreams.json"
    upstreams.write_text(json.dumps({"mcpServers": {"flaky": {
        "command": sys.executable, "args": [str(REPO / "tests" / "upstreams" / "fault_server.py")]}}}))
    # A broken upstreams file: one bad entry beside a
    # good one, and a file that is not JSON at all (a trailing comma).
    bad_entry = home / "bad-entry.json"
    bad_entry.write_text(json.dumps({"mcpServers": {
        "broken": {"command": 5},
        "flaky": {"command": sys.executable, "args": [str(REPO / "tests" / "upstreams" / "fault_server.py")]}}}))
    not_json = home / "not-json.json"
    not_json.write_text('{"mcpServers": {\n  "a": {"command": "python3"},\n}}\n')
    env["ZEN_CACHE_DIR"] = str(home / "zen-cache")
    env["ZEN_STATE_DIR"] = str(home / "zen-state")
    try:
        version = claude("--version")
        print(f"claude-code: {version.stdout.strip()} against {ZENMODE_BIN}", flush=True)

        def pinned_version() -> None:
            assert version.returncode == 0 and version.stdout.startswith(EXPECTED_VERSION), show(version)

        check(f"claude --version is {EXPECTED_VERSION}", pinned_version)

        def add() -> None:
            for name, cmd in (
                ("zenmode", [ZENMODE_BIN, "serve"]),
                ("zenmode-full", [ZENMODE_BIN, "serve", "--full"]),
                *((f"zenmode-{strategy}", [ZENMODE_BIN, "serve", "--strategy", strategy]) for strategy in STRATEGIES),
                ("zenmode-gateway", [ZENMODE_BIN, "serve", "--upstreams", str(upstreams)]),
                ("zenmode-bad-entry", [ZENMODE_BIN, "serve", "--upstreams", str(bad_entry)]),
                ("zenmode-not-json", [ZENMODE_BIN, "serve", "--upstreams", str(not_json)]),
                ("control-broken", [shutil.which("false") or "/bin/false"]),
            ):
                p = claude("mcp", "add", "--scope", "local", name, "--", *cmd)
                assert p.returncode == 0, f"mcp add {name}: {show(p)}"
            config = json.loads((home / ".claude" / ".claude.json").read_text())
            servers = config["projects"][str(project)]["mcpServers"]
            assert servers["zenmode"] == {"type": "stdio", "command": ZENMODE_BIN, "args": ["serve"], "env": {}}, servers

        check("claude mcp add (local scope) writes the stdio server entries", add)

        listing = claude("mcp", "list")
        print("  claude mcp list:\n" + "\n".join("    | " + line for line in listing.stdout.strip().splitlines()),
              flush=True)
        lines = {line.split(":", 1)[0]: line for line in listing.stdout.splitlines() if ":" in line}

        def list_connected(name: str) -> Callable[[], None]:
            def run() -> None:
                assert listing.returncode == 0, show(listing)
                line = lines.get(name)
                assert line is not None, f"{name} missing from: {listing.stdout!r}"
                assert CONNECTED.search(line), f"not connected: {line!r}"

            return run

        check("claude mcp list: zenmode ✔ Connected", list_connected("zenmode"))
        check("claude mcp list: zenmode --full ✔ Connected", list_connected("zenmode-full"))
        for strategy in STRATEGIES:
            check(f"claude mcp list: zenmode --strategy {strategy} ✔ Connected", list_connected(f"zenmode-{strategy}"))

        check("claude mcp list: zenmode --upstreams (gateway) ✔ Connected", list_connected("zenmode-gateway"))

        check("claude mcp list: zenmode with a bad upstream entry ✔ Connected", list_connected("zenmode-bad-entry"))
        check("claude mcp list: zenmode with a broken upstreams file ✔ Connected", list_connected("zenmode-not-json"))

        def broken_named() -> None:
            p = claude("mcp", "get", "zenmode-not-json")
            assert p.returncode == 0 and re.search(r"Status:\s*" + CONNECTED.pattern, p.stdout), show(p)
            reply = select_reply([ZENMODE_BIN, "serve", "--upstreams", str(bad_entry)], env)
            assert 'bad entry \\"broken\\"' in reply, reply

        check("broken upstreams: claude mcp get ✔ Connected; a select reply names the bad entry", broken_named)

        def control_fails() -> None:
            line = lines.get("control-broken")
            assert line is not None and FAILED.search(line) and not CONNECTED.search(line), f"control: {line!r}"

        check("claude mcp list: /bin/false control reported as failed", control_fails)

        def get() -> None:
            p = claude("mcp", "get", "zenmode")
            assert p.returncode == 0, show(p)
            assert re.search(r"Status:\s*" + CONNECTED.pattern, p.stdout), show(p)
            assert re.search(r"Type:\s*stdio", p.stdout), show(p)

        check("claude mcp get zenmode: Status ✔ Connected", get)

        run_session_checks(check, CLAUDE, ZENMODE_BIN, env, project, TIMEOUT)
    finally:
        shutil.rmtree(home, ignore_errors=True)

    return CHECKS.finish()


def select_reply(command: list[str], env: dict[str, str]) -> str:
    """One zen_select_mode call over stdio, as text (a plain JSON-RPC exchange)."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
         "capabilities": {}, "clientInfo": {"name": "zenmode-peers", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "zen_select_mode",
         "arguments": {"task_description": "echo some text back"}}},
    ]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True, env=env)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        proc.stdin.flush()
        for line in proc.stdout:
            if json.loads(line).get("id") == 2:
                return line
        return ""
    finally:
        proc.kill()
        proc.wait()


if __name__ == "__main__":
    sys.exit(main())
