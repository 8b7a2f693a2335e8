"""A 2026-07-28 MCP Python SDK client driving input-required rounds through
zenmode by hand, for tests/gateway_flowback.rs.

argv[1] is JSON: {a: {command, env}, b: {command, env} | null, mode, other_mode,
c: {command, env} | null, by_name}; c serves every mode as a tool.
`a` and `b` are two zenmode processes (b shares a's key but names the
server differently). Prints one JSON object of what happened; the test
asserts on it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp import Client, StdioServerParameters, types

ANSWERS = {"name": "Ada", "colour": "green"}


def params(side: dict[str, Any]) -> StdioServerParameters:
    env = dict(os.environ)
    env.update(side.get("env") or {})
    return StdioServerParameters(command=side["command"][0], args=side["command"][1:], env=env)


def dump(result: Any) -> Any:
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


def answer(required: types.InputRequiredResult) -> dict[str, Any]:
    responses = {}
    for key, request in (required.input_requests or {}).items():
        responses[key] = {"action": "accept", "content": {key: ANSWERS[key]}}
    return responses


async def main() -> None:
    spec = json.loads(sys.argv[1])
    mode = spec["mode"]
    arguments = {"mode": mode, "request": {"topic": "tea"}}
    out: dict[str, Any] = {}

    async def elicitation(_context, p):
        key = list(p.requested_schema["properties"])[0]
        return types.ElicitResult(action="accept", content={key: ANSWERS[key]})

    async with Client(
        params(spec["a"]), mode="2026-07-28", elicitation_callback=elicitation, read_timeout_seconds=60
    ) as client:
        session = client.session
        call = lambda **kw: session.call_tool("zen_execute", arguments, allow_input_required=True, **kw)  # noqa: E731
        # Round by round.
        first = await call()
        out["first"] = dump(first)
        if not isinstance(first, types.InputRequiredResult):
            print(json.dumps(out))
            return
        second = await call(input_responses=answer(first), request_state=first.request_state)
        out["second"] = dump(second)
        final = await call(input_responses=answer(second), request_state=second.request_state)
        out["final"] = dump(final)
        # The same state again: a replay.
        out["replayed"] = dump(await call(input_responses=answer(first), request_state=first.request_state))
        # A changed state.
        fresh = await call()
        state = fresh.request_state
        flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
        out["tampered"] = dump(await call(input_responses=answer(fresh), request_state=flipped))
        # The upstream's own state, passed by a client that bypasses zenmode's.
        out["foreign"] = dump(await call(input_responses=answer(fresh), request_state="upstream-round-1|tea"))
        # The SDK's own loop, answering through its callback.
        out["auto"] = dump(await client.call_tool("zen_execute", arguments))
        # A state for the next process, which knows the server by another name.
        handoff = await call()
    if spec.get("b"):
        async with Client(params(spec["b"]), mode="2026-07-28", read_timeout_seconds=60) as other:
            moved = {"mode": spec["other_mode"], "request": {"topic": "tea"}}
            out["unknown_server"] = dump(
                await other.session.call_tool(
                    "zen_execute",
                    moved,
                    input_responses=answer(handoff),
                    request_state=handoff.request_state,
                    allow_input_required=True,
                )
            )
    if spec.get("c"):
        # The mode called by name (a strategy that lists every mode).
        async with Client(
            params(spec["c"]), mode="2026-07-28", elicitation_callback=elicitation, read_timeout_seconds=60
        ) as named:
            tool = spec["by_name"]
            out["by_name_first"] = dump(
                await named.session.call_tool(tool, {"topic": "tea"}, allow_input_required=True)
            )
            out["by_name"] = dump(await named.call_tool(tool, {"topic": "tea"}))
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
