"""zenmode against the official MCP Python SDK (PyPI `mcp`, stdio client).

Spawns the zenmode binary (env ZENMODE_BIN, default <repo>/target/release/zenmode)
and checks the optimized two-tool surface and the full 18-tool surface, once
over the legacy `initialize` handshake and once with the SDK's default `auto`
negotiation (which probes `server/discover` first), then the optimized checks
again over `serve --transport tcp` (two concurrent sessions, through
tcp_bridge.py, since the SDK has no raw-TCP transport) and over
`serve --transport http` with the SDK's Streamable HTTP client.

Prints one line per check and a final `python-sdk: N passed, M failed`; exits
non-zero if any check failed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import traceback
import warnings
from pathlib import Path

# The built-in modes: one manifest each under modes/ (the --full list).
BUILTIN_MODES = len(list((Path(__file__).resolve().parents[2] / "modes").glob("*.json")))
from typing import Any, Awaitable, Callable

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ZENMODE_BIN = os.environ.get("ZENMODE_BIN") or str(REPO / "target" / "release" / "zenmode")
CALL_TIMEOUT = 20.0
SESSION_TIMEOUT = 60.0

TASK = "the checkout page crashes with a TypeError after the last deploy"
PLAN_TASK = "plan the migration of our billing monolith to services, step by step"

results: list[tuple[str, bool, str]] = []


def record(name: str, ok: bool, detail: str = "") -> None:
    results.append((name, ok, detail))
    mark = "ok  " if ok else "FAIL"
    print(f"  {mark} {name}" + (f" -- {detail}" if detail and not ok else ""), flush=True)


async def check(name: str, fn: Callable[[], Awaitable[Any]]) -> None:
    try:
        await asyncio.wait_for(fn(), CALL_TIMEOUT)
        record(name, True)
    except AssertionError as e:
        record(name, False, f"assertion: {e}")
    except Exception as e:  # noqa: BLE001 - any failure is a failed check
        record(name, False, f"{type(e).__name__}: {e}")


def params(*args: str) -> StdioServerParameters:
    # RUST_LOG keeps the server's stderr (passed through to ours) quiet.
    return StdioServerParameters(command=ZENMODE_BIN, args=["serve", *args], env={"RUST_LOG": "error"})


def structured(result: Any) -> dict[str, Any]:
    sc = result.structured_content
    assert isinstance(sc, dict), f"structuredContent missing: {result!r}"
    # The text content must carry the same JSON (for clients that ignore structuredContent).
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    assert texts, "no text content block"
    assert json.loads(texts[0]) == sc, "text content differs from structuredContent"
    return sc


async def optimized_suite(era: str, server: StdioServerParameters | str | None = None, label: str = "") -> None:
    tag = f"[{era}{label}] "
    async with Client(server or params(), mode=era, read_timeout_seconds=CALL_TIMEOUT) as client:
        print(f"  negotiated protocol {client.protocol_version} (mode={era}{label})", flush=True)
        if era == "legacy":
            await check(tag + "legacy mode negotiates a 2025 handshake version",
                        _expect(lambda: client.protocol_version.startswith("2025-"), f"got {client.protocol_version}"))
        else:
            await check(tag + "auto mode negotiates 2026-07-28 via server/discover",
                        _expect(lambda: client.protocol_version == "2026-07-28", f"got {client.protocol_version}"))
        info = client.server_info

        async def server_info() -> None:
            assert info is not None and info.name == "zenmode", f"server_info={info!r}"

        await check(tag + "server info names zenmode", server_info)

        async def list_tools() -> None:
            tools = (await client.list_tools()).tools
            names = sorted(t.name for t in tools)
            assert names == ["zen_execute", "zen_select_mode"], f"tools={names}"
            for t in tools:
                assert t.input_schema.get("type") == "object", f"{t.name} inputSchema={t.input_schema}"

        await check(tag + "tools/list is exactly zen_select_mode + zen_execute", list_tools)

        async def select_mode() -> None:
            r = await client.call_tool("zen_select_mode", {"task_description": TASK})
            assert not r.is_error, f"isError: {r.content}"
            sc = structured(r)
            for key in ("mode", "confidence", "required", "next_call"):
                assert key in sc, f"missing {key!r} in {sorted(sc)}"
            assert isinstance(sc["confidence"], (int, float)) and 0 <= sc["confidence"] <= 1, sc["confidence"]
            assert sc["mode"] == "debug", f"mode={sc['mode']!r}"
            nc = sc["next_call"]
            assert nc["tool"] == "zen_execute" and nc["arguments"]["mode"] == sc["mode"], nc

        await check(tag + "zen_select_mode recommends debug with required/next_call", select_mode)

        async def select_by_mode() -> None:
            r = await client.call_tool("zen_select_mode", {"mode": "codereview"})
            assert not r.is_error, f"isError: {r.content}"
            sc = structured(r)
            assert sc.get("mode") == "codereview" and sc.get("required"), sc

        await check(tag + "zen_select_mode {mode: codereview} describes that mode", select_by_mode)

        async def select_then_execute() -> None:
            # Follow next_call verbatim: the example request must be accepted
            # (planner has an executor in every build, so it must also run).
            r = await client.call_tool("zen_select_mode", {"task_description": PLAN_TASK})
            sc = structured(r)
            assert sc["mode"] == "planner", f"mode={sc['mode']!r}"
            nc = sc["next_call"]
            r2 = await client.call_tool(nc["tool"], nc["arguments"])
            assert not r2.is_error, f"next_call rejected: {r2.structured_content}"

        await check(tag + "next_call from zen_select_mode (planner) runs as-is", select_then_execute)

        async def debug_example_validates() -> None:
            # debug's example request validates; this build may lack its executor.
            r = await client.call_tool("zen_select_mode", {"task_description": TASK})
            nc = structured(r)["next_call"]
            r2 = await client.call_tool(nc["tool"], nc["arguments"])
            if r2.is_error:
                err = structured(r2).get("error")
                assert err == "no_executor", f"next_call rejected: {r2.structured_content}"

        await check(tag + "next_call from zen_select_mode (debug) validates", debug_example_validates)

        async def execute_challenge() -> None:
            r = await client.call_tool(
                "zen_execute",
                {"mode": "challenge", "request": {"prompt": "Rewriting the service in Rust will fix the outage"}},
            )
            assert not r.is_error, f"isError: {r.content}"
            assert structured(r).get("status") == "challenge_accepted", r.structured_content

        await check(tag + "zen_execute challenge -> challenge_accepted", execute_challenge)

        async def execute_typo() -> None:
            r = await client.call_tool("zen_execute", {"mode": "debgu", "request": {}})
            assert r.is_error, f"expected isError, got {r.structured_content}"
            closest = structured(r).get("closest")
            assert isinstance(closest, list) and "debug" in closest, f"closest={closest!r}"

        await check(tag + "zen_execute unknown mode 'debgu' -> isError, closest has debug", execute_typo)

        async def execute_invalid() -> None:
            r = await client.call_tool("zen_execute", {"mode": "debug", "request": {"step": 1}})
            assert r.is_error, f"expected isError, got {r.structured_content}"
            violations = structured(r).get("violations")
            assert isinstance(violations, list) and violations, f"violations={violations!r}"

        await check(tag + "zen_execute debug {step:1} -> isError with violations", execute_invalid)

        async def hidden_tool() -> None:
            r = await client.call_tool("challenge", {"prompt": "tabs are better than spaces"})
            assert not r.is_error, f"isError: {r.content}"
            assert structured(r).get("status") == "challenge_accepted", r.structured_content

        await check(tag + "unlisted mode tool 'challenge' callable by name", hidden_tool)

        async def unknown_tool() -> None:
            try:
                r = await client.call_tool("no_such_tool", {})
            except MCPError as e:
                assert e.code == -32602, f"code={e.code}"
                return
            assert r.is_error, f"unknown tool accepted: {r}"

        await check(tag + "unknown tool -> error", unknown_tool)

        if client.protocol_version >= "2026-07-28":

            async def listen() -> None:
                # subscriptions/listen: the server acknowledges; closing the stream cancels it.
                async with client.listen(tools_list_changed=True) as sub:
                    assert sub is not None
                names = sorted(t.name for t in (await client.list_tools(cache_mode="refresh")).tools)
                assert names == ["zen_execute", "zen_select_mode"], f"after listen: {names}"

            await check(tag + "subscriptions/listen acknowledged, session usable after", listen)

        if era == "legacy":  # ping is removed as of 2026-07-28

            async def ping() -> None:
                await client.send_ping()

            await check(tag + "ping", ping)


async def full_suite(era: str) -> None:
    tag = f"[{era} --full] "
    async with Client(params("--full"), mode=era, read_timeout_seconds=CALL_TIMEOUT) as client:
        async def list_tools() -> None:
            tools = (await client.list_tools()).tools
            names = {t.name for t in tools}
            assert len(tools) == BUILTIN_MODES, f"{len(tools)} tools: {sorted(names)}"
            assert {"debug", "codereview", "challenge", "version"} <= names, sorted(names)
            for t in tools:
                assert isinstance(t.input_schema, dict) and t.input_schema.get("type") == "object", t.name
                assert t.description, f"{t.name} has no description"

        await check(tag + f"tools/list has {BUILTIN_MODES} modes with inputSchema", list_tools)

        async def version() -> None:
            r = await client.call_tool("version", {})
            assert not r.is_error, f"isError: {r.content}"
            assert isinstance(r.structured_content, dict), r

        await check(tag + "call version", version)

        async def debug_step() -> None:
            r = await client.call_tool(
                "debug",
                {
                    "step": "Reproduce the TypeError on checkout",
                    "step_number": 1,
                    "total_steps": 2,
                    "next_step_required": True,
                    "findings": "Fails when the cart is empty",
                },
            )
            if r.is_error:  # valid request; this build may lack the debug executor
                assert structured(r).get("error") == "no_executor", f"isError: {r.structured_content}"

        await check(tag + "call debug with a valid step (validates)", debug_step)

        async def planner_step() -> None:
            r = await client.call_tool(
                "planner",
                {"step": "Goal: split billing out of the monolith", "step_number": 1,
                 "total_steps": 3, "next_step_required": True},
            )
            assert not r.is_error, f"isError: {r.structured_content}"
            structured(r)

        await check(tag + "call planner step 1", planner_step)


async def dynamic_suite(strategy: str, change: tuple[str, dict[str, Any]], appears: str) -> None:
    """A strategy whose list changes: the SDK must get tools/list_changed and see the new list."""
    tag = f"[legacy --strategy {strategy}] "
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        inner = getattr(message, "root", message)
        if type(inner).__name__ == "ToolListChangedNotification" or getattr(inner, "method", "") == "notifications/tools/list_changed":
            changed.set()

    async with Client(params("--strategy", strategy), mode="legacy", read_timeout_seconds=CALL_TIMEOUT,
                      message_handler=on_message) as client:
        async def starts_small() -> None:
            names = [t.name for t in (await client.list_tools()).tools]
            assert appears not in names, f"{appears} listed before the change: {names}"

        await check(tag + f"{appears} is not listed at first", starts_small)

        async def change_list() -> None:
            r = await client.call_tool(*change)
            assert not r.is_error, f"isError: {r.structured_content}"
            await asyncio.wait_for(changed.wait(), 5)

        await check(tag + f"{change[0]} sends notifications/tools/list_changed", change_list)

        async def relist() -> None:
            names = [t.name for t in (await client.list_tools()).tools]
            assert appears in names, f"{appears} missing after the change: {names}"
            r = await client.call_tool(appears, {"prompt": "the build is fine"})
            assert not r.is_error, f"isError: {r.structured_content}"

        await check(tag + f"re-listing shows {appears}, and it runs", relist)


def json_of(result: Any) -> Any:
    """A result's JSON: structured content, or (arrays) the text block."""
    if isinstance(result.structured_content, dict):
        return result.structured_content
    return json.loads(next(c.text for c in result.content if getattr(c, "type", None) == "text"))


