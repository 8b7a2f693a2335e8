#!/usr/bin/env python3
"""Writes the fuzz campaign's seed corpus (tests/fuzz/corpus/*.jsonl).

Run from the repository root after changing a mode manifest:
    python3 tests/fuzz/make_corpus.py
Every line is one input the harness (tests/fuzz/main.rs) starts from before
mutating. `@ROOT@` stands for the scratch directory the server under test is
confined to; the harness fills it in.
"""
import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
MODES = sorted(glob.glob(os.path.join(HERE, "..", "..", "modes", "*.json")))

STATELESS_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "1"},
}

_next = [0]


def request(method, params=None, meta=False):
    _next[0] += 1
    message = {"jsonrpc": "2.0", "id": _next[0], "method": method}
    if params is not None or meta:
        params = dict(params or {})
        if meta:
            params["_meta"] = STATELESS_META
        message["params"] = params
    return message


def notification(method, params=None):
    message = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def call(name, arguments, meta=False):
    return request("tools/call", {"name": name, "arguments": arguments}, meta)


def write(name, lines):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as out:
        for line in lines:
            if not isinstance(line, str):
                line = json.dumps(line, ensure_ascii=False, separators=(",", ":"))
            assert "\n" not in line
            out.write(line + "\n")


def protocol():
    client = {"name": "fuzz", "version": "1"}
    lines = []
    for version in ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "1999-01-01"]:
        lines.append(request("initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": client}))
    lines.append(request("initialize", {"protocolVersion": "2025-11-25",
                                        "capabilities": {"roots": {"listChanged": True}, "sampling": {}},
                                        "clientInfo": client}))
    lines += [
        notification("notifications/initialized"),
        request("ping"),
        {"jsonrpc": "2.0", "id": "ping-as-string", "method": "ping"},
        request("ping", {}),
        request("tools/list"),
        request("tools/list", {}),
        request("tools/list", {"cursor": "abc"}),
        request("tools/list", meta=True),
        request("server/discover", meta=True),
        request("server/discover", {}),
        request("logging/setLevel", {"level": "warning"}),
        request("resources/list", {}),
        request("resources/templates/list", {}),
        request("resources/read", {"uri": "file:///etc/hostname"}),
        request("prompts/list", {}),
        request("prompts/get", {"name": "x"}),
        request("completion/complete", {"ref": {"type": "ref/prompt", "name": "x"},
                                        "argument": {"name": "a", "value": "b"}}),
        request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, meta=True),
        request("no/such/method", {}),
        notification("notifications/cancelled", {"requestId": 3, "reason": "fuzz"}),
        notification("notifications/cancelled", {"requestId": "ping-as-string"}),
        notification("notifications/progress", {"progressToken": "t", "progress": 1, "total": 2}),
        notification("notifications/roots/list_changed"),
        notification("notifications/unknown"),
        {"jsonrpc": "2.0", "id": 77, "result": {}},
        {"jsonrpc": "2.0", "id": 78, "error": {"code": -1, "message": "client error"}},
        {"jsonrpc": "2.0", "id": 79, "method": "notifications/initialized"},
    ]
    write("protocol.jsonl", lines)


def select():
    lines = []
    for path in MODES:
        manifest = json.load(open(path, encoding="utf-8"))
        for example in manifest.get("examples", [])[:2]:
            lines.append(call("zen_select_mode", {"task_description": example}))
        lines.append(call("zen_select_mode", {"mode": manifest["name"]}))
    lines += [
        call("zen_select_mode", {"task_description": "find the memory leak in the worker pool", "top_k": 10}),
        call("zen_select_mode", {"task_description": "qwzx plorb", "top_k": 1}),
        call("zen_select_mode", {"task_description": ""}),
        call("zen_select_mode", {"mode": "debg"}),
        call("zen_select_mode", {}),
        call("zen_select_mode", {"task_description": "review this diff before I commit"}, meta=True),
    ]
    write("select.jsonl", lines)


def final_step(example):
    final = dict(example)
    if "total_steps" in final:
        final["step_number"] = final["total_steps"]
    if "next_step_required" in final:
        final["next_step_required"] = False
    return final


