"""A 2026-07-28 MCP server (MCP Python SDK) whose one tool needs two rounds
of input: it answers `tools/call` with an `InputRequiredResult` asking the
user's name, then another asking a colour, and only the third call (with
both answers and its own `requestState`) completes. For
tests/gateway_flowback.rs: the rounds pass through zenmode.

Its own `requestState` is a readable string on purpose: the test checks
that the client never sees it (zenmode wraps it) and that it comes back
unchanged.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)

server = MCPServer("mrtr-test")


def ask(key: str, message: str, state: str) -> InputRequiredResult:
    schema = {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}
    request = ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
    return InputRequiredResult(input_requests={key: request}, request_state=state)


def answer(responses: Any, key: str) -> str | None:
    if not responses or key not in responses:
        return None
    value = responses[key]
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True)
    return ((value or {}).get("content") or {}).get(key)


@server.tool(description="Greets after asking a name and a colour, one round each")
async def two_rounds(topic: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    state = ctx.request_state
    responses = ctx.input_responses
    if state is None:
        return ask("name", f"Your name, for {topic}?", f"upstream-round-1|{topic}")
    parts = state.split("|")
    if parts[0] == "upstream-round-1" and len(parts) == 2:
        name = answer(responses, "name")
        if name is None:
            return ask("name", f"Your name, for {topic}?", state)
        return ask("colour", f"A colour, {name}?", f"upstream-round-2|{parts[1]}|{name}")
    if parts[0] == "upstream-round-2" and len(parts) == 3:
        colour = answer(responses, "colour")
        if colour is None:
            return ask("colour", f"A colour, {parts[2]}?", state)
        return CallToolResult(
            content=[TextContent(type="text", text=f"{parts[1]}: {parts[2]} likes {colour}")]
        )
    return CallToolResult(
        content=[TextContent(type="text", text=f"unexpected requestState {state!r}")], is_error=True
    )


if __name__ == "__main__":
    server.run("stdio")