async def seeds_suite() -> None:
    """One call per design document (../shared/seeds), as the document writes it."""
    calls = [
        ("000", ("--strategy", "lazy"), "manage_tools", {"action": "enable", "tools": ["challenge"]},
         lambda b: b["enabled"] == ["challenge"]),
        ("001", ("--strategy", "categories"), "list_tool_categories", {},
         lambda b: any(c["category"] == "workflow" and c["toolCount"] > 0 for c in b)),
        ("002", ("--strategy", "groups"), "activate_utility", {}, lambda b: b["group"] == "utility"),
        ("003", ("--strategy", "discover", "--tool-prefix", "afd-"), "afd-detail", {"command": "chat"},
         lambda b: b["success"] is True and b["data"][0]["found"] is True),
        ("004", (), "zen_select_mode",
         {"task_description": "Debug OAuth token persistence issue", "confidence_level": "exploring"},
         lambda b: b["recommended_mode"] == "debug" and "step" in b["required_fields"]),
    ]
    for doc, args, tool, arguments, expect in calls:
        async with Client(params(*args), mode="legacy", read_timeout_seconds=CALL_TIMEOUT) as client:
            async def one() -> None:
                r = await client.call_tool(tool, arguments)
                assert not r.is_error, f"isError: {r.content}"
                body = json_of(r)
                assert expect(body), body

            await check(f"[design {doc}] {tool} {json.dumps(arguments)}", one)


