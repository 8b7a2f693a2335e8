"""Multi-step tasks whose intermediate results are large (issue 43, "Measure"),
over real upstream servers (npm `@modelcontextprotocol/server-filesystem` and
`server-memory`, installed by tests/upstreams/install.sh), each played in
four flows:

- `direct`: `zen_execute` calls as before result handles
  (`--result-handles off`), one per tool, every result in the conversation
  (parallel calls in one model turn where the task allows);
- `pipe`: design 003's `call`, `batch` and `pipe` (under `--strategy
  discover`, which lists them; handles off): a fixed chain where the next
  input is a field of the last output, a batch where calls are independent
  (no task here has such a chain: each needs the large value transformed);
- `script`: one `zen_execute` of the `script` mode, which makes the calls
  and returns only the answer;
- `handles`: the direct calls under the server's defaults: a result over
  16 KiB comes back as a preview and a handle, which the model passes to a
  script as `{"$result": id}` to get the answer.

The scripted model of each flow computes the task's answer from what it
saw, and every flow must reach the answer the set-up knows to be right.
session_bench.py runs these flows in the eager client and in Claude Code.
"""

from __future__ import annotations

import json
import random
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
UPSTREAMS = HERE.parent / "upstreams" / "node_modules" / ".bin"

# What the temporary root counts as, so that token counts do not depend on
# the random name of the folder.
ROOT_AS = "/tmp/zenbench"

NOTES, ENTITIES, LINKS, LINES = 500, 1200, 2400, 2000
HUGE_BYTES = 4 << 20
# The most bytes a reply that carries a result handle may take (issue 43).
HANDLE_REPLY_LIMIT = 2048
TOPICS = ["rust", "python", "databases", "networking", "security", "compilers", "graphics", "testing",
          "cloud", "editors", "music", "cooking"]
TOPIC = "compilers"
ENTITY_TYPES = ["person", "project", "service", "team", "document", "meeting"]
ENTITY_TYPE = "service"
FLOWS = ["direct", "pipe", "script", "handles"]
# Flows and the server arguments they add: direct calls and design 003's
# tools as before result handles (the server's default since issue 43).
FLOW_ARGS: dict[str, list[str]] = {"direct": ["--result-handles", "off"],
                                   "pipe": ["--strategy", "discover", "--result-handles", "off"],
                                   "script": [], "handles": []}

# Actions of the scripted model: a turn of tool calls, or its final answer.
Calls = list[tuple[str, dict[str, Any]]]
Action = tuple[str, Any]  # ("tools", Calls) | ("text", str)
History = list[list[Any]]  # per model turn, the results of its calls in order


def available() -> bool:
    return all((UPSTREAMS / name).exists() for name in ("mcp-server-filesystem", "mcp-server-memory"))


