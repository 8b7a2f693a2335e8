"""Scores the full all-MiniLM-L6-v2 model as a tool ranker: the baseline
zenmode's selection is compared with (docs/benchmarks.md, "Selection").

    python baseline.py CATALOG.json LABELS.jsonl [LABELS.jsonl ...]
    python baseline.py --builtin-modes modes CATALOG.json LABELS.jsonl ...

A tool is embedded as "name: description" (its name split into words), a
query as written; tools rank by cosine similarity. `--builtin-modes DIR`
adds zenmode's own modes (`DIR/*.json`, as "name: description") to the
catalog, the mixed catalog a gateway user has. `CATALOG.json` may be
`-` for the built-in modes alone.

Prints one JSON line per labels file and, with several files, one for them
pooled ("labels": "all"), as `zenmode eval` pools `--labels`:

- top1, top1_acceptable (an `acceptable` tool first counts), top3, mrr over
  the labels whose expected tool is in the catalog (others are skipped and
  counted as `skipped`);
- traps_taken / trap_queries: labels whose first-ranked tool (the model's
  only possible next call) is one of their `traps`, listed in `traps_list`;
- no-fit queries (`"expected": null`): the model has no threshold of its
  own, so only what the best threshold in hindsight would do is given, as
  `zenmode eval` reports it: `caught_with_a_tenth_flagged` (no-fit queries
  whose best cosine is below the 90th-percentile-lowest relevant one) and
  `flagged_with_four_fifths_caught`.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from pathlib import Path

import numpy as np

from minilm import MiniLM


def tool_text(tool: dict) -> str:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool["name"])
    words = re.sub(r"[_.\-/]+", " ", words)
    return f"{words}: {tool.get('description') or ''}"


def builtin_modes(directory: Path) -> list[dict]:
    modes = []
    for path in sorted(directory.glob("*.json")):
        manifest = json.loads(path.read_text())
        if "name" in manifest:
            modes.append({"name": manifest["name"], "description": manifest.get("description") or manifest.get("summary")})
    return modes


def separation(relevant: list[float], no_fit: list[float]) -> dict | None:
    """The two hindsight trade-offs of `zenmode eval` (src/select/eval/), on the
    best cosine instead of zenmode's margin: flagged when at or below."""
    if not relevant or not no_fit:
        return None
    relevant, no_fit = sorted(relevant), sorted(no_fit)
    allowed = len(relevant) // 10
    if allowed < len(relevant):
        spared = relevant[allowed]
        caught = sum(m < spared for m in no_fit) / len(no_fit)
    else:
        caught = 1.0
    wanted = max(1, math.ceil(len(no_fit) * 4 / 5))
    threshold = no_fit[wanted - 1]
    flagged = sum(m <= threshold for m in relevant) / len(relevant)
    return {"caught_with_a_tenth_flagged": round(caught, 3), "flagged_with_four_fifths_caught": round(flagged, 3)}


_VECTORS: dict[str, np.ndarray] = {}


def encode(model: MiniLM, texts: list[str]) -> np.ndarray:
    """Each query once, however many pooled reports it is in."""
    new = sorted({t for t in texts if t not in _VECTORS})
    if new:
        for text, vector in zip(new, model.encode(new)):
            _VECTORS[text] = vector
    return np.stack([_VECTORS[t] for t in texts])


def score(name: str, labels: list[dict], names: list[str], model: MiniLM, tool_vectors: np.ndarray) -> dict:
    index = {n: i for i, n in enumerate(names)}
    relevant = [l for l in labels if l.get("expected") in index]
    no_fit = [l for l in labels if l.get("expected") is None]
    skipped = len(labels) - len(relevant) - len(no_fit)
    scored = relevant + no_fit
    result: dict = {"labels": name, "n": len(relevant), "skipped": skipped, "tools": len(names)}
    if not scored:
        return result
    scores = encode(model, [l["query"] for l in scored]) @ tool_vectors.T
    top1 = top1_acceptable = top3 = mrr = 0.0
    trap_queries, traps = 0, []
    relevant_best, no_fit_best = [], []
    for row, label in zip(scores, scored):
        first = names[int(np.argmax(row))]
        if label.get("traps"):
            trap_queries += 1
            if first in label["traps"]:
                traps.append({"query": label["query"], "expected": label.get("expected"), "trap": first})
        if label.get("expected") is None:
            no_fit_best.append(float(row.max()))
            continue
        relevant_best.append(float(row.max()))
        target = row[index[label["expected"]]]
        rank = int((row > target).sum()) + 1
        top1 += rank == 1
        top1_acceptable += rank == 1 or first in label.get("acceptable", [])
        top3 += rank <= 3
        mrr += 1.0 / rank
    n = len(relevant)
    if n:
        result.update(
            top1=round(top1 / n, 3),
            top1_acceptable=round(top1_acceptable / n, 3),
            top3=round(top3 / n, 3),
            mrr=round(mrr / n, 3),
        )
    result.update(trap_queries=trap_queries, traps_taken=len(traps), traps_list=traps, no_fit_queries=len(no_fit))
    sep = separation(relevant_best, no_fit_best)
    if sep:
        result["no_fit_separation"] = sep
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description="all-MiniLM-L6-v2 alone as a tool ranker")
    parser.add_argument("--builtin-modes", type=Path, metavar="DIR", help="add zenmode's modes (DIR/*.json)")
    parser.add_argument("catalog", help="tools/list-shaped JSON, or - for none")
    parser.add_argument("labels", nargs="+")
    args = parser.parse_args()
    tools = [] if args.catalog == "-" else json.load(open(args.catalog))["tools"]
    if args.builtin_modes:
        tools = builtin_modes(args.builtin_modes) + tools
    names = [t["name"] for t in tools]
    model = MiniLM()
    tool_vectors = model.encode([tool_text(t) for t in tools])
    pooled = []
    for path in args.labels:
        labels = [json.loads(l) for l in open(path) if l.strip()]
        pooled += labels
        print(json.dumps(score(path, labels, names, model, tool_vectors)))
    if len(args.labels) > 1:
        print(json.dumps(score("all", pooled, names, model, tool_vectors)))


if __name__ == "__main__":
    main()
