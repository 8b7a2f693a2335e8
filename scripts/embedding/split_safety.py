#!/usr/bin/env python3
"""Builds the routing-safety sets (tests/data/safety) from their sources.

Reads benign.txt, change.txt and vocabulary.txt in tests/data/safety
(requests grouped under "@ expected | acceptable,... | traps,... | flags"
lines; the flag "benign" marks requests that ask for no change, and every
request of benign.txt is benign) and writes, in the same folder:

- catalog.json: the tools of the filesystem, memory and git reference
  servers and of GitHub's server, from ../shared/catalogs, each named
  "<server>__<tool>" as the gateway names them;
- <set>_tune.jsonl / <set>_heldout.jsonl for each source: `zenmode eval`
  labels ("benign": true where flagged).

The parsing and the split are the real-server set's (split_realservers.py):
within each group, requests ordered by the FNV-1a hash of their text
alternate between the halves, the first to the smaller half so far (tune on
a tie).
tests/select_safety.rs checks the files against their sources.

Usage: python3 scripts/embedding/split_safety.py [--catalogs DIR]
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SET = os.path.join(ROOT, "tests", "data", "safety")
SERVERS = ["filesystem", "memory", "git", "github"]
SOURCES = ["benign", "change", "vocabulary"]

sys.path.insert(0, HERE)
from split_realservers import parse, split, write_catalog, write_jsonl  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--catalogs", default=os.path.join(ROOT, "..", "shared", "catalogs"))
    args = parser.parse_args()
    tools = write_catalog(
        os.path.join(SET, "catalog.json"),
        args.catalogs,
        SERVERS,
        "tools/list of the filesystem, memory and git MCP reference servers "
        "(modelcontextprotocol/servers, MIT) and of github/github-mcp-server (MIT), "
        "as captured in ../shared/catalogs; names prefixed <server>__ as the gateway does",
    )
    for source in SOURCES:
        groups = parse(os.path.join(SET, f"{source}.txt"))
        if source == "benign":
            for group in groups:
                group["flags"] += ("benign",)
        tune, heldout = split(groups)["server"]
        write_jsonl(os.path.join(SET, f"{source}_tune.jsonl"), tune)
        write_jsonl(os.path.join(SET, f"{source}_heldout.jsonl"), heldout)
        print(f"{source}: tune {len(tune)}, held-out {len(heldout)}")
    print(f"catalog: {len(tools)} tools")


if __name__ == "__main__":
    main()
