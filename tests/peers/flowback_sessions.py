"""Two MCP Python SDK sessions over zenmode's Streamable HTTP, sharing one
upstream, for tests/gateway_flowback.rs: while session A's long call runs
there, session B's call asks for sampling, which zenmode cannot match to
one of them and refuses; once A's call is over, B's next one is answered by
B. argv[1] is zenmode's /mcp URL. Prints one JSON object.
"""

from __future__ import annotations

import asyncio
import json
import sys

from mcp import Client, types


def sampler(name: str, asked: list[str]):
    async def sampling(_context, params: types.CreateMessageRequestParams):
        asked.append(name)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"answered by {name}"),
            model="flowback-test-model",
        )

    return sampling


def text(result: types.CallToolResult) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def main() -> None:
    url = sys.argv[1]
    asked: list[str] = []
    out: dict[str, object] = {}

    def execute(mode: str, request: dict) -> dict:
        return {"mode": mode, "request": request}

    async with (
        Client(url, mode="legacy", sampling_callback=sampler("A", asked), read_timeout_seconds=60) as a,
        Client(url, mode="legacy", sampling_callback=sampler("B", asked), read_timeout_seconds=60) as b,
    ):
        # Start the upstream first, so the timing below is the calls'.
        await b.call_tool("zen_execute", execute("everything__get-sum", {"a": 1, "b": 1}))
        long = asyncio.create_task(
            a.call_tool(
                "zen_execute",
                execute("everything__trigger-long-running-operation", {"duration": 4, "steps": 2}),
            )
        )
        await asyncio.sleep(1.0)
        during = await b.call_tool("zen_execute", execute("everything__trigger-sampling-request", {"prompt": "hi"}))
        out["during"] = {"isError": during.is_error, "text": text(during)}
        finished = await long
        out["long"] = {"isError": finished.is_error, "text": text(finished)}
        after = await b.call_tool("zen_execute", execute("everything__trigger-sampling-request", {"prompt": "hi"}))
        out["after"] = {"isError": after.is_error, "text": text(after)}
    out["asked"] = asked
    print(json.dumps(out))


if __name__ == "__main__":
    asyncio.run(main())