class Workspace:
    """The files, the memory graph and the upstreams file the tasks read;
    `expected` holds each task's right answer."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="zenmode-large-"))
        self.work = self.root / "work"
        self.work.mkdir()
        rng = random.Random(43)
        self.expected: dict[str, str] = {}

        notes = self.work / "notes"
        notes.mkdir()
        stamps = rng.sample(range(100_000, 999_999), NOTES)
        for i, stamp in enumerate(stamps):
            changed = f"2026-{1 + stamp % 12:02d}-{1 + stamp % 28:02d}T{stamp % 24:02d}:{stamp % 60:02d}:{stamp // 60 % 60:02d}Z"
            body = "\n".join(f"- item {j}: {rng.choice(TOPICS)} follow-up {rng.randint(1, 999)}" for j in range(6))
            (notes / f"note-{i:03d}.md").write_text(f"# Note {i}\nchanged: {changed}\nowner: {rng.choice(TOPICS)}\n{body}\n")
        self.expected["newest"] = newest_answer({str(p): p.read_text() for p in notes.iterdir()})

        with (self.root / "memory.jsonl").open("w") as graph:
            for i in range(ENTITIES):
                kind = rng.choice(ENTITY_TYPES)
                graph.write(json.dumps({"type": "entity", "name": f"{kind}-{i:04d}", "entityType": kind,
                                        "observations": [f"owned by team {rng.randint(1, 40)}",
                                                         f"last reviewed in week {rng.randint(1, 52)}"]}) + "\n")
        self.expected["count"] = count_answer(self.graph())

        links = []
        for i in range(LINKS):
            topic = rng.choice([t for t in TOPICS if t != TOPIC]) if i % 40 else TOPIC
            links.append(f'  <li class="entry"><a href="https://example.org/{topic}/{i:04d}-{rng.randint(1000, 9999)}">'
                         f"{topic.title()} article {i}</a> <span class=\"meta\">{rng.randint(1, 60)} min read</span></li>")
        page = "<!doctype html>\n<html><head><title>Reading list</title></head><body>\n<ul>\n" + "\n".join(links) + "\n</ul>\n</body></html>\n"
        (self.work / "reading-list.html").write_text(page)
        self.expected["links"] = links_answer(page)

        lines = [f"{i:05d} {rng.choice(TOPICS)} {rng.randint(0, 10**9):010d} {rng.choice(ENTITY_TYPES)}" for i in range(LINES)]
        changed_lines = lines[:]
        for at in sorted(rng.sample(range(LINES), 3)):
            changed_lines[at] = changed_lines[at][:-3] + "???"
        (self.work / "before.txt").write_text("\n".join(lines) + "\n")
        (self.work / "after.txt").write_text("\n".join(changed_lines) + "\n")
        self.expected["compare"] = compare_answer("\n".join(lines) + "\n", "\n".join(changed_lines) + "\n")

        # Only read to show that a handle reply stays small however large the result.
        line = "0123456789abcdef" * 4 + "\n"
        (self.work / "huge.txt").write_text(line * (HUGE_BYTES // len(line)))

        (self.root / "upstreams.json").write_text(json.dumps({"mcpServers": {
            "fs": {"command": str(UPSTREAMS / "mcp-server-filesystem"), "args": [str(self.work)]},
            "memory": {"command": str(UPSTREAMS / "mcp-server-memory"),
                       "env": {"MEMORY_FILE_PATH": str(self.root / "memory.jsonl")}},
        }}))

    def graph(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in (self.root / "memory.jsonl").read_text().splitlines()]

    def env(self) -> dict[str, str]:
        return {"ZEN_UPSTREAMS": str(self.root / "upstreams.json"), "ZEN_CACHE_DIR": str(self.root / "cache"),
                "ZEN_STATE_DIR": str(self.root / "state")}

    def args(self, flow: str) -> list[str]:
        return ["serve", "--upstream-wait-secs", "60", *FLOW_ARGS[flow]]

    def path(self, *parts: str) -> str:
        return str(self.work.joinpath(*parts))

    def normalized(self, text: str) -> str:
        return text.replace(str(self.root), ROOT_AS)

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


# --- the answers, computed the same way by the set-up and by every model -----

CHANGED = re.compile(r"^changed: (\S+)$", re.M)


def newest_answer(files: dict[str, str]) -> str:
    """The note with the latest `changed:` line, and its first three lines."""
    path, text = max(files.items(), key=lambda item: CHANGED.search(item[1]).group(1))  # type: ignore[union-attr]
    return Path(path).name + "\n" + "\n".join(text.splitlines()[:3])


def count_answer(entities: list[dict[str, Any]]) -> str:
    return str(sum(1 for e in entities if e.get("entityType") == ENTITY_TYPE))


HREF = re.compile(r'href="(https://example\.org/([a-z]+)/[^"]+)"')


def links_answer(page: str) -> str:
    return "\n".join(url for url, topic in HREF.findall(page) if topic == TOPIC)


def compare_answer(before: str, after: str) -> str:
    a, b = before.splitlines(), after.splitlines()
    return ",".join(str(i + 1) for i in range(max(len(a), len(b)))
                    if (a[i] if i < len(a) else None) != (b[i] if i < len(b) else None))


# --- what a model reads out of a result, whatever the flow wrapped it in ----

def unwrap(value: Any) -> Any:
    """The tool's own value: inside a CommandResult's `data`, an MCP result's
    `structuredContent`, or a script answer's `result`."""
    if isinstance(value, dict):
        if "success" in value and "data" in value:
            return unwrap(value["data"])
        if "structuredContent" in value:
            return value["structuredContent"]
        if "result" in value and "calls" in value:
            return value["result"]
    return value


def text_of(value: Any) -> str:
    value = unwrap(value)
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return value if isinstance(value, str) else json.dumps(value)


def entities_of(value: Any) -> list[dict[str, Any]]:
    value = unwrap(value)
    if isinstance(value, str):
        value = json.loads(value)
    return value["entities"]


