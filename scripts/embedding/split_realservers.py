#!/usr/bin/env python3
"""Builds the real-server evaluation set from its source file.

Reads tests/data/foreign/realservers/requests.txt (requests grouped under
"@ expected | acceptable,... | traps,... | flags" lines; the flag "benign"
marks requests that ask for no change) and writes, in the same folder:

- catalog.json: the tools of the six servers .ci/run installs, from
  ../shared/catalogs (filesystem, memory, git, time, fetch, everything),
  each named "<server>__<tool>" as the gateway names them;
- tune.jsonl / heldout.jsonl: the server requests (`zenmode eval` labels,
  with "traps": tools that would do harm if run for that request);
- builtin_tune.jsonl / builtin_heldout.jsonl: requests for zenmode's own
  modes (only meaningful with the built-in modes on);
- nofit_tune.jsonl / nofit_heldout.jsonl: requests no tool serves
  ("expected": null).

A group is every request under the same "@" line (the same label); an "@"
line repeated later in the file adds to its group.

The split is deterministic: within each group of requests with the same
expected tool, requests are ordered by the FNV-1a hash of their text and
alternate between the halves (the first to the half that is smaller so
far, tune on a tie); a group with an odd count gives its extra
request to that same half (groups in file order of their first "@" line). So
every tool is in both halves and the halves differ by at most one.
tests/select_realservers.rs checks the files against this rule.

Usage: python3 scripts/embedding/split_realservers.py [--catalogs DIR]
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SET = os.path.join(ROOT, "tests", "data", "foreign", "realservers")
SERVERS = ["filesystem", "memory", "git", "time", "fetch", "everything"]


def fnv1a(text):
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        value ^= byte
        value = (value * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def names(field):
    return [n.strip() for n in field.split(",") if n.strip()]


def parse(path):
    """[(kind, label)] in file order; kind is server, builtin or nofit."""
    groups, current = [], None
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("@"):
                parts = [p.strip() for p in line[1:].split("|")]
                parts += [""] * (4 - len(parts))
                expected, acceptable, traps = parts[0], names(parts[1]), names(parts[2])
                flags = tuple(names(parts[3]))
                kind = "server"
                if expected == "null":
                    expected, kind = None, "nofit"
                elif expected.startswith("builtin:"):
                    kind = "builtin"
                strip = lambda n: n[len("builtin:"):] if n.startswith("builtin:") else n
                key = (kind, expected, tuple(acceptable), tuple(traps), flags)
                current = next((g for g in groups if g["key"] == key), None)
                if current is None:
                    current = {
                        "key": key,
                        "kind": kind,
                        "expected": strip(expected) if expected else None,
                        "acceptable": [strip(n) for n in acceptable],
                        "traps": traps,
                        "flags": flags,
                        "queries": [],
                    }
                    groups.append(current)
                continue
            if current is None:
                sys.exit(f"{path}:{number}: request before any '@' line")
            current["queries"].append(line)
    return groups


def split(groups):
    halves = {kind: ([], []) for kind in ("server", "builtin", "nofit")}
    for group in groups:
        tune, heldout = halves[group["kind"]]
        ordered = sorted(group["queries"], key=lambda q: (fnv1a(q), q))
        first_to_tune = len(tune) <= len(heldout)
        for position, query in enumerate(ordered):
            label = {"query": query, "expected": group["expected"]}
            if group["acceptable"]:
                label["acceptable"] = group["acceptable"]
            if group["traps"]:
                label["traps"] = group["traps"]
            if "benign" in group["flags"]:
                label["benign"] = True
            to_tune = (position % 2 == 0) == first_to_tune
            (tune if to_tune else heldout).append(label)
    return halves


def write_catalog(path, catalogs, servers, source):
    """Writes the servers' tools, each named "<server>__<tool>", to path;
    returns them."""
    tools = []
    for server in servers:
        with open(os.path.join(catalogs, f"{server}.json"), encoding="utf-8") as handle:
            catalog = json.load(handle)
        for tool in catalog["tools"]:
            tool = dict(tool)
            tool["name"] = f"{server}__{tool['name']}"
            tools.append(tool)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(
            {"source": source, "servers": servers, "count": len(tools), "tools": tools},
            handle,
            indent=1,
            ensure_ascii=False,
        )
        handle.write("\n")
    return tools


def write_jsonl(path, labels):
    with open(path, "w", encoding="utf-8") as handle:
        for label in labels:
            handle.write(json.dumps(label, ensure_ascii=False) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalogs", default=os.path.join(ROOT, "..", "shared", "catalogs"))
    args = parser.parse_args()
    tools = write_catalog(
        os.path.join(SET, "catalog.json"),
        args.catalogs,
        SERVERS,
        "tools/list of the MCP reference servers (modelcontextprotocol/servers, MIT), "
        "as captured in ../shared/catalogs; names prefixed <server>__ as the gateway does",
    )
    halves = split(parse(os.path.join(SET, "requests.txt")))
    prefix = {"server": "", "builtin": "builtin_", "nofit": "nofit_"}
    for kind, (tune, heldout) in halves.items():
        write_jsonl(os.path.join(SET, f"{prefix[kind]}tune.jsonl"), tune)
        write_jsonl(os.path.join(SET, f"{prefix[kind]}heldout.jsonl"), heldout)
        print(f"{kind}: tune {len(tune)}, held-out {len(heldout)}")
    print(f"catalog: {len(tools)} tools")


if __name__ == "__main__":
    main()
