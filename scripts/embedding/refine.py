"""Refines the distilled static token table against the full model's sentence vectors.

    python scripts/embedding/refine.py --weights [--epochs 3] [--lr 1e-3] [--l2 0.3]
        [--batch 256] [--seed 0] [--valid 0.05] [--table-in PATH] [--out PATH]

The shipped table is `refine.py --weights` with the other defaults, run after
distill.py and corpus.py (about four minutes on corpus.py's 160,000 texts).
It was built with OMP_NUM_THREADS=1 MKL_NUM_THREADS=1; other BLAS thread
counts can change the last bits of the least-squares start and so of the
result.

Which table it starts from: distill.py writes the plain distilled table to
data/embedding/minilm_l6_static.bin, and this script writes the refined one
to the same path. So that a second run does not refine an already refined
table, the input (--table-in, default that same path) is first copied to the
cache folder as distilled.bin if no copy is there yet, and training always
starts from that cached copy. After re-running distill.py, delete
distilled.bin from the cache folder (minilm.py's CACHE / "refine") so the
next run picks up the new table. corpus.jsonl and teacher.npy are read from
the same folder (corpus.py writes them there).

Start: the distilled table's rows (dequantized, 256 dimensions). Target: the
model's (all-MiniLM-L6-v2) unit sentence vector of each corpus text,
projected on the top 256 (uncentred) principal directions of the corpus'
model vectors and renormalised. Student: the sum of the text's token rows
(zenmode's pooling: same ids, numbers dropped), times a learned 256x256 map
W (started at the least-squares fit), unit length. Loss: 1 - cosine, plus
l2 * the mean squared drift of the touched rows from their start values.
With --weights, also a scalar weight per token (softplus-parametrised,
starting at 1). Everything is linear in the rows, so the map and the weights
are baked into the rows at the end:
    row' = weight * row @ W
and the run-time pooling (sum of rows, unit length) is unchanged. Writes the
table in the same ZENEMB01 format and vocabulary order.

The evaluation sets are not read, except with --eval, which prints the DEV
halves' scores (eval_static.py) per epoch for information and does not
change the result.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import torch

import zentable as zt
from minilm import CACHE

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = CACHE / "refine"
MODEL_DIR = CACHE / "all-MiniLM-L6-v2"  # fetch_model.sh's default folder
TABLE = ROOT / "data" / "embedding" / "minilm_l6_static.bin"


def batches(n, size, rng):
    order = rng.permutation(n)
    for s in range(0, n, size):
        yield order[s : s + size]


def pack(id_lists, idx):
    ids = [id_lists[i] for i in idx]
    lens = np.array([len(x) for x in ids])
    flat = np.concatenate(ids) if len(ids) else np.zeros(0, np.int64)
    offsets = np.concatenate([[0], np.cumsum(lens)[:-1]])
    return torch.from_numpy(flat.astype(np.int64)), torch.from_numpy(offsets.astype(np.int64))


def main():
    ap = argparse.ArgumentParser(description="Refines the distilled static token table (the shipped table: --weights, other defaults).")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--batch", type=int, default=256)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--l2", type=float, default=0.3)
    ap.add_argument("--weights", action="store_true", help="learn per-token scalar weights too")
    ap.add_argument("--freeze-table", action="store_true", help="train only the map (and weights)")
    ap.add_argument("--fixed-map", action="store_true", help="keep W at its least-squares init")
    ap.add_argument("--valid", type=float, default=0.05)
    ap.add_argument("--eval", action="store_true", help="print DEV metrics per epoch (information only)")
    ap.add_argument("--table-in", type=Path, default=TABLE, metavar="PATH", help=f"distilled table, copied once to {CACHE_DIR / 'distilled.bin'} (default {TABLE.relative_to(ROOT)})")
    ap.add_argument("--out", type=Path, default=TABLE, metavar="PATH", help=f"refined table (default {TABLE.relative_to(ROOT)})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sources", default="modes,catalogs,man,docstrings,packages,wordnet", help="corpus sources to train on (ablation)")
    ap.add_argument("--teacher", type=Path, default=CACHE_DIR / "teacher.npy", metavar="PATH", help="corpus.py's sentence vectors")
    ap.add_argument("--model", type=Path, default=MODEL_DIR, metavar="DIR", help=f"folder with the model's tokenizer.json (default {MODEL_DIR})")
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)

    zt.use_model(args.model)
    distilled = CACHE_DIR / "distilled.bin"
    if not distilled.exists():
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(args.table_in, distilled)
        print(f"copied {args.table_in} to {distilled}; training starts from that copy", flush=True)
    else:
        print(f"training starts from {distilled} (delete it to take a new distilled table)", flush=True)
    tokens, E0 = zt.dequantize(distilled)
    numeric = zt.numeric_mask(tokens)
    rows = [json.loads(l) for l in open(CACHE_DIR / "corpus.jsonl")]
    texts = [r["text"] for r in rows]
    teacher = np.load(args.teacher)
    assert len(texts) == len(teacher)
    ids = zt.encode_ids(texts, numeric)
    wanted = set(args.sources.split(","))
    keep = np.array([len(x) > 0 and r["source"] in wanted for x, r in zip(ids, rows)]) & (np.linalg.norm(teacher, axis=1) > 0.5)
    texts = [t for t, k in zip(texts, keep) if k]
    ids = [x for x, k in zip(ids, keep) if k]
    teacher = teacher[keep]
    n = len(texts)
    perm = rng.permutation(n)
    n_valid = int(n * args.valid)
    valid, train = perm[:n_valid], perm[n_valid:]

    # fixed target space: top-256 uncentred principal directions of the teacher vectors (train part)
    _, sv, vt = np.linalg.svd(teacher[train], full_matrices=False)
    P = vt[:256].T.astype(np.float32)  # 384 x 256
    kept = (sv[:256] ** 2).sum() / (sv ** 2).sum()
    target = teacher @ P
    target /= np.linalg.norm(target, axis=1, keepdims=True)
    print(f"{n} texts ({len(train)} train / {n_valid} valid); PCA keeps {kept:.3f} of the teacher's energy", flush=True)

    X0 = zt.embed(E0, ids)
    W0, *_ = np.linalg.lstsq(X0[train], target[train], rcond=None)
    W0 = W0.astype(np.float32)

    def cos_valid(E, W, w=None):
        X = zt.embed(E, [ids[i] for i in valid], w) @ W
        X /= np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-9)
        return float((X * target[valid]).sum(1).mean())

    def baked(E, W, w=None):
        T = E if w is None else E * w[:, None]
        return (T @ W).astype(np.float32)

    ev = None
    if args.eval:
        from eval_static import Evaluator

        ev = Evaluator(tokens)

        def show(tag, table):
            r = ev.run(table)
            print(tag, " ".join(f"{k}={v[1]:.3f}/{v[2]:.3f}" for k, v in r.items()), flush=True)

        show("dev distilled     ", E0)
        show("dev distilled @ W0", baked(E0, W0))
    print(f"valid cos: distilled table @ W0 {cos_valid(E0, W0):.4f}", flush=True)

    E = torch.nn.Parameter(torch.from_numpy(E0.copy()))
    E_init = torch.from_numpy(E0.copy())
    W = torch.nn.Parameter(torch.from_numpy(W0.copy()))
    raw_w = torch.nn.Parameter(torch.full((len(tokens),), float(np.log(np.e - 1.0))))  # softplus -> 1
    params = [] if args.freeze_table else [E]
    if not args.fixed_map:
        params.append(W)
    if args.weights:
        params.append(raw_w)
    opt = torch.optim.Adam(params, lr=args.lr)
    tgt = torch.from_numpy(target.astype(np.float32))
    steps = args.epochs * ((len(train) + args.batch - 1) // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.1)
    t0 = time.time()
    for epoch in range(args.epochs):
        total, count = 0.0, 0
        for idx in batches(len(train), args.batch, rng):
            b = train[idx]
            flat, offsets = pack(ids, b)
            rows = E[flat]
            if args.weights:
                rows = rows * torch.nn.functional.softplus(raw_w[flat])[:, None]
            seg = torch.repeat_interleave(torch.arange(len(b)), torch.diff(torch.cat([offsets, torch.tensor([len(flat)])])))
            pooled = torch.zeros(len(b), E.shape[1]).index_add_(0, seg, rows)
            out = torch.nn.functional.normalize(pooled @ W, dim=1)
            loss = 1.0 - (out * tgt[b]).sum(1).mean()
            if args.l2 > 0:
                touched = torch.unique(flat)
                loss = loss + args.l2 * ((E[touched] - E_init[touched]) ** 2).sum(1).mean() / (E_init[touched] ** 2).sum(1).mean().clamp_min(1e-6)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * len(b)
            count += len(b)
        Ed, Wd = E.detach().numpy(), W.detach().numpy()
        wd = torch.nn.functional.softplus(raw_w).detach().numpy() if args.weights else None
        print(f"epoch {epoch + 1}: train loss {total / count:.4f} valid cos {cos_valid(Ed, Wd, wd):.4f} ({time.time() - t0:.0f}s)", flush=True)
        if ev is not None:
            show(f"dev epoch {epoch + 1}       ", zt.quantize_roundtrip(baked(Ed, Wd, wd)))

    final = baked(E.detach().numpy(), W.detach().numpy(), torch.nn.functional.softplus(raw_w).detach().numpy() if args.weights else None)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    zt.write_table(args.out, tokens, final)
    tk, back = zt.dequantize(args.out)
    assert tk == tokens and back.shape == (len(tokens), 256)
    print(f"wrote {args.out} ({os.path.getsize(args.out)} bytes); valid cos after int8 {cos_valid(back, np.eye(256, dtype=np.float32)):.4f}", flush=True)
    if ev is not None:
        show("dev refined       ", back)


if __name__ == "__main__":
    main()