def split_files(text: str) -> dict[str, str]:
    """read_multiple_files' answer: `path:\\ncontent\\n` blocks joined by `\\n---\\n`."""
    files = {}
    for block in text.split("\n---\n"):
        head, _, body = block.partition(":\n")
        files[head.strip()] = body
    return files


# --- the scripts ----------------------------------------------------------

# Each script fetches what it needs, unless the model hands it in as
# `input` (the handles flow passes results it holds as handles there:
# {"$result": id} becomes the stored value: a file's text is a string, as
# a call that reads a file gives it to the script).
GIVEN = "const given = typeof input === 'object' && input !== null ? input : {};\n"
SCRIPTS: dict[str, str] = {
    "newest": GIVEN + """const dir = %(notes)s;
const text = given.files ? given.files : await (async () => {
  const listing = given.listing ? given.listing : await tools.call('fs__list_directory', {path: dir});
  const paths = listing.split('\\n').filter(l => l.startsWith('[FILE] ')).map(l => dir + '/' + l.slice(7));
  return await tools.call('fs__read_multiple_files', {paths});
})();
let best = null;
for (const block of text.split('\\n---\\n')) {
  const at = block.indexOf(':\\n');
  const body = block.slice(at + 2);
  const changed = (body.match(/^changed: (\\S+)$/m) || [])[1];
  if (changed && (!best || changed > best.changed)) best = {path: block.slice(0, at).trim(), body, changed};
}
return best.path.split('/').pop() + '\\n' + best.body.split('\\n').slice(0, 3).join('\\n');""",
    "count": GIVEN + """const graph = given.graph || await tools.call('memory__read_graph', {});
return String(graph.entities.filter(e => e.entityType === %(type)s).length);""",
    "links": GIVEN + """const page = given.page || await tools.call('fs__read_text_file', {path: %(page)s});
const found = [];
for (const m of page.matchAll(/href="(https:\\/\\/example\\.org\\/([a-z]+)\\/[^"]+)"/g)) if (m[2] === %(topic)s) found.push(m[1]);
return found.join('\\n');""",
    "compare": GIVEN + """const [a, b] = (given.before ? [given.before, given.after]
  : await Promise.all([%(before)s, %(after)s].map(path => tools.call('fs__read_text_file', {path}))))
  .map(text => text.split('\\n'));
const differ = [];
for (let i = 0; i < Math.max(a.length, b.length); i++) if (a[i] !== b[i]) differ.push(i + 1);
return differ.join(',');""",
}


def script_code(task: str, ws: Workspace) -> str:
    values = {"notes": ws.path("notes"), "type": ENTITY_TYPE, "page": ws.path("reading-list.html"),
              "topic": TOPIC, "before": ws.path("before.txt"), "after": ws.path("after.txt")}
    return SCRIPTS[task] % {key: json.dumps(value) for key, value in values.items()}


# --- each task's scripted model, per flow --------------------------------------

ASKED = {
    "newest": "Which of the notes in the notes folder was changed most recently? Show its first lines.",
    "count": f"How many entities of type '{ENTITY_TYPE}' are in the memory graph?",
    "links": f"List the links about {TOPIC} in reading-list.html.",
    "compare": "Which lines differ between before.txt and after.txt?",
}

HANDLE = re.compile(r"zenmode://results/([0-9A-Za-z-]+)")


def handle_of(result: Any) -> str | None:
    """The id of the result handle a reply carries, if it is one."""
    text = result if isinstance(result, str) else json.dumps(result)
    found = HANDLE.search(text[:4000])
    return found.group(1) if found else None


