"""Writes a catalog zenmode's no-fit calibration never saw: BFCL v4's
simple_python functions pooled into one catalog, with its requests as
relevant labels and BFCL's two irrelevance sets as no-fit labels.

Nothing in zenmode was chosen on these files (the no-fit threshold is to be
judged on catalogs the calibration never saw: see
docs/decisions/0004-no-fit-calibration.md), so they are written to a
directory of your choice, not committed.

Usage: python convert_bfcl_simple.py [--data DIR] OUT
DIR is bfcl-eval's `data` directory (default: the installed package; install
with `pip install --no-deps bfcl-eval==2026.3.23`, or unpack its wheel).

OUT receives:
- `catalog.json`: the 370 distinct functions of its 400 entries in `tools/list` shape;
- `relevant.jsonl`: the 400 requests, each with its function;
- `irrelevance.jsonl`: the 240 `irrelevance` requests (written against one
  or two functions of the simple kind that do not serve them; against the
  whole catalog a few are served after all, e.g. a triangle's area);
- `live_irrelevance.jsonl`: the 884 `live_irrelevance` requests.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from convert_bfcl_live import data_dir, schema


def question(entry: dict) -> str:
    turns = entry["question"][0]
    return next(t["content"] for t in turns if t["role"] == "user")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    data = args.data or data_dir()
    out = args.out
    out.mkdir(parents=True, exist_ok=True)
    tools: dict[str, dict] = {}
    relevant = []
    answers = {a["id"]: a for a in map(json.loads, (data / "possible_answer" / "BFCL_v4_simple_python.json").open())}
    for line in (data / "BFCL_v4_simple_python.json").open():
        entry = json.loads(line)
        for function in entry["function"]:
            tools.setdefault(function["name"], {
                "name": function["name"],
                "description": function.get("description", ""),
                "inputSchema": schema(function.get("parameters", {"type": "dict", "properties": {}})),
            })
        expected = next(iter(answers[entry["id"]]["ground_truth"][0]))
        relevant.append({"query": question(entry), "expected": expected})
    with (out / "catalog.json").open("w") as f:
        json.dump({"tools": sorted(tools.values(), key=lambda t: t["name"])}, f, indent=1)
    for name, rows in [
        ("relevant", relevant),
        ("irrelevance", [{"query": question(json.loads(l)), "expected": None} for l in (data / "BFCL_v4_irrelevance.json").open()]),
        ("live_irrelevance", [{"query": question(json.loads(l)), "expected": None} for l in (data / "BFCL_v4_live_irrelevance.json").open()]),
    ]:
        with (out / f"{name}.jsonl").open("w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        print(f"{name}: {len(rows)}")
    print(f"{len(tools)} tools -> {out}")


if __name__ == "__main__":
    main()