class TcpServer:
    """`zenmode serve --transport tcp --listen 127.0.0.1:0` (reached through
    tcp_bridge.py), or with transport="http" the same over Streamable HTTP."""

    def __init__(self, transport: str = "tcp", extra: tuple[str, ...] = ()) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.addr = ""
        self.transport = transport
        self.extra = extra

    def __enter__(self) -> "TcpServer":
        self.proc = subprocess.Popen(
            [ZENMODE_BIN, "serve", "--transport", self.transport, "--listen", "127.0.0.1:0", *self.extra],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, "RUST_LOG": "error"},
        )
        found = threading.Event()

        def drain() -> None:
            assert self.proc is not None and self.proc.stderr is not None
            for line in self.proc.stderr:
                if not found.is_set() and line.startswith("zenmode: listening on "):
                    self.addr = line.split("listening on ", 1)[1].strip()
                    found.set()
                elif line.strip():
                    print(f"  [tcp server] {line.rstrip()}", file=sys.stderr)

        threading.Thread(target=drain, daemon=True).start()
        for _ in range(150):
            if found.wait(0.1) or self.proc.poll() is not None:
                break
        if not found.is_set():
            self.__exit__()
            raise RuntimeError(
                f"zenmode serve --transport {self.transport} printed no 'listening on' line (exit status {self.proc.poll()})"
            )
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def client_params(self) -> StdioServerParameters:
        return StdioServerParameters(command=sys.executable, args=[str(HERE / "tcp_bridge.py"), self.addr])

    def url(self) -> str:
        return f"http://{self.addr}/mcp"