def zen(mode: str, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("zen_execute", {"mode": mode, "request": request})


def call(command: str, request: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return ("call", {"command": command, "input": request})


def player(task: str, flow: str, ws: Workspace, parallel_handles: bool = True) -> Callable[[History], Action]:
    """The scripted model: from the results so far, its next action.
    `parallel_handles`: two calls whose replies are handles may go in one
    model turn (Claude Code answers the second "[Tool result missing due to
    internal error]", so there they go one per turn)."""
    if flow == "script":
        def scripted(history: History) -> Action:
            if not history:
                return ("tools", [zen("script", {"code": script_code(task, ws)})])
            return ("text", text_of(history[0][0]))
        return scripted

    one = call if flow == "pipe" else zen
    notes = ws.path("notes")

    def newest(history: History) -> Action:
        if not history:
            return ("tools", [one("fs__list_directory", {"path": notes})])
        if len(history) == 1:
            names = [line[7:] for line in text_of(history[0][0]).splitlines() if line.startswith("[FILE] ")]
            return ("tools", [one("fs__read_multiple_files", {"paths": [f"{notes}/{n}" for n in names]})])
        return ("text", newest_answer(split_files(text_of(history[1][0]))))

    def count(history: History) -> Action:
        if not history:
            return ("tools", [one("memory__read_graph", {})])
        return ("text", count_answer(entities_of(history[0][0])))

    def links(history: History) -> Action:
        if not history:
            return ("tools", [one("fs__read_text_file", {"path": ws.path("reading-list.html")})])
        return ("text", links_answer(text_of(history[0][0])))

    def compare(history: History) -> Action:
        reads = [("fs__read_text_file", {"path": ws.path(name)}) for name in ("before.txt", "after.txt")]
        if not history:
            if flow != "pipe":  # two calls in one model turn
                return ("tools", [zen(mode, request) for mode, request in reads])
            return ("tools", [("batch", {"calls": [{"command": m, "input": r} for m, r in reads]})])
        if flow != "pipe":
            before, after = (text_of(result) for result in history[0])
        else:
            before, after = (text_of(item["result"]) for item in unwrap(history[0][0])["results"])
        return ("text", compare_answer(before, after))

    direct = {"newest": newest, "count": count, "links": links, "compare": compare}[task]
    if flow != "handles":
        return direct
    # What each task's script takes as input, per handle of the turn it came in.
    inputs = {"newest": [["listing"], ["files"]], "count": [["graph"]], "links": [["page"]],
              "compare": [["before", "after"]]}[task]

    def compare_in_turns(history: History) -> Action:
        if len(history) < 2:
            return ("tools", [zen("fs__read_text_file", {"path": ws.path(("before.txt", "after.txt")[len(history)])})])
        ids = [handle_of(turn[0]) for turn in history[:2]]
        if len(history) == 2 and all(ids):
            request = {"code": script_code(task, ws),
                       "input": {name: {"$result": id} for name, id in zip(("before", "after"), ids)}}
            return ("tools", [zen("script", request)])
        if len(history) == 3:
            return ("text", text_of(history[2][0]))
        return ("text", compare_answer(text_of(history[0][0]), text_of(history[1][0])))

    if task == "compare" and not parallel_handles:
        return compare_in_turns

    def with_handles(history: History) -> Action:
        """Direct calls until a reply is a handle; then one script over the
        handles of that turn (passed as {"$result": id}) gives the answer."""
        for turn, results in enumerate(history):
            ids = [handle_of(result) for result in results]
            if turn == len(history) - 1 and all(ids) and turn < len(inputs):
                names = inputs[turn]
                request = {"code": script_code(task, ws),
                           "input": {name: {"$result": id} for name, id in zip(names, ids)}}
                return ("tools", [zen("script", request)])
            if any(ids) and turn < len(history) - 1:  # the script's answer
                return ("text", text_of(history[-1][0]))
        return direct(history)

    return with_handles


TASKS = list(ASKED)


# --- the two clients ---------------------------------------------------------

# Model requests, o200k tokens sent, and how the task ended: "right", "wrong", or
# "preview" when Claude Code kept a large result in a file and showed the model
# only its first 2 KB (its own guard, which no setting turns off), so that the
# scripted model, which reads no file, could not answer.
Row = tuple[int, int, str]
PREVIEW = "preview"


def saved_to_file(result: Any) -> bool:
    """Claude Code's two ways of keeping a large result out of the conversation:
    a `<persisted-output>` preview, or an error naming the file it was saved to."""
    return isinstance(result, str) and (result.startswith("<persisted-output>")
                                        or "Output has been saved to " in result[:300])


def parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def reply_bytes(reply: Any) -> int:
    """The size of a tool reply as it goes over the wire (JSON)."""
    return len(json.dumps(reply.model_dump(mode="json", by_alias=True, exclude_none=True),
                          separators=(",", ":")))


def is_handle_reply(reply: Any) -> bool:
    return any(getattr(block, "type", None) == "resource_link" for block in reply.content)


async def eager_runs(ws: Workspace, zenmode: str, count: Callable[[str], int]
                     ) -> tuple[dict[tuple[str, str], Row], dict[str, int]]:
    """Each task and flow in the eager client (the MCP Python SDK sending the
    whole tool list and conversation on every request), a session each; and
    the largest reply that carried a result handle, per task (and for a
    4 MiB file, "huge"; negative when it came back whole)."""
    import asyncio

    from mcp import Client, StdioServerParameters

    results: dict[tuple[str, str], Row] = {}
    handle_replies: dict[str, int] = {}
    for flow in FLOWS:
        server = StdioServerParameters(command=zenmode, args=ws.args(flow), env={"RUST_LOG": "error", **ws.env()})
        for task in TASKS:
            async with Client(server, mode="legacy") as client:
                listed = await client.list_tools()
                tools = [{"name": t.name, "description": t.description, "input_schema": t.input_schema}
                         for t in listed.tools]
                messages: list[dict[str, Any]] = [{"role": "user", "content": ASKED[task]}]
                play, history, sent, answer = player(task, flow, ws), [], 0, None
                while True:
                    sent += count(ws.normalized(json.dumps({"tools": tools, "messages": messages})))
                    kind, payload = play(history)
                    if kind == "text":
                        answer = payload
                        break
                    replies = await asyncio.gather(*(client.call_tool(name, args) for name, args in payload))
                    for reply in replies:
                        if is_handle_reply(reply):
                            handle_replies[task] = max(handle_replies.get(task, 0), reply_bytes(reply))
                    texts = ["".join(getattr(c, "text", "") for c in reply.content) for reply in replies]
                    history.append([parsed(text) for text in texts])
                    turn = len(history)
                    messages.append({"role": "assistant", "content": [
                        {"type": "tool_use", "id": f"t{turn}.{i}", "name": name, "input": args}
                        for i, (name, args) in enumerate(payload)]})
                    messages.append({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"t{turn}.{i}", "content": text}
                        for i, text in enumerate(texts)]})
            row = (len(history) + 1, sent, "right" if answer == ws.expected[task] else "wrong")
            results[(task, flow)] = row
            print(f"  eager       {task:<8} {flow:<7} {row[0]} requests {row[1]:>8,} o200k"
                  f"{'' if row[2] == 'right' else '  (wrong answer: ' + repr(answer)[:120] + ')'}", flush=True)
        if flow == "handles":
            async with Client(server, mode="legacy") as client:
                reply = await client.call_tool("zen_execute", {"mode": "fs__read_text_file",
                                                               "request": {"path": ws.path("huge.txt")}})
                handle_replies["huge"] = reply_bytes(reply) if is_handle_reply(reply) else -reply_bytes(reply)
    return results, handle_replies


