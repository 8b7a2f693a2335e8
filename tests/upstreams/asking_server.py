#!/usr/bin/env python3
"""An MCP server (stdio, standard library only) that asks its client things
at awkward moments, for the flow-back tests (tests/gateway_flowback.rs).

Tools:
  wait {}          held: answered with what came back of the next `late`
                   request (its answer or its refusal); reports progress
                   once held, when the call asks for it.
  late {secret}    answered at once; 0.5 s later the server sends a
                   sampling/createMessage quoting the secret (a request
                   for a call that has returned).
  flood {count, report_when}
                   sends `count` elicitation/create requests at once and,
                   once `report_when` of them came back (or 15 s passed),
                   answers with how many came back answered and refused,
                   and the first refusal.
"""

import json
import sys
import threading
import time

TOOLS = [
    {"name": name, "description": text, "inputSchema": {"type": "object"}}
    for name, text in (
        ("wait", "Wait for the next late request's outcome."),
        ("late", "Answer, then ask the client for sampling."),
        ("flood", "Send many elicitation requests."),
    )
]

lock = threading.Lock()
waiting = []        # ids of held `wait` calls
pending = {}        # id of our request -> callback(message)


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def reply(request_id, text):
    send({"jsonrpc": "2.0", "id": request_id,
          "result": {"content": [{"type": "text", "text": text}], "isError": False}})


def outcome(message):
    if "error" in message:
        return "refused: " + message["error"].get("message", "")
    return "answered: " + json.dumps(message.get("result"))


def late(secret):
    time.sleep(0.5)

    def done(message):
        with lock:
            held = waiting.pop(0) if waiting else None
        if held is not None:
            reply(held, outcome(message))

    with lock:
        pending["late-1"] = done
    send({"jsonrpc": "2.0", "id": "late-1", "method": "sampling/createMessage",
          "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "the secret is " + secret}}],
                     "maxTokens": 10}})


def flood(request_id, count, report_when):
    results = []
    for n in range(count):
        ask_id = f"flood-{request_id}-{n}"
        with lock:
            pending[ask_id] = results.append
        send({"jsonrpc": "2.0", "id": ask_id, "method": "elicitation/create",
              "params": {"message": f"question {n}",
                         "requestedSchema": {"type": "object", "properties": {}}}})
    waited = 0.0
    while len(results) < report_when and waited < 15:
        time.sleep(0.05)
        waited += 0.05
    refused = [m["error"]["message"] for m in list(results) if "error" in m]
    answered = len(results) - len(refused)
    reply(request_id, json.dumps({"answered": answered, "refused": len(refused),
                                  "first_refusal": refused[0] if refused else None}))


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    request_id = message.get("id")
    if method is None and request_id is not None:
        with lock:
            callback = pending.pop(request_id, None)
        if callback is not None:
            callback(message)
        continue
    params = message.get("params") or {}
    if request_id is None:
        continue
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id,
              "result": {"protocolVersion": params.get("protocolVersion", "2025-06-18"),
                         "capabilities": {"tools": {}},
                         "serverInfo": {"name": "asking-server", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}})
    elif method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "wait":
            with lock:
                waiting.append(request_id)
            token = (params.get("_meta") or {}).get("progressToken")
            if token is not None:
                # Says it is held here, so the test knows the call arrived.
                send({"jsonrpc": "2.0", "method": "notifications/progress",
                      "params": {"progressToken": token, "progress": 0, "message": "held"}})
        elif name == "late":
            reply(request_id, "ok")
            threading.Thread(target=late, args=(arguments.get("secret", ""),), daemon=True).start()
        elif name == "flood":
            threading.Thread(target=flood, args=(request_id, int(arguments.get("count", 1)),
                                                 int(arguments.get("report_when", 1))),
                             daemon=True).start()
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"method not found: {method}"}})
