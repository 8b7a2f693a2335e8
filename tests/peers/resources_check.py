"""Resources, prompts and completion of server-everything, as one MCP Python
SDK client sees them: connected directly, or through zenmode's gateway.

Usage: resources_check.py transcript PREFIX COMMAND [ARGS...]
       resources_check.py bench PREFIX COUNT COMMAND [ARGS...]
       resources_check.py compare COUNT ZENMODE_LAUNCHER UPSTREAM_COMMAND

`transcript` prints one JSON object with every answer (capabilities, the
resource pages, templates, reads of text and blob resources, prompts, prompt
gets with arguments, completions, an update notification after a
subscription, and the tool names). PREFIX is what the server puts before the
upstream's prompt and tool names ("" directly, "everything__" through
zenmode); the Rust test (tests/gateway_resources.rs) compares the two.

`bench` times COUNT `resources/read` and COUNT `prompts/get` calls in one
session and prints their medians in microseconds as JSON. `compare` runs
`bench` directly against the upstream and through zenmode (whose launcher
serves that upstream as "everything"), and prints both with the difference
(scripts/resources_bench.sh sets it up).
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import statistics
import sys
import time
import warnings
from typing import Any

from mcp import Client, StdioServerParameters, types

warnings.simplefilter("ignore")
TIMEOUT = 30.0
UPDATE_WAIT = 15.0


TIME = re.compile(r"\d{1,2}:\d{2}:\d{2}( [AP]M)?")


def dump(model: Any) -> Any:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


def timeless(value: Any) -> Any:
    """server-everything writes the time into dynamic resources: a blob is
    shown decoded and clock times are masked, so two runs compare."""
    if isinstance(value, dict):
        value = dict(value)
        if isinstance(value.get("blob"), str):
            value["blob"] = base64.b64decode(value["blob"]).decode("utf-8", "replace")
        return {k: timeless(v) for k, v in value.items()}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    if isinstance(value, str):
        return TIME.sub("<time>", value)
    return value


async def transcript(prefix: str, command: list[str]) -> dict[str, Any]:
    updated: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        inner = getattr(message, "root", message)
        if getattr(inner, "method", "") == "notifications/resources/updated":
            await updated.put(inner.params.uri)

    server = StdioServerParameters(command=command[0], args=command[1:])
    out: dict[str, Any] = {}
    async with Client(server, mode="legacy", read_timeout_seconds=TIMEOUT,
                      message_handler=on_message) as client:
        caps = dump(client.server_capabilities)
        out["capabilities"] = {k: caps.get(k) for k in ("resources", "prompts", "completions")}
        out["tools"] = sorted(t.name for t in (await client.list_tools()).tools)

        pages, cursor = [], None
        while True:
            page = await client.list_resources(cursor=cursor, cache_mode="refresh")
            pages.append([dump(r) for r in page.resources])
            cursor = page.next_cursor
            if not cursor or len(pages) > 20:
                break
        out["resource_pages"] = pages
        templates = await client.list_resource_templates(cache_mode="refresh")
        out["templates"] = [dump(t) for t in templates.resource_templates]

        listed = pages[0][0]["uri"]
        reads = {}
        for uri in (listed, "demo://resource/dynamic/text/3", "demo://resource/dynamic/blob/3"):
            reads[uri] = [dump(c) for c in (await client.read_resource(uri, cache_mode="refresh")).contents]
        out["reads"] = reads
        try:
            await client.read_resource("demo://no/such/resource", cache_mode="refresh")
            out["unknown_read"] = "answered"
        except Exception:  # noqa: BLE001 - only that it failed matters
            out["unknown_read"] = "error"

        prompts = await client.list_prompts(cache_mode="refresh")
        out["prompts"] = [dump(p) for p in prompts.prompts]
        gets = []
        for name, arguments in (
            ("simple-prompt", None),
            ("args-prompt", {"city": "Lyon", "state": "Rhône"}),
            ("resource-prompt", {"resourceType": "Text", "resourceId": "2"}),
        ):
            result = await client.get_prompt(prefix + name, arguments)
            gets.append(dump(result)["messages"])
        out["prompt_gets"] = gets

        completions = []
        prompt_ref = types.PromptReference(type="ref/prompt", name=prefix + "completable-prompt")
        result = await client.complete(prompt_ref, {"name": "department", "value": "E"})
        completions.append(dump(result.completion))
        result = await client.complete(prompt_ref, {"name": "name", "value": ""},
                                       context_arguments={"department": "Engineering"})
        completions.append(dump(result.completion))
        template_ref = types.ResourceTemplateReference(
            type="ref/resource", uri="demo://resource/dynamic/text/{resourceId}")
        result = await client.complete(template_ref, {"name": "resourceId", "value": "1"})
        completions.append(dump(result.completion))
        out["completions"] = completions

        watched = pages[0][1]["uri"]
        await client.subscribe_resource(watched)
        await client.call_tool(*toggle_updates(prefix))
        first = await asyncio.wait_for(updated.get(), UPDATE_WAIT)
        out["update"] = first
        await client.unsubscribe_resource(watched)
        await client.call_tool(*toggle_updates(prefix))
    return timeless(out)


def toggle_updates(prefix: str) -> tuple[str, dict[str, Any]]:
    tool = "toggle-subscriber-updates"
    if prefix:
        return "zen_execute", {"mode": prefix + tool, "request": {}}
    return tool, {}


async def bench(prefix: str, count: int, command: list[str]) -> dict[str, Any]:
    server = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(server, mode="legacy", read_timeout_seconds=TIMEOUT) as client:
        uri = "demo://resource/dynamic/text/1"
        name = prefix + "args-prompt"
        # Warm up: start the upstream, learn the owners.
        await client.read_resource(uri, cache_mode="refresh")
        await client.get_prompt(name, {"city": "Oslo"})
        reads, gets = [], []
        for _ in range(count):
            start = time.perf_counter()
            await client.read_resource(uri, cache_mode="refresh")
            reads.append(time.perf_counter() - start)
            start = time.perf_counter()
            await client.get_prompt(name, {"city": "Oslo"})
            gets.append(time.perf_counter() - start)
    return {
        "count": count,
        "read_median_us": round(statistics.median(reads) * 1e6),
        "get_median_us": round(statistics.median(gets) * 1e6),
    }


def main() -> None:
    what = sys.argv[1]
    if what == "transcript":
        result = asyncio.run(transcript(sys.argv[2], sys.argv[3:]))
    elif what == "bench":
        result = asyncio.run(bench(sys.argv[2], int(sys.argv[3]), sys.argv[4:]))
    elif what == "compare":
        count, launcher, upstream = int(sys.argv[2]), sys.argv[3], sys.argv[4]
        direct = asyncio.run(bench("", count, [upstream]))
        through = asyncio.run(bench("everything__", count, [launcher]))
        result = {
            "count": count,
            "direct": direct,
            "zenmode": through,
            "added_read_median_us": through["read_median_us"] - direct["read_median_us"],
            "added_get_median_us": through["get_median_us"] - direct["get_median_us"],
        }
    else:
        raise SystemExit(f"unknown command {what!r}")
    print(json.dumps(result, ensure_ascii=False, sort_keys=True))


if __name__ == "__main__":
    main()