def execute():
    lines = []
    for path in MODES:
        manifest = json.load(open(path, encoding="utf-8"))
        name = manifest["name"]
        example = manifest["example_request"]
        lines.append(call("zen_execute", {"mode": name, "request": example}))
        lines.append(call(name, example))
        if "next_step_required" in example:
            lines.append(call("zen_execute", {"mode": name, "request": final_step(example)}))
            local = dict(final_step(example))
            props = manifest["schema"].get("properties", {})
            if "relevant_files" in props:
                local["relevant_files"] = ["@ROOT@/app.py", "@ROOT@/src"]
            if "files_checked" in props:
                local["files_checked"] = ["@ROOT@/app.py"]
            if "images" in props:
                local["images"] = ["@ROOT@/pixel.png"]
            if "path" in props:
                local["path"] = "@ROOT@"
            if "use_assistant_model" in props:
                local["use_assistant_model"] = False
            lines.append(call("zen_execute", {"mode": name, "request": local}))
        lines.append(call("zen_execute", {"mode": name, "request": example}, meta=True))
    root = "@ROOT@"
    lines += [
        call("zen_execute", {"mode": "chat", "request": {"prompt": "hi", "working_directory_absolute_path": root,
                                                        "absolute_file_paths": [root + "/app.py"],
                                                        "images": [root + "/pixel.png",
                                                                   "data:image/png;base64,iVBORw0KGgo="]}}),
        call("zen_execute", {"mode": "clink", "request": {"prompt": "hi", "cli_name": "claude", "role": "planner",
                                                         "absolute_file_paths": [root + "/app.py"]}}),
        call("zen_execute", {"mode": "planner", "request": {"step": "revise", "step_number": 2, "total_steps": 3,
                                                           "next_step_required": True, "is_step_revision": True,
                                                           "revises_step_number": 1}}),
        call("zen_execute", {"mode": "planner", "request": {"step": "branch", "step_number": 2, "total_steps": 3,
                                                           "next_step_required": True, "is_branch_point": True,
                                                           "branch_from_step": 1, "branch_id": "b"}}),
        call("zen_execute", {"mode": "challenge", "request": "{\"prompt\": \"as a string\"}"}),
        call("zen_execute", {"mode": "challenge", "request": {"prompt": "x"}, "continuation_id": "no-such-thread"}),
        call("zen_execute", {"mode": "version", "request": {}}),
        call("zen_execute", {"mode": "nosuchmode", "request": {}}),
        call("zen_execute", {"mode": "debug"}),
        call("nosuchtool", {}),
    ]
    write("execute.jsonl", lines)


def garbage():
    lines = [
        "{",
        "}",
        "[]",
        "[1,2,3]",
        "null",
        "true",
        "42",
        "\"just a string\"",
        "{}",
        "{\"jsonrpc\":\"2.0\"}",
        "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"id\":2}",
        "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":18446744073709551616,\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"tools/list\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":-9223372036854775808,\"method\":\"ping\"}",
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}]",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":null}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":[]}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":7}}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"zen_execute\",\"arguments\":\"x\"}}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"\\u0000\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"ping\"}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}",
        "\ufeff{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}",
        "   {\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}   \r",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\u00a0",
        "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
        "{\"a\":1e999999}",
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"zen_select_mode\",\"arguments\":{\"task_description\":\"\\uD83D\\uDE00 \u202e\u0301 \u4e2d\u6587 \\u0000\"}}}",
    ]
    write("garbage.jsonl", lines)


# The chaos upstream behind the gateway (tests/upstreams/fault_server.py
# --chaos, prefix "chaos"): its tools called every way a client can.
UPSTREAM_CALLS = [
    ("echo", {"text": "hello through the gateway"}),
    ("stderr", {"hex": "fffe0a", "repeat": 3, "newline": True}),
    ("stderr", {"hex": "61", "repeat": 70000, "newline": False}),
    ("big", {"bytes": 1000}),
    ("big", {"bytes": 70000}),
    ("env_error", {"name": "CHAOS_SECRET"}),
    ("fail", {"bytes": 100000}),
    ("slow", {"seconds": 0.05}),
    ("count", {}),
    ("hang", {}),
    ("crash", {}),
]


def upstream():
    lines = []
    for tool, arguments in UPSTREAM_CALLS:
        lines.append(call("zen_execute", {"mode": "chaos__" + tool, "request": arguments}))
        lines.append(call("chaos__" + tool, arguments))
        lines.append(call("zen_execute", {"mode": "chaos__" + tool, "request": arguments}, meta=True))
    lines.append(call("zen_select_mode", {"task_description": "echo some text back through the gateway"}))
    lines.append(call("zen_select_mode", {"mode": "chaos__big"}))
    write("upstream.jsonl", lines)


