"""Scores the static-embedding signal alone, as zenmode's `--ranker embed`
ranks, on the DEV halves only (never a heldout file).

    python scripts/embedding/eval_static.py [TABLE.bin ...] [--model DIR]
    python scripts/embedding/eval_static.py --teacher [--model DIR]   # the full model: the ceiling

Default tables: the cached distilled table that refine.py starts from
(minilm.py's CACHE / "refine" / distilled.bin) and
data/embedding/minilm_l6_static.bin. Sets: MetaTool and BFCL live DEV halves
(tests/data/foreign), and bfcl_multiple from ../shared/routing (the global
catalog, and each local group's own catalog of 2 to 4 tools).

Tool text: mod.rs meaning_text ("name in words: description"); the query as
written; cosine of the sum-of-rows unit vectors. Labels whose expected tool
is not in the catalog (no-fit) are skipped. rank = 1 + the number of tools
scoring strictly higher than the expected one. Cells: top-1 / MRR.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
from pathlib import Path

import numpy as np

import zentable as zt
from minilm import CACHE

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
FOREIGN = ROOT / "tests" / "data" / "foreign"
BFCL_MULTIPLE = SHARED / "routing" / "bfcl_multiple"
CACHE_DIR = CACHE / "refine"
MODEL_DIR = CACHE / "all-MiniLM-L6-v2"  # fetch_model.sh's default folder
TABLE = ROOT / "data" / "embedding" / "minilm_l6_static.bin"
SETS = [
    ("metatool_dev", FOREIGN / "metatool" / "catalog.json", FOREIGN / "metatool" / "dev.jsonl"),
    ("bfcl_live_dev", FOREIGN / "bfcl_live" / "catalog.json", FOREIGN / "bfcl_live" / "dev.jsonl"),
    ("bfcl_multiple_global", BFCL_MULTIPLE / "global_catalog.json", BFCL_MULTIPLE / "global_labels.jsonl"),
]


def dev_open(path):
    """Opens an evaluation file; held-out halves are refused."""
    assert "heldout" not in str(path), f"refusing to read held-out data: {path}"
    return open(path)


def load_sets():
    out = []
    for name, cat, labels in SETS:
        tools = json.load(dev_open(cat))["tools"]
        names = [t["name"] for t in tools]
        rows = [json.loads(l) for l in dev_open(labels) if l.strip()]
        rows = [r for r in rows if r.get("expected") in names]
        out.append((name, [zt.meaning_text(t) for t in tools], [r["query"] for r in rows], [names.index(r["expected"]) for r in rows]))
    # bfcl_multiple local groups: each group's own small catalog (2-4 candidates)
    groups = []
    for cat in sorted(glob.glob(str(BFCL_MULTIPLE / "local" / "g*.json"))):
        tools = json.load(dev_open(cat))["tools"]
        names = [t["name"] for t in tools]
        rows = [json.loads(l) for l in dev_open(cat[:-5] + ".jsonl") if l.strip()]
        rows = [r for r in rows if r.get("expected") in names]
        groups.append(([zt.meaning_text(t) for t in tools], [r["query"] for r in rows], [names.index(r["expected"]) for r in rows]))
    return out, groups


def ranks(tool_vecs, query_vecs, targets):
    scores = query_vecs @ tool_vecs.T
    t = scores[np.arange(len(targets)), targets]
    return 1 + (scores > t[:, None] + 0.0).sum(1)


class Evaluator:
    def __init__(self, tokens):
        self.numeric = zt.numeric_mask(tokens)
        self.sets, self.groups = load_sets()
        self.ids = [(name, zt.encode_ids(tt, self.numeric), zt.encode_ids(qq, self.numeric), np.array(tg)) for name, tt, qq, tg in self.sets]
        self.gids = [(zt.encode_ids(tt, self.numeric), zt.encode_ids(qq, self.numeric), np.array(tg)) for tt, qq, tg in self.groups]

    def run(self, table, weights=None):
        res = {}
        for name, tids, qids, tg in self.ids:
            r = ranks(zt.embed(table, tids, weights), zt.embed(table, qids, weights), tg)
            res[name] = (len(tg), float((r == 1).mean()), float((1.0 / r).mean()))
        allr = []
        for tids, qids, tg in self.gids:
            if len(tg):
                allr.append(ranks(zt.embed(table, tids, weights), zt.embed(table, qids, weights), tg))
        r = np.concatenate(allr)
        res["bfcl_multiple_local"] = (len(r), float((r == 1).mean()), float((1.0 / r).mean()))
        return res


def compare(paths):
    tokens, _ = zt.dequantize(paths[0])
    ev = Evaluator(tokens)
    results = {}
    for p in paths:
        tk, table = zt.dequantize(p)
        assert tk == tokens
        results[p] = ev.run(table)
    print(f"{'set':24s} {'n':>5s} " + " ".join(f"{os.path.basename(p)[:22]:>22s}" for p in paths))
    for name in results[paths[0]]:
        n = results[paths[0]][name][0]
        cells = " ".join(f"{results[p][name][1]:.3f} / {results[p][name][2]:.3f}".rjust(22) for p in paths)
        print(f"{name:24s} {n:5d} {cells}")
    print("(cells: top-1 / MRR)")


def teacher_baseline(model_dir):
    """The full model (sentence-transformers, 1 thread) on the same sets: the ceiling."""
    import torch

    torch.set_num_threads(1)
    from sentence_transformers import SentenceTransformer

    if not (Path(model_dir) / "modules.json").exists():
        raise SystemExit(f"{Path(model_dir) / 'modules.json'} not found: fill the folder with scripts/embedding/fetch_model.sh DIR")
    m = SentenceTransformer(str(model_dir), device="cpu")
    sets, groups = load_sets()
    for name, tt, qq, tg in sets:
        r = ranks(m.encode(tt, normalize_embeddings=True), m.encode(qq, normalize_embeddings=True), np.array(tg))
        print(f"teacher {name:24s} {len(r):5d} {(r == 1).mean():.3f} / {(1.0 / r).mean():.3f}")


def main():
    ap = argparse.ArgumentParser(description="The static-embedding signal alone on the DEV halves (top-1 / MRR).")
    ap.add_argument("tables", nargs="*", type=Path, metavar="TABLE.bin", help=f"tables to compare (default: {CACHE_DIR / 'distilled.bin'} and {TABLE.relative_to(ROOT)})")
    ap.add_argument("--teacher", action="store_true", help="score the full model instead (sentence-transformers): the ceiling")
    ap.add_argument("--model", type=Path, default=MODEL_DIR, metavar="DIR", help=f"folder filled by fetch_model.sh (default {MODEL_DIR})")
    args = ap.parse_args()
    if args.teacher:
        teacher_baseline(args.model)
        return
    zt.use_model(args.model)
    compare(args.tables or [CACHE_DIR / "distilled.bin", TABLE])


if __name__ == "__main__":
    main()
