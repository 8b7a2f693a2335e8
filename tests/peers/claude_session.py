"""Claude Code sessions against a loopback stand-in for the model API.

Claude Code (`claude -p`) talks to a small fake of the Anthropic Messages
API (streaming) on 127.0.0.1, which plays a scripted model: each request
gets the next step of a plan (a tool call, then another, then an answer).
The fake keeps every request Claude Code sent, so the checks can look at
what the model would have seen:

- with zenmode's default list, the two meta tools are loaded up front
  (`_meta` "anthropic/alwaysLoad"), not deferred behind Claude Code's tool
  search; with `--no-always-load` or `--full` they are deferred;
- a one-step task runs end to end through the real client in three model
  requests under `zen` (select, execute, answer) and under `--full`
  (tool search, call, answer).

Standard library only; used by claude_check.py.
"""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable

# ("tool", (name, input or fn(last result) -> input)) | ("tools", [(name, input), ...]) | ("text", str)
Step = tuple[str, Any]


class FakeModel:
    """A streaming Messages API endpoint that follows a plan."""

    def __init__(self) -> None:
        self.plan: list[Step] = []
        # When set, decides each step from the whole conversation instead of the plan.
        self.player: Callable[[list[dict[str, Any]]], Step] | None = None
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                    self._json({"input_tokens": 1})
                    return
                with fake.lock:
                    fake.requests.append(body)
                    step = fake.next_step(body)
                self._stream(body, step)

            def _json(self, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, request: dict[str, Any], step: Step) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()

                def event(kind: str, data: dict[str, Any]) -> None:
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(data)}\n\n".encode())

                usage = {"input_tokens": 1, "output_tokens": 1}
                event("message_start", {"type": "message_start", "message": {
                    "id": f"msg_{len(fake.requests)}", "type": "message", "role": "assistant",
                    "model": request.get("model", "fake"), "content": [], "stop_reason": None,
                    "stop_sequence": None, "usage": usage}})
                kind, payload = step
                if kind in ("tool", "tools"):
                    # Several tool_use blocks in one message: calls made in parallel.
                    for index, (name, tool_input) in enumerate([payload] if kind == "tool" else payload):
                        event("content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                            "type": "tool_use", "id": f"toolu_{len(fake.requests)}" + (f"_{index}" if index else ""),
                            "name": name,
                            "input": {}}})
                        event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {
                            "type": "input_json_delta", "partial_json": json.dumps(tool_input)}})
                        event("content_block_stop", {"type": "content_block_stop", "index": index})
                    stop = "tool_use"
                else:
                    event("content_block_start", {"type": "content_block_start", "index": 0,
                                                  "content_block": {"type": "text", "text": ""}})
                    event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": payload}})
                    event("content_block_stop", {"type": "content_block_stop", "index": 0})
                    stop = "end_turn"
                event("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                        "usage": {"output_tokens": 1}})
                event("message_stop", {"type": "message_stop"})

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def next_step(self, request: dict[str, Any]) -> Step:
        """The plan's step after as many tool calls as the conversation holds."""
        messages = request.get("messages", [])
        if self.player is not None:
            return self.player(messages)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        if done >= len(self.plan):
            return ("text", "done")
        kind, payload = self.plan[done]
        if kind == "tool" and callable(payload[1]):
            payload = (payload[0], payload[1](last_tool_result(messages)))
        return (kind, payload)

    def close(self) -> None:
        self.server.shutdown()


def last_tool_result(messages: list[dict[str, Any]]) -> Any:
    """The JSON (or text) of the newest tool_result in the conversation."""
    for message in reversed(messages):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in reversed(content):
            if block.get("type") != "tool_result":
                continue
            inner = block.get("content")
            text = inner if isinstance(inner, str) else "".join(
                part.get("text", "") for part in inner or [] if isinstance(part, dict))
            try:
                return json.loads(text)
            except ValueError:
                return text
    return None


class TokenCounter:
    """o200k counts from one `zenmode tokens --count-lines` process, which
    loads its tokenizers once (a process per text spent a tenth of a
    second on that alone, hundreds of times per benchmark)."""

    _started: dict[str, "TokenCounter"] = {}

    def __init__(self, zenmode: str) -> None:
        self.process = subprocess.Popen([zenmode, "tokens", "--count-lines"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    @classmethod
    def of(cls, zenmode: str) -> "TokenCounter":
        """The counter of this binary, started on first use."""
        if zenmode not in cls._started:
            cls._started[zenmode] = cls(zenmode)
        return cls._started[zenmode]

    def o200k(self, text: str) -> int:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps(text) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"`zenmode tokens --count-lines` ended (exit status {self.process.wait()})")
        return json.loads(line)["o200k"]


def o200k(zenmode: str, requests: list[dict[str, Any]]) -> int:
    """o200k tokens of what Claude Code sent: tools, system and messages, summed over requests."""
    counter = TokenCounter.of(zenmode)
    return sum(counter.o200k(json.dumps({key: request.get(key) for key in ("tools", "system", "messages")}))
               for request in requests)


def tool_names(request: dict[str, Any]) -> list[str]:
    return [tool.get("name", "") for tool in request.get("tools", [])]


def run_session_checks(check: Callable[[str, Callable[[], None]], None], claude: Path, zenmode: str,
                       env: dict[str, str], workdir: Path, timeout: int) -> None:
    fake = FakeModel()
    env = dict(env, ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-fake-loopback")

    def session(name: str, args: list[str], plan: list[Step], prompt: str) -> tuple[list[dict[str, Any]], str]:
        config = workdir / f"mcp-{name}.json"
        config.write_text(json.dumps({"mcpServers": {"zenmode": {"command": zenmode, "args": ["serve", *args]}}}))
        fake.plan, fake.requests = plan, []
        done = subprocess.run(
            [str(claude), "-p", prompt, "--mcp-config", str(config), "--strict-mcp-config",
             "--allowedTools", "mcp__zenmode", "--output-format", "json"],
            cwd=workdir, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"claude -p exit {done.returncode}: {done.stderr[-400:]!r}"
        return list(fake.requests), done.stdout

    try:
        def meta_tools_load_up_front() -> None:
            requests, _ = session("zen", [], [], "say hi")
            names = tool_names(requests[0])
            for tool in ("mcp__zenmode__zen_select_mode", "mcp__zenmode__zen_execute"):
                assert tool in names, f"{tool} not loaded up front: {names}"
            loaded = {t["name"]: t for t in requests[0]["tools"]}
            assert not loaded["mcp__zenmode__zen_execute"].get("defer_loading"), loaded["mcp__zenmode__zen_execute"]

        check("claude session: the meta tools load up front (anthropic/alwaysLoad)", meta_tools_load_up_front)

        def deferred_without_always_load() -> None:
            for label, args in (("no-always-load", ["--no-always-load"]), ("full", ["--full"])):
                requests, _ = session(label, args, [], "say hi")
                names = [n for n in tool_names(requests[0]) if n.startswith("mcp__zenmode__")]
                assert names == [], f"{label}: loaded up front although not marked: {names}"

        check("claude session: unmarked tools stay deferred (--no-always-load, --full)", deferred_without_always_load)

        statement = "Rewriting the service in Rust will fix the outage"

        def zen_task() -> None:
            plan: list[Step] = [
                ("tool", ("mcp__zenmode__zen_select_mode", {"task_description": f"challenge this claim: {statement}"})),
                ("tool", ("mcp__zenmode__zen_execute",
                          lambda reply: {"mode": reply["mode"], "request": {"prompt": statement}})),
                ("text", "The claim does not hold."),
            ]
            requests, stdout = session("zen-task", [], plan, "Is this claim right? " + statement)
            assert len(requests) == 3, f"{len(requests)} model requests"
            result = last_tool_result(requests[-1]["messages"])
            assert isinstance(result, dict) and result.get("status") == "challenge_accepted", result
            print(f"    zen: {len(requests)} model requests, {o200k(zenmode, requests):,} o200k tokens sent", flush=True)

        check("claude session: zen select -> execute -> answer in 3 model requests", zen_task)

        def zen_known_mode() -> None:
            plan: list[Step] = [
                ("tool", ("mcp__zenmode__zen_execute", {"mode": "challenge", "request": {"prompt": statement}})),
                ("text", "The claim does not hold."),
            ]
            requests, _ = session("zen-known", [], plan, "Is this claim right? " + statement)
            assert len(requests) == 2, f"{len(requests)} model requests"
            result = last_tool_result(requests[-1]["messages"])
            assert isinstance(result, dict) and result.get("status") == "challenge_accepted", result
            print(f"    zen, mode known: {len(requests)} model requests, {o200k(zenmode, requests):,} o200k tokens sent",
                  flush=True)

        check("claude session: zen with a known mode: execute -> answer in 2 model requests", zen_known_mode)

        def full_task() -> None:
            plan: list[Step] = [
                ("tool", ("ToolSearch", {"query": "select:mcp__zenmode__challenge"})),
                ("tool", ("mcp__zenmode__challenge", {"prompt": statement})),
                ("text", "The claim does not hold."),
            ]
            requests, _ = session("full-task", ["--full"], plan, "Is this claim right? " + statement)
            assert len(requests) == 3, f"{len(requests)} model requests"
            result = last_tool_result(requests[-1]["messages"])
            assert isinstance(result, dict) and result.get("status") == "challenge_accepted", result
            print(f"    full: {len(requests)} model requests, {o200k(zenmode, requests):,} o200k tokens sent", flush=True)

        check("claude session: --full tool search -> call -> answer in 3 model requests", full_task)
    finally:
        fake.close()