def script_call(code, meta=False, **fields):
    return call("zen_execute", {"mode": "script", "request": {"code": code, **fields}}, meta)


# Hostile scripts (tests/script_mode.rs holds what each must end with). The
# ones that never end by themselves carry a short timeout_ms, so that the
# campaign spends its time on inputs, not on waiting out the 30 s default;
# a mutation that drops it now and then exercises the default too.
HOSTILE_SCRIPTS = [
    ("while (true) {}", {"timeout_ms": 20}),
    ("for (;;) { await Promise.resolve(); }", {"timeout_ms": 20}),
    ("let i = 0; while (i < 200000) i++; return i;", {}),
    ("let s = 'x'; while (true) s += s;", {"timeout_ms": 2000}),
    ("const a = []; while (true) a.push(new Array(100000).fill(1));", {"timeout_ms": 2000}),
    ("function f(n) { return f(n + 1) + 1; } return f(0);", {}),
    ("const o = {}; let p = o; for (let i = 0; i < 100000; i++) p = p.a = {}; return o;", {}),
    ("return 'x'.repeat(1000000);", {}),
    ("for (let i = 0; i < 20000; i++) console.log('line', i, 'y'.repeat(100)); return 1;", {}),
    ("Object.prototype.toJSON = () => { throw new Error('no'); }; return {a: 1};", {}),
    ("Object.prototype.then = function (resolve) { resolve(42); }; return {};", {}),
    ("Array.prototype[Symbol.iterator] = function* () { yield tools; }; return [...[1, 2]];", {}),
    ("return tools.call.constructor('return this')();", {}),
    ("return Object.getOwnPropertyNames(globalThis);", {}),
    ("tools.call = () => 1; return tools.call('version', {});", {}),
    ("Object.defineProperty(globalThis, 'tools', {value: 1}); return tools;", {}),
    ("return await import('fs');", {}),
    ("return require('child_process').execSync('id');", {}),
    ("return eval('globalThis.process || globalThis.std || globalThis.os');", {}),
    ("return new Function('return this')().constructor;", {}),
    ("return await tools.call('script', {code: 'return 1'});", {}),
    ("return await Promise.all(Array.from({length: 150}, () => tools.call('version', {})));", {}),
    ("for (let i = 0; i < 1000; i++) await tools.call('version', {}); return 'done';", {}),
    ("return await tools.call('nosuchmode', {});", {}),
    ("return await tools.call('version', 'not an object');", {}),
    ("return await tools.call();", {}),
    ("return await tools.select('x'.repeat(100000));", {}),
    ("return await tools.call('chaos__big', {bytes: 70000});", {}),
    ("return await Promise.race([tools.call('chaos__hang', {}), tools.call('chaos__echo', {text: 'x'})]);",
     {"timeout_ms": 500}),
    ("throw new Error('at line two');", {}),
    ("syntax error here (", {}),
    ("return Symbol('x');", {}),
    ("return 10n ** 1000n;", {}),
    ("const c = {}; c.self = c; return c;", {}),
    ("return new Proxy({}, {get() { throw new Error('trap'); }, ownKeys() { throw new Error('trap'); }});", {}),
    ("return '\\ud800' + '\\u0000' + '\\u202e';", {}),
    ("await new Promise(() => {});", {"timeout_ms": 20}),
    ("return input;", {"input": {"nested": [1, 2, {"$result": "r-unknown"}]}}),
    # Built-ins that loop natively, where the engine never looks at its
    # deadline: only killing the engine's process stops them.
    ("Array.prototype.reverse.call({length: 2**53 - 1});", {"timeout_ms": 50}),
    ("Array.prototype.copyWithin.call({length: 2**53 - 1}, 0, 1);", {"timeout_ms": 50}),
    ("Array.prototype.join.call({length: 2**32 - 1});", {"timeout_ms": 50}),
    ("Array.prototype.fill.call({length: 2**53 - 1}, 0);", {"timeout_ms": 50}),
    # Write names in other spellings, refused under the default deny.
    ("const r = {}; for (const n of ['chaos__deleteFile', 'chaos__RemoveUser', 'chaos__deletes_all', "
     "'chaos__run_command', 'chaos__execute_sql', 'chaos__browser_evaluate', 'chaos__crash', 'clink']) "
     "{ try { r[n] = await tools.call(n, {}); } catch (e) { r[n] = e.message; } } return r;", {}),
    ("console.log('\\ud800'); throw new Error('x'.repeat(1 << 20));", {}),
]

