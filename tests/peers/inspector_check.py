"""zenmode against the MCP Inspector CLI (`mcp-inspector --cli`, npm
@modelcontextprotocol/inspector, installed in tests/peers/node_modules).

Each check runs one `mcp-inspector --cli --format json <zenmode> serve ...`
invocation (the Inspector spawns the server over stdio) and asserts on its
exit code and JSON output, in the Inspector's `legacy` (initialize) and
`modern` (server/discover, 2026-07-28) protocol eras. Standard library only.
Prints `inspector: N passed, M failed`; exits non-zero if any check failed.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# The built-in modes: one manifest each under modes/ (the --full list).
BUILTIN_MODES = len(list((Path(__file__).resolve().parents[2] / "modes").glob("*.json")))

from harness import Checks
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ZENMODE_BIN = os.environ.get("ZENMODE_BIN") or str(REPO / "target" / "release" / "zenmode")
INSPECTOR = HERE / "node_modules" / ".bin" / "mcp-inspector"
TIMEOUT = 60
TASK = "the checkout page crashes with a TypeError after the last deploy"

# Inspector exit codes (core/cli/error-handler.ts): 5 = tool error, 6 = unportable schema.
TOOL_ERROR = 5

CHECKS = Checks("inspector")
check = CHECKS.check
HOME = tempfile.mkdtemp(prefix="zenmode-inspector-home-")
atexit.register(shutil.rmtree, HOME, True)
ENV = {**os.environ, "HOME": HOME, "CI": "true", "RUST_LOG": "error", "NO_COLOR": "1"}


def inspector(*args: str, server_args: tuple[str, ...] = (), tail: tuple[str, ...] = ()) -> tuple[int, Any, str]:
    """Run the Inspector CLI once; return (exit code, parsed stdout JSON or None, stderr).

    `tail` goes after the server command: variadic options (--tool-arg) would
    otherwise swallow it."""
    cmd = [str(INSPECTOR), "--cli", "--format", "json", "--connect-timeout", "10000", *args, ZENMODE_BIN, "serve", *server_args, *tail]
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT, env=ENV)
    try:
        out = json.loads(proc.stdout) if proc.stdout.strip() else None
    except json.JSONDecodeError:
        out = None
    return proc.returncode, out, proc.stderr


def result_of(rc: int, out: Any, err: str, want_rc: int = 0) -> dict[str, Any]:
    assert rc == want_rc, f"exit {rc} (want {want_rc}); stdout={json.dumps(out)[:300]}; stderr={err[-500:]}"
    assert isinstance(out, dict) and isinstance(out.get("result"), dict), f"no result in {json.dumps(out)[:300]}"
    return out["result"]


def call(era: str, tool: str, arguments: dict[str, Any], full: bool = False, want_rc: int = 0) -> dict[str, Any]:
    rc, out, err = inspector(
        "--protocol-era", era, "--method", "tools/call", "--tool-name", tool,
        "--tool-args-json", json.dumps(arguments),
        server_args=("--full",) if full else (),
    )
    result = result_of(rc, out, err, want_rc)
    sc = result.get("structuredContent")
    assert isinstance(sc, dict), f"no structuredContent: {json.dumps(result)[:300]}"
    return result


def main() -> int:
    if not os.access(ZENMODE_BIN, os.X_OK):
        print(f"inspector: zenmode binary not found at {ZENMODE_BIN}", file=sys.stderr)
        print("inspector: 0 passed, 1 failed")
        return 1
    version = json.loads((HERE / "node_modules/@modelcontextprotocol/inspector/package.json").read_text())["version"]
    print(f"inspector: @modelcontextprotocol/inspector {version} (--cli) against {ZENMODE_BIN}", flush=True)

    for era in ("legacy", "modern"):
        tag = f"[{era}] "

        def list_tools(era: str = era) -> None:
            # --strict: exit 6 if any tool schema has an error-severity portability problem.
            result = result_of(*inspector("--protocol-era", era, "--strict", "--method", "tools/list"))
            names = sorted(t["name"] for t in result["tools"])
            assert names == ["zen_execute", "zen_select_mode"], f"tools={names}"

        check(tag + "tools/list --strict is exactly zen_select_mode + zen_execute", list_tools)

        def select(era: str = era) -> None:
            sc = call(era, "zen_select_mode", {"task_description": TASK})["structuredContent"]
            assert sc.get("mode") == "debug", f"mode={sc.get('mode')!r}"
            assert 0 <= sc["confidence"] <= 1 and "required" in sc and "next_call" in sc, sorted(sc)

        check(tag + "tools/call zen_select_mode -> debug", select)

        def select_key_value(era: str = era) -> None:
            # The --tool-arg key=value path (the Inspector coerces top_k to a number).
            rc, out, err = inspector(
                "--protocol-era", era, "--method", "tools/call", "--tool-name", "zen_select_mode",
                tail=("--tool-arg", "task_description=plan a phased migration of the billing service", "top_k=1"),
            )
            sc = result_of(rc, out, err)["structuredContent"]
            assert sc.get("mode") == "planner", f"mode={sc.get('mode')!r}"
            assert not sc.get("alternatives"), f"top_k=1 but alternatives={sc.get('alternatives')}"

        check(tag + "tools/call zen_select_mode via --tool-arg key=value", select_key_value)

        def execute(era: str = era) -> None:
            result = call(era, "zen_execute", {"mode": "challenge", "request": {"prompt": "we never need indexes"}})
            assert result.get("isError") is not True, json.dumps(result)[:300]
            assert result["structuredContent"].get("status") == "challenge_accepted", result["structuredContent"]

        check(tag + "tools/call zen_execute challenge -> challenge_accepted", execute)

        def execute_typo(era: str = era) -> None:
            result = call(era, "zen_execute", {"mode": "debgu", "request": {}}, want_rc=TOOL_ERROR)
            assert result.get("isError") is True, json.dumps(result)[:300]
            assert "debug" in result["structuredContent"].get("closest", []), result["structuredContent"]

        check(tag + "tools/call zen_execute 'debgu' -> exit 5, isError, closest has debug", execute_typo)

        def execute_invalid(era: str = era) -> None:
            result = call(era, "zen_execute", {"mode": "debug", "request": {"step": 1}}, want_rc=TOOL_ERROR)
            assert result.get("isError") is True, json.dumps(result)[:300]
            assert result["structuredContent"].get("violations"), result["structuredContent"]

        check(tag + "tools/call zen_execute debug {step:1} -> exit 5 with violations", execute_invalid)

        def full_list(era: str = era) -> None:
            result = result_of(*inspector("--protocol-era", era, "--strict", "--method", "tools/list",
                                          server_args=("--full",)))
            names = {t["name"] for t in result["tools"]}
            assert len(result["tools"]) == BUILTIN_MODES, f"{len(result['tools'])} tools"
            assert {"debug", "codereview"} <= names, sorted(names)
            assert all(t.get("inputSchema", {}).get("type") == "object" for t in result["tools"])

        check(tag + f"--full tools/list --strict has {BUILTIN_MODES} tools", full_list)

        def full_version(era: str = era) -> None:
            result = call(era, "version", {}, full=True)
            assert result.get("isError") is not True, json.dumps(result)[:300]
            assert result["structuredContent"].get("name") == "zenmode", result["structuredContent"]

        check(tag + "--full tools/call version", full_version)

    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