async def tcp_suites() -> None:
    with TcpServer() as server:
        print(f"  tcp server listening on {server.addr}", flush=True)
        # Two sessions at once on one listener, each the full optimized suite.
        await asyncio.gather(
            optimized_suite("legacy", server.client_params(), " tcp"),
            optimized_suite("auto", server.client_params(), " tcp"),
        )
        assert server.proc is not None

        async def still_running() -> None:
            assert server.proc is not None and server.proc.poll() is None, "tcp server exited after its sessions"

        await check("[tcp] server still listening after both sessions closed", still_running)


async def http_suites() -> None:
    """The optimized suite over Streamable HTTP: a legacy session and a
    2026-07-28 (stateless) client at once, then a full-list server."""
    with TcpServer("http") as server:
        print(f"  http server listening on {server.url()}", flush=True)
        await asyncio.gather(
            optimized_suite("legacy", server.url(), " http"),
            optimized_suite("auto", server.url(), " http"),
        )

        async def still_running() -> None:
            assert server.proc is not None and server.proc.poll() is None, "http server exited after its sessions"

        await check("[http] server still listening after both sessions closed", still_running)
    with TcpServer("http", ("--full",)) as server:
        async with Client(server.url(), mode="legacy", read_timeout_seconds=CALL_TIMEOUT) as client:
            async def full_list() -> None:
                names = {t.name for t in (await client.list_tools()).tools}
                assert len(names) == BUILTIN_MODES and "debug" in names, sorted(names)

            await check(f"[http] --full lists the {BUILTIN_MODES} modes", full_list)


def _expect(pred: Callable[[], bool], msg: str) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        assert pred(), msg

    return run


