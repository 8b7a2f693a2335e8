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
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

import large_tasks
from claude_session import FakeModel, Step, TokenCounter, last_tool_result

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


def find_continuation(reply: Any) -> str | None:
    """The continuation_id anywhere in a reply (strategies may wrap results)."""
    if isinstance(reply, dict):
        if isinstance(reply.get("continuation_id"), str):
            return reply["continuation_id"]
        values = list(reply.values())
    elif isinstance(reply, list):
        values = reply
    else:
        return None
    for value in values:
        found = find_continuation(value)
        if found:
            return found
    return None


def with_continuation(request: dict[str, Any], reply: Any) -> dict[str, Any]:
    found = find_continuation(reply)
    return {**request, "continuation_id": found} if found else request


def category(mode: str) -> str:
    return json.loads((REPO / "modes" / f"{mode}.json").read_text())["category"]


UNION = REPO.parent / "shared" / "catalogs" / "union_all.json"

# The server's arguments for each flow; "zen" and "zen (select first)" are
# the same default server, played by a model that trusts zen_execute's list
# of modes or one that always asks zen_select_mode first.
FLOW_ARGS: dict[str, list[str]] = {
    "zen": [],
    "zen (select first)": [],
    "full": ["--full"],
    "lazy": ["--strategy", "lazy"],
    "categories": ["--strategy", "categories"],
    "groups": ["--strategy", "groups"],
    "discover": ["--strategy", "discover"],
    # A large catalog: the 1,155 tools of ../shared/catalogs/union_all.json
    # beside the built-in modes (the tasks still run built-in modes).
    "zen, +1,155 tools": ["--catalog", str(UNION)],
    "full, +1,155 tools": ["--full", "--catalog", str(UNION)],
}
BASELINE = {flow: "full, +1,155 tools" if "1,155" in flow else "full" for flow in FLOW_ARGS}


def plans(mode: str, task: str, steps: list[dict[str, Any]]) -> dict[str, list[Step]]:
    """Each flow's scripted model turns; steps after the first carry the
    continuation_id of the previous reply."""
    def chained(tool: str, wrap: Callable[[dict[str, Any]], dict[str, Any]]) -> list[Step]:
        return [("tool", (tool, wrap(r) if i == 0 else
                          (lambda reply, r=r: wrap(with_continuation(r, reply)))))
                for i, r in enumerate(steps)]

    zen_execute = chained("mcp__zenmode__zen_execute", lambda r: {"mode": mode, "request": r})
    own_tool = chained(f"mcp__zenmode__{mode}", lambda r: r)
    answer: Step = ("text", "Done.")
    # Claude Code defers tools that join the list later behind its tool search.
    load: Step = ("tool", ("ToolSearch", {"query": f"select:mcp__zenmode__{mode}"}))
    return {
        "zen": zen_execute + [answer],
        "zen (select first)": [("tool", ("mcp__zenmode__zen_select_mode", {"task_description": task}))]
                              + zen_execute + [answer],
        "full": [load] + own_tool + [answer],
        "lazy": [("tool", ("mcp__zenmode__manage_tools", {"action": "enable", "names": mode})), load]
                + own_tool + [answer],
        "categories": [("tool", ("mcp__zenmode__get_tool_schema", {"toolName": mode})), load]
                      + own_tool + [answer],
        "groups": [("tool", (f"mcp__zenmode__activate_{category(mode)}", {})), load] + own_tool + [answer],
        "discover": [("tool", ("mcp__zenmode__detail", {"names": [mode]}))]
                    + chained("mcp__zenmode__call", lambda r: {"command": mode, "input": r}) + [answer],
        "zen, +1,155 tools": zen_execute + [answer],
        "full, +1,155 tools": [load] + own_tool + [answer],
    }


UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# `version` reports seconds since start, inside JSON text that is itself JSON-quoted.
UPTIME = re.compile(r'(\\?"uptime_seconds\\?":)\s*\d+')
# Design 003's envelope times each call.
ELAPSED = re.compile(r'(\\?"executionTimeMs\\?":)\s*\d+')
# When a result handle expires.
EXPIRES = re.compile(r'(until |\\?"expires_at\\?":\s*\\?")\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ')


def count_text(text: str) -> int:
    """o200k tokens of `text`, with every UUID (continuation ids are random)
    replaced by one fixed id, `version`'s uptime and design 003's
    executionTimeMs by 0 and a result handle's expiry by a fixed time, so
    the same flow always counts the same."""
    text = UUID.sub("00000000-0000-4000-8000-000000000000", text)
    text = UPTIME.sub(r"\1 0", text)
    text = ELAPSED.sub(r"\g<1>0", text)
    text = EXPIRES.sub(r"\g<1>2026-01-01T00:00:00Z", text)
    return TokenCounter.of(ZENMODE_BIN).o200k(text)


def count_tokens(value: Any) -> int:
    """o200k tokens of `value` as JSON (see count_text)."""
    return count_text(json.dumps(value))


