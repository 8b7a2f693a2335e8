#!/usr/bin/env python3
"""A deliberately unreliable MCP server (stdio, newline-delimited JSON-RPC)
for zenmode's gateway fault tests. Standard library only.

Options:
  --exit-at-start        print a message on stderr and exit 3 before reading
  --start-delay SECONDS  sleep this long before reading anything (a slow start)
  --garbage              print non-JSON lines on stdout before every reply
  --tools-file FILE      list the tools in FILE (JSON array) instead of the defaults
  --pid-file FILE        write this process's pid to FILE
  --log-env NAME         print the value of $NAME on stderr at start

Tools: echo {text}, hang {} (never answers), crash {} (exits at once),
slow {seconds} (answers after a delay, sending progress when asked),
count {} (how many calls this process has answered),
ask {kind} (sends the client a sampling or elicitation request and reports
what came back).

Hostile tools, listed with --hostile, for the hardening tests and the fuzz
campaign:
stderr {hex, repeat, newline} (writes the bytes repeat times to stderr),
big {bytes, lines} (a result whose text is that long; with lines, lines
of text, sent also as structured content {"content": text}),
env_error {name} (an isError result quoting $name),
fail {bytes} (a JSON-RPC error whose message is that long).
--big-tools BYTES pads the tools/list reply with a description that long.
--chaos SEED: before answering a tools/call, misbehave at random (seeded):
garbage or unknown ids on stdout, replies twice or never, oversized replies
and errors, floods of notifications, stderr without newlines or UTF-8, the
value of $CHAOS_SECRET echoed in results, errors and stderr. Used by the
fuzz campaign (tests/fuzz) as an upstream behind the gateway.
"""

import json
import os
import random
import sys
import threading
import time