def history_of(messages: list[dict[str, Any]]) -> History:
    """What Claude Code sent back for each model turn's tool calls, in order."""
    history: History = []
    results: dict[str, Any] = {}
    for message in messages:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                inner = block.get("content")
                text = inner if isinstance(inner, str) else "".join(
                    part.get("text", "") for part in inner or [] if isinstance(part, dict))
                results[block.get("tool_use_id")] = parsed(text)
    for message in messages:
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        ids = [b.get("id") for b in message["content"] if isinstance(b, dict) and b.get("type") == "tool_use"]
        if ids:
            history.append([results.get(i) for i in ids])
    return history


def claude_runs(ws: Workspace, zenmode: str, fake: Any, run: Callable[[list[str], dict[str, str], str], bool],
                count: Callable[[str], int]) -> dict[tuple[str, str], Row]:
    """Each task and flow in real Claude Code against the scripted fake
    model; `run(server args, server env, prompt)` runs one `claude -p`."""
    results: dict[tuple[str, str], Row] = {}
    for task in TASKS:
        for flow in FLOWS:
            play, answers, seen = player(task, flow, ws, parallel_handles=False), [], []

            def step(messages: list[dict[str, Any]], play: Callable[[History], Action] = play,
                     answers: list[str] = answers, seen: list[History] = seen) -> tuple[str, Any]:
                history = history_of(messages)
                if any(saved_to_file(r) for turn in history for r in turn):
                    answers.append(PREVIEW)
                    return ("text", "The result was saved to a file; I saw only its preview.")
                try:
                    kind, payload = play(history)
                except Exception as error:  # noqa: BLE001 - a result the model could not read ends the task
                    kind, payload = "text", f"no answer: {type(error).__name__}: {error}"
                    seen.append(history_of(messages))
                if kind == "text":
                    answers.append(payload)
                    return ("text", payload)
                return ("tools", [(f"mcp__zenmode__{name}", args) for name, args in payload])

            fake.player, fake.requests = step, []
            ok = run(ws.args(flow), ws.env(), ASKED[task])
            requests = list(fake.requests)
            fake.player = None
            sent = sum(count(ws.normalized(json.dumps({k: r.get(k) for k in ("tools", "system", "messages")})))
                       for r in requests)
            status = "right" if ok and answers[-1:] == [ws.expected[task]] else \
                "preview" if ok and answers[-1:] == [PREVIEW] else "wrong"
            results[(task, flow)] = (len(requests), sent, status)
            print(f"  claude-code {task:<8} {flow:<7} {len(requests)} requests {sent:>8,} o200k {status}"
                  f"{'' if status != 'wrong' else '  (' + repr(answers[-1:])[:160] + ')'}", flush=True)
            for history in seen:
                print(f"    what the model saw: {repr(history)[:600]}", flush=True)
    return results