def claude_env(home: Path, fake: FakeModel) -> dict[str, str]:
    """Claude Code's environment: a home of its own, the fake model, nothing of the caller's accounts."""
    drop = ("ANTHROPIC_", "CLAUDE", "AWS_", "GOOGLE_", "VERTEX", "OPENAI")
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith(drop)}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), CI="true", NO_COLOR="1",
               DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", RUST_LOG="error",
               ANTHROPIC_BASE_URL=fake.url, ANTHROPIC_API_KEY="sk-fake-loopback")
    return env


def claude_large_runs(ws: large_tasks.Workspace) -> dict[tuple[str, str], tuple[int, int, bool]]:
    """The large tasks in Claude Code; see large_tasks.claude_runs."""
    home = Path(tempfile.mkdtemp(prefix="zenmode-bench-home-"))
    fake = FakeModel()
    env = claude_env(home, fake)

    def run(args: list[str], server_env: dict[str, str], prompt: str) -> bool:
        config = home / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {"zenmode": {
            "command": ZENMODE_BIN, "args": args, "env": {"RUST_LOG": "error", **server_env}}}}))
        done = subprocess.run(
            [str(CLAUDE), "-p", prompt, "--mcp-config", str(config), "--strict-mcp-config",
             "--allowedTools", "mcp__zenmode", "--output-format", "json"],
            cwd=home, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT)
        if done.returncode != 0:
            print(f"    claude -p exit {done.returncode}: {done.stderr[-400:]!r}", flush=True)
        return done.returncode == 0

    try:
        return large_tasks.claude_runs(ws, ZENMODE_BIN, fake, run, count_text)
    finally:
        fake.close()
        shutil.rmtree(home, ignore_errors=True)


def claude_runs() -> dict[tuple[str, str], tuple[int, int, bool]]:
    """(task mode, flow) -> (model requests, o200k tokens sent, task finished)."""
    home = Path(tempfile.mkdtemp(prefix="zenmode-bench-home-"))
    fake = FakeModel()
    env = claude_env(home, fake)
    results = {}
    try:
        for mode, task, steps in TASKS:
            for flow, plan in plans(mode, task, steps).items():
                if flow not in FLOW_ARGS:
                    continue
                args = ["serve", *FLOW_ARGS[flow]]
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
    """The same flows as an eager client: every listed tool on every request.
    Each task gets its own session, so tools one task enabled never help the next."""
    from mcp import Client, StdioServerParameters

    def described(listed: Any) -> list[dict[str, Any]]:
        return [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in listed.tools]

    results = {}
    for flow, args in FLOW_ARGS.items():
        server = StdioServerParameters(command=ZENMODE_BIN, args=["serve", *args], env={"RUST_LOG": "error"})
        for mode, task, steps in TASKS:
            async with Client(server, mode="legacy") as client:
                tools = described(await client.list_tools())
                messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
                sent, requests, reply, finished = 0, 0, None, True
                for kind, payload in plans(mode, task, steps)[flow]:
                    name, tool_input = payload if kind == "tool" else ("", None)
                    if name == "ToolSearch":  # an eager client has every tool already
                        continue
                    requests += 1
                    sent += count_tokens({"tools": tools, "messages": messages})
                    if kind == "text":
                        break
                    tool_input = tool_input(reply) if callable(tool_input) else tool_input
                    result = await client.call_tool(name.removeprefix("mcp__zenmode__"), tool_input)
                    text = "".join(getattr(c, "text", "") for c in result.content)
                    try:
                        reply = json.loads(text)
                    except ValueError:
                        reply = text
                    finished = finished and not result.is_error
                    # Strategies that grow the list (lazy, groups) are listed again.
                    tools = described(await client.list_tools())
                    messages.append({"role": "assistant", "content": [
                        {"type": "tool_use", "id": f"t{requests}", "name": name, "input": tool_input}]})
                    messages.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"t{requests}", "content": text}]})
            results[(mode, flow)] = (requests, sent, finished)
            print(f"  eager       {mode:<11} {flow:<18} {requests} requests {sent:>7,} o200k"
                  f"{'' if finished else '  (did not finish)'}", flush=True)
    return results


def totals(results: dict) -> dict[str, dict[str, Any]]:
    """Per flow: requests, tokens and tasks finished, summed over the tasks, and the ratio to its baseline."""
    sums: dict[str, dict[str, Any]] = {}
    for flow in FLOW_ARGS:
        rows = [results[(mode, flow)] for mode, _, _ in TASKS if (mode, flow) in results]
        sums[flow] = {"requests": sum(r[0] for r in rows), "tokens": sum(r[1] for r in rows),
                      "finished": sum(r[2] for r in rows), "tasks": len(rows)}
    for flow, row in sums.items():
        base = sums[BASELINE[flow]]["tokens"]
        row["vs_full"] = round(row["tokens"] / base, 3) if base else 0.0
    return sums


