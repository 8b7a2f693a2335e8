"""Builds tests/data/foreign/bfcl_live/ from the PyPI package bfcl-eval.

Source: the "live_multiple" category of the Berkeley Function Calling
Leaderboard v4 (Apache-2.0): 1,053 queries written by real users, each with
the functions offered to the model and the one it must call. The converter
pools every function into one catalog (one entry per name, first description
wins) and writes the queries as `zenmode eval` labels, split in two halves by
a hash of the query id: `dev.jsonl` for tuning, `heldout.jsonl` for reporting
only.

Install with `pip install --no-deps bfcl-eval==2026.3.23` (its own
dependencies are not needed: only the data files are read).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "foreign" / "bfcl_live"

TYPES = {"dict": "object", "float": "number", "tuple": "array", "list": "array", "any": None, "str": "string", "int": "integer", "bool": "boolean"}


def schema(node):
    """BFCL's Python-flavoured types to JSON Schema."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "type" and isinstance(value, str):
                mapped = TYPES.get(value, value)
                if mapped is not None:
                    out["type"] = mapped
            elif key in ("properties",) and isinstance(value, dict):
                out[key] = {k: schema(v) for k, v in value.items()}
            else:
                out[key] = schema(value)
        return out
    if isinstance(node, list):
        return [schema(v) for v in node]
    return node


def data_dir() -> Path:
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("install bfcl-eval: pip install --no-deps bfcl-eval==2026.3.23")
    return Path(list(spec.submodule_search_locations)[0]) / "data"


def main() -> None:
    data = data_dir()
    entries = [json.loads(l) for l in (data / "BFCL_v4_live_multiple.json").open()]
    answers = {a["id"]: a for a in map(json.loads, (data / "possible_answer" / "BFCL_v4_live_multiple.json").open())}
    tools: dict[str, dict] = {}
    halves: dict[str, list[str]] = {"dev": [], "heldout": []}
    for entry in entries:
        for function in entry["function"]:
            if function["name"] not in tools:
                tools[function["name"]] = {
                    "name": function["name"],
                    "description": function.get("description", ""),
                    "inputSchema": schema(function.get("parameters", {"type": "dict", "properties": {}})),
                }
        users = [m["content"] for m in entry["question"][0] if m["role"] == "user"]
        expected = list(answers[entry["id"]]["ground_truth"][0].keys())[0]
        assert expected in tools, expected
        half = "dev" if hashlib.sha256(entry["id"].encode()).digest()[0] % 2 == 0 else "heldout"
        halves[half].append(json.dumps({"query": users[-1].strip(), "expected": expected}, ensure_ascii=False))
    OUT.mkdir(parents=True, exist_ok=True)
    catalog = {"tools": sorted(tools.values(), key=lambda t: t["name"])}
    (OUT / "catalog.json").write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n")
    for half, lines in halves.items():
        (OUT / f"{half}.jsonl").write_text("\n".join(lines) + "\n")
    print(f"{len(tools)} tools; dev {len(halves['dev'])}, heldout {len(halves['heldout'])} queries -> {OUT}")
    irrelevant(data)


def irrelevant(data: Path) -> None:
    """live_irrelevance: real user requests that none of the functions offered
    with them can serve. They are scored against the bfcl_multiple catalog
    (maths, science, finance, sport, travel ... APIs), which has no tool for
    device control, chit-chat or server administration, as no-fit queries
    ("expected": null), split in halves like the live set."""
    out = OUT.parent / "bfcl_irrelevance"
    out.mkdir(parents=True, exist_ok=True)
    halves: dict[str, list[str]] = {"dev": [], "heldout": []}
    for line in (data / "BFCL_v4_live_irrelevance.json").open():
        entry = json.loads(line)
        users = [m["content"] for turn in entry["question"] for m in turn if m["role"] == "user"]
        if not users or not users[-1].strip():
            continue
        half = "dev" if hashlib.sha256(entry["id"].encode()).digest()[0] % 2 == 0 else "heldout"
        halves[half].append(json.dumps({"query": users[-1].strip(), "expected": None}, ensure_ascii=False))
    for half, lines in halves.items():
        (out / f"{half}.jsonl").write_text("\n".join(lines) + "\n")
    print(f"irrelevant: dev {len(halves['dev'])}, heldout {len(halves['heldout'])} queries -> {out}")


if __name__ == "__main__":
    main()