async def gateway_suite(era: str) -> None:
    """zenmode fronting another MCP server (the fault server, standard library only)."""
    import tempfile

    tag = f"[gateway {era}] "
    with tempfile.TemporaryDirectory(prefix="zenmode-gateway-peer-") as work:
        upstreams = Path(work) / "upstreams.json"
        upstreams.write_text(json.dumps({"mcpServers": {"flaky": {
            "command": sys.executable, "args": [str(REPO / "tests" / "upstreams" / "fault_server.py")]}}}))
        server = StdioServerParameters(command=ZENMODE_BIN, args=["serve", "--upstreams", str(upstreams)], env={
            "RUST_LOG": "error", "ZEN_CACHE_DIR": f"{work}/cache", "ZEN_STATE_DIR": f"{work}/state",
            "PATH": os.environ.get("PATH", "")})
        async with Client(server, mode=era, read_timeout_seconds=CALL_TIMEOUT) as client:
            async def two_tools() -> None:
                names = sorted(t.name for t in (await client.list_tools()).tools)
                assert names == ["zen_execute", "zen_select_mode"], names

            await check(tag + "tools/list stays the two meta tools with an upstream behind", two_tools)

            async def describe() -> None:
                sc = structured(await client.call_tool("zen_select_mode", {"mode": "flaky__echo"}))
                assert sc["server"] == "flaky" and sc["read_only"] is True, sc

            await check(tag + "zen_select_mode describes an upstream tool with its server", describe)

            async def execute() -> None:
                r = await client.call_tool("zen_execute", {"mode": "flaky__echo", "request": {"text": "via sdk"}})
                assert not r.is_error, r
                assert r.structured_content == {"echo": "via sdk"}, r.structured_content
                assert [c.text for c in r.content] == ["via sdk"], r.content

            await check(tag + "zen_execute forwards to the upstream and passes its result through", execute)

            async def large_result_as_handle() -> None:
                # 100 KiB of numbered lines: over the 16 KiB threshold, four pages of 32 KiB.
                text = "".join(f"line {i:06d} of the large result\n" for i in range(3300))
                assert len(text) > 100_000
                r = await client.call_tool("zen_execute", {"mode": "flaky__echo", "request": {"text": text}})
                assert not r.is_error, r
                links = [c for c in r.content if getattr(c, "type", None) == "resource_link"]
                assert len(links) == 1, r.content
                uri = str(links[0].uri)
                assert uri.startswith("zenmode://results/"), uri
                assert len(r.model_dump_json(by_alias=True, exclude_none=True)) <= 2048, "the handle reply is over 2 KiB"
                first = (await client.read_resource(uri)).contents[0]
                second = (await client.read_resource(uri + "?page=2")).contents[0]
                pages = [first.text, second.text]
                page = 3
                while sum(map(len, pages)) < len(text):
                    pages.append((await client.read_resource(f"{uri}?page={page}")).contents[0].text)
                    page += 1
                assert page - 1 == 4, f"{page - 1} pages"
                # The handle keeps the structured content, {"echo": text}, as compact JSON.
                assert json.loads("".join(pages)) == {"echo": text}, "the pages do not join to the original"
                assert second.text == "".join(pages)[len(first.text):len(first.text) + len(second.text)]
                try:
                    await client.read_resource(uri + "?page=5")
                except MCPError as error:
                    assert "page" in str(error), error
                else:
                    raise AssertionError("page 5 of 4 was read")

            await check(tag + "a large result comes back as a resource_link whose pages read back whole",
                        large_result_as_handle)


async def main() -> int:
    if not os.access(ZENMODE_BIN, os.X_OK):
        print(f"python-sdk: zenmode binary not found at {ZENMODE_BIN}", file=sys.stderr)
        print("python-sdk: 0 passed, 1 failed")
        return 1
    import importlib.metadata

    print(f"python-sdk: mcp {importlib.metadata.version('mcp')} against {ZENMODE_BIN}", flush=True)
    suites = [
        ("optimized[legacy]", lambda: optimized_suite("legacy")),
        ("optimized[auto]", lambda: optimized_suite("auto")),
        ("full[legacy]", lambda: full_suite("legacy")),
        ("full[auto]", lambda: full_suite("auto")),
        ("tcp", tcp_suites),
        ("http", http_suites),
        ("lazy", lambda: dynamic_suite("lazy", ("manage_tools", {"action": "enable", "names": ["challenge"]}), "challenge")),
        ("groups", lambda: dynamic_suite("groups", ("activate_utility", {}), "challenge")),
        ("seeds", seeds_suite),
        ("gateway[legacy]", lambda: gateway_suite("legacy")),
        ("gateway[auto]", lambda: gateway_suite("auto")),
    ]
    for name, suite in suites:
        try:
            await asyncio.wait_for(suite(), SESSION_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - a session that cannot even start is a failure
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            if isinstance(e, BaseExceptionGroup):
                detail += " :: " + "; ".join(repr(x) for x in e.exceptions)
            record(f"{name} session", False, detail)
    passed = sum(ok for _, ok, _ in results)
    failed = len(results) - passed
    print(f"python-sdk: {passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    # ping's deprecation warning fires on every era; only legacy sessions ping.
    warnings.filterwarnings("ignore", message="ping is removed")
    sys.exit(asyncio.run(main()))