RESULT_REFS = [
    {"$result": "r-unknown"},
    {"$result": ""},
    {"$result": 7},
    {"$result": None},
    {"$result": "../../../etc/passwd"},
    {"$result": "r-unknown", "pointer": "/a/0"},
    {"$result": "r-unknown", "pointer": "no-leading-slash"},
    {"$result": "r-unknown", "pointer": "/~2/~"},
    {"$result": "r-unknown", "pointer": 5},
    {"$result": "r-unknown", "extra": True},
    {"$result": {"$result": "r-unknown"}},
    {"$result": ["r-unknown"]},
    [{"$result": "r-a"}, {"$result": "r-b"}],
    # Amplification: one handle named as often as a request may.
    [{"$result": "r-a"}] * 32,
    [{"$result": "r-a", "pointer": ""}] * 16 + [{"$result": "r-a", "pointer": "/0"}] * 16,
]

RESULT_URIS = [
    "zenmode://results/",
    "zenmode://results",
    "zenmode://results/r-unknown",
    "zenmode://results/r-unknown?page=1",
    "zenmode://results/r-unknown?page=0",
    "zenmode://results/r-unknown?page=-1",
    "zenmode://results/r-unknown?page=18446744073709551616",
    "zenmode://results/r-unknown?page=abc",
    "zenmode://results/r-unknown?page=1&page=2",
    "zenmode://results/r-unknown?other=1",
    "zenmode://results/r-unknown#page=2",
    "zenmode://results/%2e%2e%2f%2e%2e",
    "zenmode://results/../../etc/passwd",
    "zenmode://results/" + "a" * 5000,
    "ZENMODE://RESULTS/r-unknown",
    "zenmode:results/r-unknown",
    "zenmode://results/r-unknown/extra?page=2",
]


def scripts():
    lines = [script_call(code, **fields) for code, fields in HOSTILE_SCRIPTS]
    lines += [
        script_call("return 1 + 1", meta=True),
        call("zen_execute", {"mode": "script", "request": {"code": ""}}),
        call("zen_execute", {"mode": "script", "request": {"code": "return 1", "timeout_ms": 0}}),
        call("zen_execute", {"mode": "script", "request": {"code": "return 1", "timeout_ms": 99999999}}),
        call("zen_execute", {"mode": "script", "request": {"code": 5}}),
        call("script", {"code": "return await tools.call('chaos__echo', {text: 'direct'});"}),
    ]
    write("script.jsonl", lines)


def handles():
    """Result handles: references in requests (zen_execute's and a script's
    `input`), and reads of their resources, none of which exist."""
    lines = []
    for ref in RESULT_REFS:
        lines.append(call("zen_execute", {"mode": "challenge", "request": {"prompt": ref}}))
        lines.append(call("zen_execute", {"mode": "chaos__echo", "request": {"text": ref}}))
        lines.append(script_call("return input;", input=ref))
    lines += [
        call("zen_execute", {"mode": "challenge", "request": {"$result": "r-unknown"}}),
        call("zen_execute", {"mode": "script", "request": {"$result": "r-unknown"}}),
        script_call("return await tools.call('chaos__echo', {text: {$result: 'r-unknown'}});"),
        script_call("return await tools.call('challenge', {prompt: {$result: 'r-unknown', pointer: '/x'}});"),
        # Results large enough to become handles, then a read of what the answer names.
        script_call("return 'x'.repeat(40000);"),
        call("zen_execute", {"mode": "chaos__big", "request": {"bytes": 70000}}),
    ]
    lines += [request("resources/read", {"uri": uri}) for uri in RESULT_URIS]
    lines += [request("resources/read", {"uri": uri}, meta=True) for uri in RESULT_URIS[2:5]]
    lines += [request("resources/read", {"uri": 5}), request("resources/read", {})]
    write("handles.jsonl", lines)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    protocol()
    select()
    execute()
    garbage()
    upstream()
    scripts()
    handles()
