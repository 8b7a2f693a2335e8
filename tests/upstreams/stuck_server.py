#!/usr/bin/env python3
"""An MCP server (stdio, standard library only) that stops reading its
input, for the tests of requests that must end within their timeout.

Tools:
  deaf {}   stops reading stdin for good (the call is never answered).
  jam {}    waits --jam-wait seconds without reading stdin (the test sends
            more meanwhile), then writes a well-formed line that is not a
            JSON-RPC message, then --jam-bytes of progress notifications,
            then its answer; only then reads stdin again.
  echo {text} answers with its text.
"""

import json
import sys
import time

args = sys.argv[1:]


def option(name, default):
    return type(default)(args[args.index(name) + 1]) if name in args else default


JAM_WAIT = option("--jam-wait", 1.0)
JAM_BYTES = option("--jam-bytes", 2_000_000)

TOOLS = [
    {"name": name, "description": text, "inputSchema": {"type": "object"}}
    for name, text in (
        ("deaf", "Stop reading input."),
        ("jam", "Write a lot without reading."),
        ("echo", "Echo the text back."),
    )
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def reply(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def text(value):
    return {"content": [{"type": "text", "text": value}], "isError": False}


while True:
    line = sys.stdin.readline()
    if not line:
        break
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if request_id is None or method is None:
        continue
    if method == "initialize":
        reply(request_id, {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                           "capabilities": {"tools": {}},
                           "serverInfo": {"name": "stuck-server", "version": "1"}})
    elif method == "tools/list":
        reply(request_id, {"tools": TOOLS})
    elif method == "tools/call":
        name = params.get("name")
        if name == "deaf":
            time.sleep(3600)
        elif name == "jam":
            time.sleep(JAM_WAIT)
            sys.stdout.write('{"jsonrpc": "2.0"}\n')
            note = {"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "n" * 1000}}
            line = json.dumps(note) + "\n"
            sys.stdout.write(line * (JAM_BYTES // len(line) + 1))
            sys.stdout.flush()
            reply(request_id, text("jammed and done"))
        else:
            reply(request_id, text((params.get("arguments") or {}).get("text", "")))
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"method not found: {method}"}})
