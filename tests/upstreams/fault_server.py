#!/usr/bin/env python3
"""A deliberately unreliable MCP server (stdio, newline-delimited JSON-RPC)
for zenmode's gateway fault tests. Standard library only.

Options:
  --exit-at-start        print a message on stderr and exit 3 before reading
  --garbage              print non-JSON lines on stdout before every reply
  --tools-file FILE      list the tools in FILE (JSON array) instead of the defaults
  --pid-file FILE        write this process's pid to FILE
  --log-env NAME         print the value of $NAME on stderr at start

Tools: echo {text}, hang {} (never answers), crash {} (exits at once),
slow {seconds} (answers after a delay, sending progress when asked),
count {} (how many calls this process has answered).
"""

import json
import os
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

tools = DEFAULT_TOOLS
if option("--tools-file"):
    with open(option("--tools-file")) as f:
        tools = json.load(f)

lock = threading.Lock()
answered = 0

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
        elif name == "count":
            reply(request_id, text_result(str(answered)), tool=True)
        else:
            send({"jsonrpc": "2.0", "id": request_id,
                  "error": {"code": -32602, "message": f"unknown tool {name}"}})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"method not found: {method}"}})