def totals(results: dict[tuple[str, str], Row]) -> dict[str, dict[str, Any]]:
    """Per flow: requests, tokens and right answers over the tasks, and the tokens' ratio to `direct`."""
    sums = {}
    for flow in FLOWS:
        rows = [results[(task, flow)] for task in TASKS if (task, flow) in results]
        sums[flow] = {"requests": sum(r[0] for r in rows), "tokens": sum(r[1] for r in rows),
                      "right": sum(r[2] == "right" for r in rows), "tasks": len(rows)}
    base = sums["direct"]["tokens"]
    for row in sums.values():
        row["vs_direct"] = round(row["tokens"] / base, 3) if base else 0.0
    return sums


SCRIPT_TARGET = 0.5


def handle_problems(handle_replies: dict[str, int]) -> list[str]:
    """Replies carrying a handle over the limit, and a huge result that came back whole."""
    found = [f"eager large {task}: a reply carrying a result handle took {size:,} bytes (at most "
             f"{HANDLE_REPLY_LIMIT:,})" for task, size in handle_replies.items() if size > HANDLE_REPLY_LIMIT]
    if handle_replies.get("huge", -1) < 0:
        found.append(f"eager large: an {HUGE_BYTES >> 20} MiB result did not come back as a handle")
    missing = [task for task in TASKS if task not in handle_replies]
    if missing:
        found.append(f"eager large {', '.join(missing)}: no reply carried a result handle")
    return found


def problems(label: str, results: dict[tuple[str, str], Row], target: float | None = SCRIPT_TARGET) -> list[str]:
    """Wrong answers, scripts that answered only from a preview, and tasks where
    a script took more requests than the direct calls or (unless `target` is
    None) more than `target` times their tokens."""
    found = [f"{label} large {task} {flow}: {status} answer" for (task, flow), (_, _, status) in results.items()
             if status == "wrong" or (status == "preview" and flow == "script")]
    for task in TASKS:
        script, direct = results.get((task, "script")), results.get((task, "direct"))
        handles = results.get((task, "handles"))
        if handles and direct and target is not None and handles[1] > target * direct[1]:
            found.append(f"{label} large {task}: direct calls with handles sent {handles[1]:,} o200k, more than "
                         f"{target}x the direct calls' {direct[1]:,} without")
        if not (script and direct):
            continue
        if target is not None and script[1] > target * direct[1]:
            found.append(f"{label} large {task}: script sent {script[1]:,} o200k, more than "
                         f"{target}x the direct calls' {direct[1]:,}")
        if script[0] > direct[0]:
            found.append(f"{label} large {task}: script took {script[0]} requests, the direct calls {direct[0]}")
    return found


def table(claude: dict[tuple[str, str], Row], eager: dict[tuple[str, str], Row]) -> str:
    lines = ["| client | task | flow | answer | model requests | o200k tokens sent | vs direct |",
             "|---|---|---|---|---|---|---|"]
    for label, results in (("Claude Code", claude), ("eager client", eager)):
        for task in TASKS:
            for flow in FLOWS:
                if (task, flow) not in results:
                    continue
                requests, sent, status = results[(task, flow)]
                base = results[(task, "direct")][1]
                lines.append(f"| {label} | {task} | {flow} | {status} | {requests} | {sent:,} "
                             f"| {sent / base:.3f}x |")
    return "\n".join(lines)
