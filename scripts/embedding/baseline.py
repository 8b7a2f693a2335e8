"""Scores the full all-MiniLM-L6-v2 model as a tool ranker: the baseline
zenmode's selection is compared with (docs/selection.md).

    python baseline.py CATALOG.json LABELS.jsonl [LABELS.jsonl ...]

A tool is embedded as "name: description" (its name split into words), a
query as written; tools rank by cosine similarity. Prints top-1, top-3 and
MRR per labels file, over the labels whose expected tool is in the catalog.
"""

from __future__ import annotations

import json
import re
import sys

import numpy as np

from minilm import MiniLM


def tool_text(tool: dict) -> str:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool["name"])
    words = re.sub(r"[_.\-/]+", " ", words)
    return f"{words}: {tool.get('description') or ''}"


def main() -> None:
    catalog, *label_files = sys.argv[1:]
    tools = json.load(open(catalog))["tools"]
    names = [t["name"] for t in tools]
    model = MiniLM()
    tool_vectors = model.encode([tool_text(t) for t in tools])
    for path in label_files:
        labels = [json.loads(l) for l in open(path) if l.strip()]
        labels = [l for l in labels if l.get("expected") in names]
        query_vectors = model.encode([l["query"] for l in labels])
        scores = query_vectors @ tool_vectors.T
        top1 = top3 = mrr = 0.0
        for row, label in zip(scores, labels):
            target = row[names.index(label["expected"])]
            rank = int((row > target).sum()) + 1
            top1 += rank == 1
            top3 += rank <= 3
            mrr += 1.0 / rank
        n = len(labels)
        print(json.dumps({"labels": path, "n": n, "top1": round(top1 / n, 3), "top3": round(top3 / n, 3), "mrr": round(mrr / n, 3)}))


if __name__ == "__main__":
    main()
