"""A Python SDK client that answers what a server asks back (sampling,
elicitation, roots), for tests/gateway_flowback.rs.

Reads one JSON object from argv[1]:
  command: [program, args...]    the server to start over stdio
  env: {NAME: value}             added to its environment
  sampling, elicitation: bool    whether to declare (and answer) them
  roots: [path, ...] | null      roots to declare; null declares none
  calls: [{tool, arguments, sleep_before?, until_contains?, within?}
          | {set_roots: [path, ...]}]
        (set_roots changes the roots and sends roots/list_changed;
        until_contains repeats the call every 0.2 s, for at most `within`
        seconds (20), until its result's JSON holds that text: for state
        the server fetches on its own time, like its roots)
and prints one JSON line: {"results": [...], "asked": [...]}, each result
a CallToolResult as JSON or {"error": text}, and `asked` the methods the
server asked of this client, in order. Every answer is deterministic, so a
direct session and one through zenmode can be compared.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from mcp import Client, StdioServerParameters, types


async def main() -> None:
    spec = json.loads(sys.argv[1])
    asked: list[str] = []

    async def sampling(_context, params: types.CreateMessageRequestParams):
        asked.append("sampling/createMessage")
        last = params.messages[-1].content
        text = getattr(last, "text", "")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"sampled[{params.max_tokens}]: {text}"),
            model="flowback-test-model",
            stop_reason="endTurn",
        )

    async def elicitation(_context, params: types.ElicitRequestParams):
        asked.append("elicitation/create")
        schema = getattr(params, "requested_schema", None) or {}
        content = {}
        for name, prop in (schema.get("properties") or {}).items():
            kind = prop.get("type")
            if "enum" in prop:
                content[name] = prop["enum"][0]
            elif kind == "string":
                content[name] = "Ada"
            elif kind in ("integer", "number"):
                content[name] = prop.get("minimum", 7)
            elif kind == "boolean":
                content[name] = True
        return types.ElicitResult(action="accept", content=content)

    async def roots(_context):
        asked.append("roots/list")
        return types.ListRootsResult(
            roots=[types.Root(uri=Path(p).resolve().as_uri(), name=Path(p).name) for p in spec["roots"]]
        )

    env = dict(os.environ)
    env.update(spec.get("env") or {})
    params = StdioServerParameters(command=spec["command"][0], args=spec["command"][1:], env=env)
    results = []
    async with Client(
        params,
        mode="legacy",
        read_timeout_seconds=60,
        sampling_callback=sampling if spec.get("sampling") else None,
        elicitation_callback=elicitation if spec.get("elicitation") else None,
        list_roots_callback=roots if spec.get("roots") is not None else None,
    ) as client:
        for call in spec["calls"]:
            if "set_roots" in call:
                spec["roots"] = call["set_roots"]
                await client.session.send_roots_list_changed()
                continue
            await asyncio.sleep(call.get("sleep_before", 0))
            until = call.get("until_contains")
            deadline = asyncio.get_running_loop().time() + call.get("within", 20)
            while True:
                try:
                    result = await client.call_tool(call["tool"], call.get("arguments") or {})
                    answer = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                except Exception as error:  # the test compares what failed, too
                    answer = {"error": str(error)}
                if until is None or until in json.dumps(answer) or asyncio.get_running_loop().time() > deadline:
                    break
                await asyncio.sleep(0.2)
            results.append(answer)
    print(json.dumps({"results": results, "asked": asked}))


if __name__ == "__main__":
    asyncio.run(main())
