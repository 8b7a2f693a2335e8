#!/usr/bin/env python3
"""An MCP server with resources (stdio, standard library only), for the
resource routing tests (tests/gateway_resources.rs).

Options:
  --name NAME             what its reads say they were read by
  --templates JSON        its resource templates (a list of uriTemplate strings)
  --listings JSON         what resources/list returns: a list of URI lists, the
                          n-th listing gets the n-th (the last one after that)
  --subscribe-delay SECS  how long resources/subscribe takes to answer

resources/read answers with "read by NAME: URI"; the URI stats://NAME
answers with how many listings, subscribes and unsubscribes it has had.
"""

import json
import sys
import threading
import time

args = sys.argv[1:]


def option(name, default):
    return args[args.index(name) + 1] if name in args else default


NAME = option("--name", "resources")
TEMPLATES = json.loads(option("--templates", "[]"))
LISTINGS = json.loads(option("--listings", "[[]]"))
SUBSCRIBE_DELAY = float(option("--subscribe-delay", "0"))

lock = threading.Lock()
counts = {"lists": 0, "subscribes": 0, "unsubscribes": 0}


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def reply(request_id, result):
    send({"jsonrpc": "2.0", "id": request_id, "result": result})


def subscribe(request_id):
    time.sleep(SUBSCRIBE_DELAY)
    reply(request_id, {})


for line in sys.stdin:
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
                           "capabilities": {"tools": {}, "resources": {"subscribe": True}},
                           "serverInfo": {"name": NAME, "version": "1"}})
    elif method == "tools/list":
        reply(request_id, {"tools": []})
    elif method == "resources/list":
        with lock:
            listing = LISTINGS[min(counts["lists"], len(LISTINGS) - 1)]
            counts["lists"] += 1
        reply(request_id, {"resources": [{"uri": uri, "name": uri} for uri in listing]})
    elif method == "resources/templates/list":
        reply(request_id, {"resourceTemplates": [{"uriTemplate": t, "name": t} for t in TEMPLATES]})
    elif method == "resources/read":
        uri = params.get("uri", "")
        text = json.dumps(counts) if uri == "stats://" + NAME else f"read by {NAME}: {uri}"
        reply(request_id, {"contents": [{"uri": uri, "text": text}]})
    elif method == "resources/subscribe":
        with lock:
            counts["subscribes"] += 1
        threading.Thread(target=subscribe, args=(request_id,), daemon=True).start()
    elif method == "resources/unsubscribe":
        with lock:
            counts["unsubscribes"] += 1
        reply(request_id, {})
    else:
        send({"jsonrpc": "2.0", "id": request_id,
              "error": {"code": -32601, "message": f"method not found: {method}"}})
