#!/usr/bin/env python3
"""Writes one tools/list catalog of several servers installed together.

    python3 scripts/examples/profile_catalog.py OUT.json SERVER...

Each SERVER is a catalog of ../shared/catalogs (by its server id: huly and
playwright name huly_v0.1.35 and playwright_allcaps) or, failing that, of
tests/data/registry (servers captured from their npm packages); tools are named
<server>__<tool>, as the gateway names them, with a "server" field.
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATALOGS = os.path.join(ROOT, "..", "shared", "catalogs")
REGISTRY = os.path.join(ROOT, "tests", "data", "registry")
FILES = {"huly": "huly_v0.1.35", "playwright": "playwright_allcaps"}


def main():
    out, servers = sys.argv[1], sys.argv[2:]
    tools = []
    for server in servers:
        path = os.path.join(CATALOGS, FILES.get(server, server) + ".json")
        if not os.path.exists(path):
            path = os.path.join(REGISTRY, server + ".json")
        catalog = json.load(open(path))
        for tool in catalog["tools"]:
            tool = dict(tool, name=f"{server}__{tool['name']}", server=server)
            tools.append(tool)
    json.dump({"servers": servers, "count": len(tools), "tools": tools}, open(out, "w"))


if __name__ == "__main__":
    main()
