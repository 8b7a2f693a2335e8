"""Tokens per task in a real client: Claude Code (`claude -p`) against the
loopback fake of the Messages API in claude_session.py, playing a scripted
model through a set of tasks, under zenmode's default list (select then
execute, and execute alone when the model already knows the mode) and under
`--full` (Claude Code's tool search, then the mode's own tool).

For each task and flow it records how many model requests Claude Code made
and the o200k tokens of what it sent (tools, system and messages, summed
over the requests). The "eager client" rows replay the same flows with the
MCP Python SDK as a client that sends every listed tool on every request
(Cursor, Codex without tool search, Claude Desktop): the tokens of the tool
list plus the conversation, per request, with no system prompt.

    tests/peers/.venv/bin/python tests/peers/session_bench.py [--json FILE]

Needs ZENMODE_BIN and tests/peers/node_modules (run.sh installs both).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from claude_session import FakeModel, Step, last_tool_result

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ZENMODE_BIN = os.path.abspath(os.environ.get("ZENMODE_BIN") or str(REPO / "target" / "release" / "zenmode"))
CLAUDE = HERE / "node_modules" / ".bin" / "claude"
TIMEOUT = 120


def workflow(step: str, findings: str, final: bool, number: int, total: int) -> dict[str, Any]:
    return {"step": step, "step_number": number, "total_steps": total, "next_step_required": not final,
            "findings": findings, "use_assistant_model": False}


# (mode, what the user asks, the requests of each step; later steps continue the thread)
TASKS: list[tuple[str, str, list[dict[str, Any]]]] = [
    ("challenge", "Is this right? Rewriting the service in Rust will fix the outage.",
     [{"prompt": "Rewriting the service in Rust will fix the outage"}]),
    ("version", "Which version of the zen server is running?", [{}]),
    ("listmodels", "Which models can the zen tools use?", [{}]),
    ("planner", "Plan the migration of our billing monolith to services.",
     [{"step": "Goal: split billing out of the monolith; list what billing owns", "step_number": 1,
       "total_steps": 2, "next_step_required": True},
      {"step": "Order the cut: invoices first, then payments, then dunning", "step_number": 2,
       "total_steps": 2, "next_step_required": False}]),
    ("debug", "Find why POST /orders returns 500 since the last deploy.",
     [workflow("Reproduce the 500 on POST /orders", "Fails only with a coupon", False, 1, 2),
      workflow("Trace the coupon path", "Coupon lookup dereferences a missing row", True, 2, 2)]),
    ("thinkdeep", "Think hard about whether our cache invalidation design is sound.",
     [workflow("List the assumptions behind the cache", "Writes go through one service", True, 1, 1)]),
    ("analyze", "Analyze how data flows through the ingestion package.",
     [workflow("Map the packages and how data flows", "Three stages, one queue", True, 1, 1)]),
    ("secaudit", "Audit the admin panel for security problems.",
     [workflow("Find where user input enters the admin panel", "Two forms, one upload", True, 1, 1)]),
    ("refactor", "Suggest how to refactor the UserService class.",
     [workflow("List UserService's responsibilities", "Auth, profile and billing in one class", True, 1, 1)]),
    ("tracer", "Trace how PaymentGateway.charge is called.",
     [{"step": "Find PaymentGateway.charge and its callers", "step_number": 1, "total_steps": 1,
       "next_step_required": False, "findings": "Two callers: checkout and retries",
       "target_description": "PaymentGateway.charge", "trace_mode": "precision"}]),
]


def with_continuation(request: dict[str, Any], reply: Any) -> dict[str, Any]:
    if isinstance(reply, dict) and reply.get("continuation_id"):
        return {**request, "continuation_id": reply["continuation_id"]}
    return request


def plans(mode: str, task: str, steps: list[dict[str, Any]]) -> dict[str, list[Step]]:
    def zen_execute(request: dict[str, Any], first: bool) -> Step:
        if first:
            return ("tool", ("mcp__zenmode__zen_execute", {"mode": mode, "request": request}))
        return ("tool", ("mcp__zenmode__zen_execute",
                         lambda reply, r=request: {"mode": mode, "request": with_continuation(r, reply)}))

    def own_tool(request: dict[str, Any], first: bool) -> Step:
        if first:
            return ("tool", (f"mcp__zenmode__{mode}", request))
        return ("tool", (f"mcp__zenmode__{mode}", lambda reply, r=request: with_continuation(r, reply)))

    answer: Step = ("text", "Done.")
    return {
        "zen": [("tool", ("mcp__zenmode__zen_select_mode", {"task_description": task}))]
               + [zen_execute(r, False) for r in steps] + [answer],
        "zen (mode known)": [zen_execute(r, i == 0) for i, r in enumerate(steps)] + [answer],
        "full": [("tool", ("ToolSearch", {"query": f"select:mcp__zenmode__{mode}"}))]
                + [own_tool(r, i == 0) for i, r in enumerate(steps)] + [answer],
    }


def count_tokens(value: Any) -> int:
    done = subprocess.run([ZENMODE_BIN, "tokens", "--count-stdin"], input=json.dumps(value), capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)["o200k"]


def claude_runs() -> dict[tuple[str, str], tuple[int, int, bool]]:
    """(task mode, flow) -> (model requests, o200k tokens sent, task finished)."""
    home = Path(tempfile.mkdtemp(prefix="zenmode-bench-home-"))
    drop = ("ANTHROPIC_", "CLAUDE", "AWS_", "GOOGLE_", "VERTEX", "OPENAI")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(drop)}
    fake = FakeModel()
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), CI="true", NO_COLOR="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", RUST_LOG="error",
               ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-fake-loopback")
    results = {}
    try:
        for mode, task, steps in TASKS:
            for flow, plan in plans(mode, task, steps).items():
                args = ["serve", "--full"] if flow == "full" else ["serve"]
                config = home / "mcp.json"
                config.write_text(json.dumps({"mcpServers": {"zenmode": {"command": ZENMODE_BIN, "args": args}}}))
                fake.plan, fake.requests = plan, []
                done = subprocess.run(
                    [str(CLAUDE), "-p", task, "--mcp-config", str(config), "--strict-mcp-config",
                     "--allowedTools", "mcp__zenmode", "--output-format", "json"],
                    cwd=home, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
                requests = list(fake.requests)
                result = last_tool_result(requests[-1]["messages"]) if requests else None
                finished = done.returncode == 0 and isinstance(result, dict) and "error" not in result
                sent = sum(count_tokens({k: r.get(k) for k in ("tools", "system", "messages")}) for r in requests)
                results[(mode, flow)] = (len(requests), sent, finished)
                print(f"  claude-code {mode:<11} {flow:<17} {len(requests)} requests {sent:>7,} o200k"
                      f"{'' if finished else '  (did not finish: ' + repr(result)[:120] + ')'}", flush=True)
    finally:
        fake.close()
        shutil.rmtree(home, ignore_errors=True)
    return results


async def eager_runs() -> dict[tuple[str, str], tuple[int, int, bool]]:
    """The same flows as an eager client: every listed tool on every request."""
    from mcp import Client, StdioServerParameters

    results = {}
    for flow, args in (("zen", []), ("zen (mode known)", []), ("full", ["--full"])):
        server = StdioServerParameters(command=ZENMODE_BIN, args=["serve", *args], env={"RUST_LOG": "error"})
        async with Client(server, mode="legacy") as client:
            tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                     for t in (await client.list_tools()).tools]
            for mode, task, steps in TASKS:
                plan = plans(mode, task, steps)[flow]
                messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
                sent, requests, reply, finished = 0, 0, None, True
                for kind, payload in plan:
                    requests += 1
                    sent += count_tokens({"tools": tools, "messages": messages})
                    if kind == "text":
                        break
                    name, tool_input = payload
                    if name == "ToolSearch":  # an eager client has every tool already
                        requests -= 1
                        sent -= count_tokens({"tools": tools, "messages": messages})
                        continue
                    tool_input = tool_input(reply) if callable(tool_input) else tool_input
                    tool = name.removeprefix("mcp__zenmode__")
                    result = await client.call_tool(tool, tool_input)
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    try:
                        reply = json.loads(text)
                    except ValueError:
                        reply = text
                    finished = finished and not result.is_error
                    messages.append({"role": "assistant", "content": [
                        {"type": "tool_use", "id": f"t{requests}", "name": name, "input": tool_input}]})
                    messages.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"t{requests}", "content": text}]})
                results[(mode, flow)] = (requests, sent, finished)
                print(f"  eager       {mode:<11} {flow:<17} {requests} requests {sent:>7,} o200k"
                      f"{'' if finished else '  (did not finish)'}", flush=True)
    return results


def table(claude: dict, eager: dict) -> str:
    flows = ["zen", "zen (mode known)", "full"]
    lines = ["| client | flow | tasks finished | model requests | o200k tokens sent | vs full |",
             "|---|---|---|---|---|---|"]
    for label, results in (("Claude Code", claude), ("eager client", eager)):
        totals = {}
        for flow in flows:
            rows = [results[(mode, flow)] for mode, _, _ in TASKS if (mode, flow) in results]
            totals[flow] = (sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows), len(rows))
        for flow in flows:
            requests, tokens, finished, count = totals[flow]
            ratio = tokens / totals["full"][1] if totals["full"][1] else 0
            lines.append(f"| {label} | {flow} | {finished}/{count} | {requests} | {tokens:,} | {ratio:.2f}x |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the per-task figures here")
    parser.add_argument("--eager-only", action="store_true", help="skip the Claude Code runs")
    options = parser.parse_args()
    print(f"session bench: {len(TASKS)} tasks, zenmode {ZENMODE_BIN}", flush=True)
    claude = {} if options.eager_only else claude_runs()
    eager = asyncio.run(eager_runs())
    print()
    print(table(claude, eager) if claude else table(eager, eager))
    if options.json:
        options.json.write_text(json.dumps({
            "claude_code": {f"{m}|{f}": list(v) for (m, f), v in claude.items()},
            "eager": {f"{m}|{f}": list(v) for (m, f), v in eager.items()},
        }, indent=1))
    unfinished = [k for k, v in {**claude, **eager}.items() if not v[2]]
    return 1 if unfinished else 0


if __name__ == "__main__":
    sys.exit(main())
