"""Builds tests/data/foreign/metatool/ from a checkout of MetaTool.

Source: github.com/HowieHwong/MetaTool (MIT), the benchmark of "MetaTool:
Deciding Whether to Use Tools and Which to Use" (ICLR 2024). Its 199 tools
are ChatGPT plugins with one-line marketing descriptions and no schemas,
much like the terse catalogs of many MCP servers, and its queries were
written per tool. Task 1 adds requests that need no tool at all (write an
essay, explain a concept): those become no-fit queries.

    python convert_metatool.py PATH/TO/MetaTool

Writes `catalog.json` (199 tools in `tools/list` shape, with an empty
object schema), and `dev.jsonl` / `heldout.jsonl`: relevant queries, at most
PER_TOOL per tool and half, chosen by a hash of the query so the sample is
stable, plus the Task 1 negatives as `"expected": null`. Halves are split by
the same hash; only `dev.jsonl` is ever looked at while tuning.
"""

from __future__ import annotations

import csv
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "foreign" / "metatool"
PER_TOOL = 4


def digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def half_of(text: str) -> str:
    return "dev" if digest(text)[0] % 2 == 0 else "heldout"


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    repo = Path(sys.argv[1])
    descriptions = json.loads((repo / "dataset" / "plugin_des.json").read_text())
    tools = [
        {"name": name, "description": text.strip(), "inputSchema": {"type": "object"}}
        for name, text in sorted(descriptions.items())
    ]

    by_tool: dict[tuple[str, str], list[str]] = defaultdict(list)
    with (repo / "dataset" / "data" / "all_clean_data.csv").open(newline="") as f:
        for row in csv.DictReader(f):
            query = row["Query"].strip()
            if query and row["Tool"] in descriptions:
                by_tool[(half_of(query), row["Tool"])].append(query)

    halves: dict[str, list[str]] = {"dev": [], "heldout": []}
    for (half, tool), queries in sorted(by_tool.items()):
        for query in sorted(set(queries), key=digest)[:PER_TOOL]:
            halves[half].append(json.dumps({"query": query, "expected": tool}, ensure_ascii=False))

    awareness = json.loads((repo / "dataset" / "tmp_dataset" / "Task1.json").read_text())
    negatives = sorted({e["query"].strip() for e in awareness if e.get("label") == "negative" and e["query"].strip()})
    for query in negatives:
        halves[half_of(query)].append(json.dumps({"query": query, "expected": None}, ensure_ascii=False))

    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "catalog.json").write_text(json.dumps({"tools": tools}, indent=1, ensure_ascii=False) + "\n")
    for half, lines in halves.items():
        (OUT / f"{half}.jsonl").write_text("\n".join(lines) + "\n")
    print(f"{len(tools)} tools; dev {len(halves['dev'])}, heldout {len(halves['heldout'])} queries ({len(negatives)} no-fit in all) -> {OUT}")


if __name__ == "__main__":
    main()