def table(claude: dict, eager: dict) -> str:
    lines = ["| client | flow | tasks finished | model requests | o200k tokens sent | vs full |",
             "|---|---|---|---|---|---|"]
    for label, results in (("Claude Code", claude), ("eager client", eager)):
        if not results:
            continue
        for flow, row in totals(results).items():
            lines.append(f"| {label} | {flow} | {row['finished']}/{row['tasks']} | {row['requests']} "
                         f"| {row['tokens']:,} | {row['vs_full']:.2f}x |")
    return "\n".join(lines)


# Flows that cannot finish in Claude Code: their tools join the list during
# the session, and Claude Code does not take a changed list within a turn.
UNFINISHABLE_IN_CLAUDE = {"lazy", "categories", "groups"}


def problems(claude: dict, eager: dict) -> list[str]:
    """Unfinished tasks (other than the known ones) and missed targets."""
    found = []
    for label, results, skip in (("claude-code", claude, UNFINISHABLE_IN_CLAUDE), ("eager", eager, set())):
        for (mode, flow), (_, _, finished) in results.items():
            if not finished and flow not in skip:
                found.append(f"{label} {mode} {flow}: did not finish")
    for label, results, limit in (("claude-code", claude, 0.9), ("eager", eager, 0.1)):
        if not results:
            continue
        sums = totals(results)
        for flow in ("zen", "zen, +1,155 tools"):
            if flow not in sums:
                continue
            row, base = sums[flow], sums[BASELINE[flow]]
            if row["vs_full"] > limit:
                found.append(f"{label} {flow}: {row['vs_full']}x the full list's tokens (target {limit}x)")
            if row["requests"] > base["requests"]:
                found.append(f"{label} {flow}: {row['requests']} requests, more than full's {base['requests']}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the per-task figures and totals here")
    parser.add_argument("--eager-only", action="store_true", help="skip the Claude Code runs")
    parser.add_argument("--tasks", help="only these modes' tasks (comma-separated)")
    parser.add_argument("--flows", help="only these flows (separated by semicolons, as flow names hold commas; their baselines are kept)")
    parser.add_argument("--no-large", action="store_true", help="skip the tasks with large results")
    parser.add_argument("--large-only", action="store_true", help="only the tasks with large results")
    options = parser.parse_args()
    if options.tasks:
        keep = set(options.tasks.split(","))
        TASKS[:] = [t for t in TASKS if t[0] in keep]
    if options.flows:
        keep = {flow.strip() for flow in options.flows.split(";")}
        keep |= {BASELINE[flow] for flow in keep if flow in BASELINE}
        for flow in [f for f in FLOW_ARGS if f not in keep]:
            del FLOW_ARGS[flow]
    if options.large_only:
        TASKS.clear()
    print(f"session bench: {len(TASKS)} tasks, {len(FLOW_ARGS)} flows, zenmode {ZENMODE_BIN}", flush=True)
    claude = {} if options.eager_only or not TASKS else claude_runs()
    eager = asyncio.run(eager_runs()) if TASKS else {}
    print()
    print(table(claude, eager))
    large_claude: dict = {}
    large_eager: dict = {}
    handle_replies: dict = {}
    found = problems(claude, eager) if TASKS else []
    if not options.no_large:
        if not large_tasks.available():
            found.append("the large tasks need tests/upstreams/install.sh (server-filesystem, server-memory)")
        else:
            ws = large_tasks.Workspace()
            try:
                print(f"session bench: {len(large_tasks.TASKS)} tasks with large results, "
                      f"flows {', '.join(large_tasks.FLOWS)}", flush=True)
                large_claude = {} if options.eager_only else claude_large_runs(ws)
                large_eager, handle_replies = asyncio.run(large_tasks.eager_runs(ws, ZENMODE_BIN, count_text))
            finally:
                ws.close()
            print()
            print(large_tasks.table(large_claude, large_eager))
            # Claude Code keeps large results out of the conversation itself (a
            # file and a 2 KB preview), so its direct calls cost little but
            # cannot answer: there a script must answer, in no more requests.
            found += large_tasks.problems("claude-code", large_claude, None) + \
                large_tasks.problems("eager", large_eager) + large_tasks.handle_problems(handle_replies)
            print(f"largest reply carrying a result handle, in bytes: {handle_replies}")
    if options.json:
        def figures(results: dict, sums: Callable[[dict], dict]) -> dict:
            return {"tasks": {f"{m}|{f}": list(v) for (m, f), v in results.items()},
                    "totals": sums(results) if results else {}}

        options.json.write_text(json.dumps({
            "claude_code": figures(claude, totals), "eager": figures(eager, totals),
            "large": {"claude_code": figures(large_claude, large_tasks.totals),
                      "eager": figures(large_eager, large_tasks.totals),
                      "handle_reply_bytes": handle_replies},
        }, indent=1))
    for problem in found:
        print(f"session bench: {problem}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