DEFAULT_TOOLS = [
    {"name": "echo", "description": "Echo the text back.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "hang", "description": "Never answer.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exit the server process.", "inputSchema": {"type": "object"},
     "annotations": {"destructiveHint": True}},
    {"name": "slow", "description": "Answer after a delay, with progress.",
     "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "count", "description": "How many calls this process answered.", "inputSchema": {"type": "object"}},
    {"name": "ask", "description": "Ask the client something (sampling or elicitation) and report its answer.",
     "inputSchema": {"type": "object", "properties": {"kind": {"type": "string", "enum": ["sampling", "elicitation"]}}}},
]

# Listed with --hostile (or --chaos) only, so other tests see the same list.
HOSTILE_TOOLS = [
    {"name": "stderr", "description": "Write bytes to stderr.",
     "inputSchema": {"type": "object", "properties": {"hex": {"type": "string"}, "repeat": {"type": "integer"},
                                                      "newline": {"type": "boolean"}}}},
    {"name": "big", "description": "Answer with a long text.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}, "lines": {"type": "boolean"}}}},
    {"name": "env_error", "description": "Fail, quoting an environment variable.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}},
    {"name": "fail", "description": "Fail with a long protocol error message.",
     "inputSchema": {"type": "object", "properties": {"bytes": {"type": "integer"}}}},
]

args = sys.argv[1:]
def option(name):
    return args[args.index(name) + 1] if name in args else None

if option("--pid-file"):
    with open(option("--pid-file"), "w") as f:
        f.write(str(os.getpid()))
if option("--log-env"):
    print(f"env {option('--log-env')}={os.environ.get(option('--log-env'), '')}", file=sys.stderr, flush=True)
if "--exit-at-start" in args:
    print("fault server: refusing to start (configured to exit)", file=sys.stderr, flush=True)
    sys.exit(3)
if option("--start-delay"):
    time.sleep(float(option("--start-delay")))

tools = DEFAULT_TOOLS
if "--hostile" in args or option("--chaos"):
    tools = tools + HOSTILE_TOOLS
if option("--tools-file"):
    with open(option("--tools-file")) as f:
        tools = json.load(f)
if option("--big-tools"):
    tools = tools + [{"name": "padded", "description": "x" * int(option("--big-tools")),
                      "inputSchema": {"type": "object"}}]

def write_stderr(data, repeat, newline):
    """Writes data repeat times in pieces of about 1 MB, so a flood costs
    this process little memory."""
    chunk = data * max(1, (1 << 20) // max(1, len(data)))
    total = len(data) * repeat
    written = 0
    try:
        while written < total:
            piece = chunk[: total - written]
            sys.stderr.buffer.write(piece)
            written += len(piece)
        if newline:
            sys.stderr.buffer.write(b"\n")
        sys.stderr.buffer.flush()
    except BrokenPipeError:
        os._exit(9)
    return written

chaos = random.Random(int(option("--chaos"))) if option("--chaos") else None

def misbehave(request_id):
    """One random fault; True when it answered (or dropped) the call itself."""
    secret = os.environ.get("CHAOS_SECRET", "")
    roll = chaos.randrange(14)
    if roll == 0:
        with lock:
            sys.stdout.write("garbage \xff not json\n" + "{\"jsonrpc\": \"2.0\"}\n")
            sys.stdout.flush()
    elif roll == 1:
        send({"jsonrpc": "2.0", "id": "never-asked-%d" % chaos.randrange(1000), "result": {}})
    elif roll == 2:
        sys.stderr.buffer.write(bytes(chaos.randrange(256) for _ in range(200)) + b"\n")
        sys.stderr.buffer.flush()
    elif roll == 3:
        sys.stderr.buffer.write(b"z" * 100_000 + secret.encode())
        sys.stderr.buffer.flush()
    elif roll == 4:
        reply(request_id, text_result("x" * 100_000), tool=True)
        return True
    elif roll == 5:
        send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32000, "message": secret + "e" * 50_000}})
        return True
    elif roll == 6:
        reply(request_id, text_result("failed near " + secret, error=True), tool=True)
        return True
    elif roll == 7:
        reply(request_id, text_result("once"), tool=True)
        reply(request_id, text_result("twice"), tool=True)
        return True
    elif roll == 8:
        return True  # never answers
    elif roll == 9:
        for step in range(200):
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": chaos.randrange(10), "progress": step}})
    elif roll == 10:
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list", "isError": "maybe"}})
        return True
    elif roll == 11:
        print("secret on stderr: " + secret, file=sys.stderr, flush=True)
    return False

lock = threading.Lock()
answered = 0
asking = {}  # id of our request to the client -> the tools/call waiting on it

def send(message):
    with lock:
        if "--garbage" in args:
            sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

def text_result(text, error=False):
    return {"content": [{"type": "text", "text": text}], "isError": error}

def slow(request_id, seconds, token):
    steps = 5
    for step in range(steps):
        time.sleep(seconds / steps)
        if token is not None:
            send({"jsonrpc": "2.0", "method": "notifications/progress",
                  "params": {"progressToken": token, "progress": step + 1, "total": steps,
                             "message": f"step {step + 1}"}})
    reply(request_id, text_result(f"slept {seconds}s"), tool=True)

def reply(request_id, result, tool=False):
    global answered
    if tool:
        answered += 1
    send({"jsonrpc": "2.0", "id": request_id, "result": result})

for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    request_id = message.get("id")
    if method is None and request_id in asking:
        waiting = asking.pop(request_id)
        if "error" in message:
            reply(waiting, text_result("refused: " + message["error"].get("message", "")), tool=True)
        else:
            reply(waiting, text_result("answered: " + json.dumps(message.get("result"))), tool=True)
        continue
    params = message.get("params") or {}
    if request_id is None:
        if method == "notifications/cancelled":
            print(f"fault server: cancelled request {params.get('requestId')}", file=sys.stderr, flush=True)
        continue  # notifications: initialized, cancelled
    if method == "initialize":
        reply(request_id, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "fault-server", "version": "1"}})
    elif method == "ping":
        reply(request_id, {})
    elif method == "tools/list":
        reply(request_id, {"tools": tools})
    elif method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        token = (params.get("_meta") or {}).get("progressToken")
        if chaos is not None:
            if misbehave(request_id):
                continue
            # Fuzzed sizes stay small enough to answer within the campaign.
            for key, most in (("repeat", 1 << 20), ("bytes", 1 << 20), ("seconds", 0.2)):
                if isinstance(arguments.get(key), (int, float)):
                    arguments[key] = max(0, min(arguments[key], most))
        if name == "echo":
            reply(request_id, {**text_result(arguments.get("text", "")),
                               "structuredContent": {"echo": arguments.get("text", "")}}, tool=True)
        elif name == "hang":
            pass
        elif name == "crash":
            print("fault server: crashing on request", file=sys.stderr, flush=True)
            os._exit(7)
        elif name == "slow":
            threading.Thread(target=slow, args=(request_id, float(arguments.get("seconds", 1)), token),
                             daemon=True).start()
        elif name == "ask":
            ask_id = f"ask-{request_id}"
            asking[ask_id] = request_id
            if arguments.get("kind") == "elicitation":
                send({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
                      "params": {"message": "Proceed?", "requestedSchema": {"type": "object", "properties": {}}}})
            else:
                send({"jsonrpc": "2.0", "id": ask_id, "method": "sampling/createMessage",
                      "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                                 "maxTokens": 10}})
        elif name == "stderr":
            data = bytes.fromhex(arguments.get("hex", "61"))
            written = write_stderr(data, int(arguments.get("repeat", 1)), arguments.get("newline", True))
            reply(request_id, text_result(f"wrote {written} bytes"), tool=True)
        elif name == "big":
            size = int(arguments.get("bytes", 0))
            if arguments.get("lines"):
                # Lines of text with quotes, tabs and non-ASCII, sent twice as
                # server-filesystem does: as text and as {"content": text}.
                line = 'a "quoted" line\twith é and \\ ✓\n'
                text = (line * (size // len(line.encode()) + 1)).encode()[:size].decode("utf-8", "ignore")
                result = text_result(text)
                result["structuredContent"] = {"content": text}
                reply(request_id, result, tool=True)
            else:
                reply(request_id, text_result("x" * size), tool=True)
        elif name == "env_error":
            value = os.environ.get(arguments.get("name", ""), "")
            reply(request_id, text_result(f"request failed: the key {value} was refused", error=True), tool=True)
        elif name == "fail":
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32000, "message": "e" * int(arguments.get("bytes", 10))}})
        elif name == "count":
            reply(request_id, text_result(str(answered)), tool=True)
        else:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32602, "message": f"unknown tool {name}"}})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"method not found: {method}"}})
