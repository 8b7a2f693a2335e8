#!/usr/bin/env python3
"""Does a request-side linear adapter, trained on the shipped example
requests, lift all-MiniLM-L6-v2's ranking of tools of servers it never saw?

The adapter is a 384x384 matrix W applied to a request's vector before it
is compared with the tools' description vectors (both normalised). It is
trained on (example request, tool) pairs of data/examples/ with a softmax
over the training servers' tools, and held near the identity.

Split by server: the twelve servers of ../shared/catalogs that the routing
sets use are cut into folds; for each fold, W is trained on the examples
of every other server (the livemcptool servers' included) and scored on
the routing sets' requests whose tool belongs to a held-out server, ranked
among the whole profile's tools by their descriptions alone (MiniLM alone,
top-1), against the same ranking without W.

    /path/to/venv/bin/python scripts/embedding/adapter.py [--folds 4] [--out FILE]

Vectors come from zenmode's own encoder (`zenmode model embed`, the model
`zenmode model show` names), cached in ~/.cache/zenmode-minilm; training
needs numpy only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent.parent
CATALOGS = ROOT.parent / "shared" / "catalogs"
FILES = {"huly": "huly_v0.1.35", "playwright": "playwright_allcaps"}
CACHE = Path(os.environ.get("ZEN_MINILM_DIR", Path.home() / ".cache" / "zenmode-minilm"))


def tool_text(name: str, description: str) -> str:
    words = name.replace("_", " ").replace("-", " ")
    return f"{words}: {description.strip()[:600]}"


def load_tools() -> dict[tuple[str, str], str]:
    """(server, tool) -> the text the model reads, for the shared catalogs,
    the servers of tests/data/registry and the livemcptool servers."""
    profiles = json.loads((ROOT / "tests/data/routing/profiles.json").read_text())
    servers = sorted({server for listed in profiles.values() for server in listed})
    tools = {}
    for server in servers:
        catalog = json.loads((CATALOGS / (FILES.get(server, server) + ".json")).read_text())
        for tool in catalog["tools"]:
            tools[(server, tool["name"])] = tool_text(tool["name"], tool.get("description", ""))
    # Servers captured from their npm packages (tests/data/registry).
    for path in sorted((ROOT / "tests/data/registry").glob("*.json")):
        catalog = json.loads(path.read_text())
        if "tools" in catalog:
            for tool in catalog["tools"]:
                tools[(path.stem, tool["name"])] = tool_text(tool["name"], tool.get("description", ""))
    live = json.loads((CATALOGS / "livemcptool.json").read_text())
    for tool in live["tools"]:
        tools.setdefault((tool["server"], tool["name"]), tool_text(tool["name"], tool.get("description", "")))
    return tools


def load_examples(tools) -> list[tuple[str, str, str]]:
    """(example, server, tool) for every shipped example whose tool is known."""
    by_name: dict[str, set[str]] = {}
    for server, name in tools:
        by_name.setdefault(server, set()).add(name)
    pairs = []
    for path in sorted((ROOT / "data/examples").glob("*.json")):
        shipped = json.loads(path.read_text())
        names = set(shipped["tools"])
        # The catalog server this file covers: the one sharing most tool names.
        server = max(by_name, key=lambda s: len(by_name[s] & names))
        if len(by_name[server] & names) * 2 < len(names):
            continue
        for name, tool in shipped["tools"].items():
            if (server, name) in tools:
                pairs.extend((example, server, name) for example in tool["examples"])
    return pairs


def overlay_identity() -> bytes:
    """What names the encoder overlay `zenmode model embed` runs with
    (finetune.py): the vectors differ with it."""
    chosen = os.environ.get("ZEN_ENCODER_OVERLAY", "")
    if chosen == "none":
        return b"none"
    path = Path(chosen) if chosen else ROOT / "data" / "embedding" / "encoder_overlay.safetensors"
    return hashlib.sha256(path.read_bytes()).digest() if path.is_file() else b"none"


def encode(zenmode: str, texts: list[str], label: str) -> np.ndarray:
    digest = hashlib.sha256("\n".join(texts).encode() + overlay_identity()).hexdigest()[:16]
    cached = CACHE / f"adapter-{label}-{digest}.npy"
    if cached.exists():
        return np.load(cached)
    lines = "".join(json.dumps(text) + "\n" for text in texts)
    done = subprocess.run([zenmode, "model", "embed"], input=lines, capture_output=True, text=True, check=True)
    matrix = np.array([json.loads(line) for line in done.stdout.splitlines()], dtype=np.float32)
    assert len(matrix) == len(texts), (len(matrix), len(texts))
    cached.parent.mkdir(parents=True, exist_ok=True)
    np.save(cached, matrix)
    return matrix


def normalise(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-9)


def train(examples: np.ndarray, targets: np.ndarray, tool_vectors: np.ndarray, *, epochs: int,
          temperature: float, keep: float, rate: float, seed: int) -> np.ndarray:
    """W minimising the softmax loss of each example against the training
    tools, plus keep * ||W - I||^2; Adam, mini-batches of 256."""
    rng = np.random.default_rng(seed)
    dim = examples.shape[1]
    w = np.eye(dim, dtype=np.float32)
    m = np.zeros_like(w)
    v = np.zeros_like(w)
    step = 0
    for _ in range(epochs):
        order = rng.permutation(len(examples))
        for start in range(0, len(order), 256):
            batch = order[start:start + 256]
            e = examples[batch]
            u = e @ w.T
            norms = np.linalg.norm(u, axis=1, keepdims=True)
            z = u / norms
            logits = z @ tool_vectors.T / temperature
            logits -= logits.max(axis=1, keepdims=True)
            p = np.exp(logits)
            p /= p.sum(axis=1, keepdims=True)
            p[np.arange(len(batch)), targets[batch]] -= 1.0
            dz = p @ tool_vectors / temperature
            du = (dz - z * (z * dz).sum(axis=1, keepdims=True)) / norms
            grad = du.T @ e / len(batch) + 2 * keep * (w - np.eye(dim, dtype=np.float32))
            step += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            w -= rate * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return w


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--keep", type=float, default=0.05)
    parser.add_argument("--rate", type=float, default=2e-3)
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--out", help="write the adapter trained on every server here (f32, row-major)")
    args = parser.parse_args()

    tools = load_tools()
    keys = sorted(tools)
    index = {key: at for at, key in enumerate(keys)}
    pairs = load_examples(tools)
    print(f"{len(keys)} tools, {len(pairs)} examples", file=sys.stderr)
    tool_vectors = normalise(encode(args.zenmode, [tools[k] for k in keys], "tools"))
    example_vectors = normalise(encode(args.zenmode, [p[0] for p in pairs], "examples"))
    example_server = np.array([p[1] for p in pairs])
    example_tool = np.array([index[(p[1], p[2])] for p in pairs])

    profiles = json.loads((ROOT / "tests/data/routing/profiles.json").read_text())
    queries = []
    for path in sorted((ROOT / "tests/data/routing").glob("*.jsonl")):
        profile = path.stem.rsplit("_", 1)[0]
        for line in path.read_text().splitlines():
            label = json.loads(line)
            if label.get("expected"):
                server, tool = label["expected"].split("__", 1)
                accepted = [label["expected"], *label.get("acceptable", [])]
                queries.append((label["query"], profile, server, accepted))
    query_vectors = normalise(encode(args.zenmode, [q[0] for q in queries], "queries"))

    shared = sorted({s for listed in profiles.values() for s in listed})
    folds = [shared[at::args.folds] for at in range(args.folds)]
    totals = {"queries": 0, "before": 0, "after": 0}
    report = []
    for held in folds:
        train_rows = ~np.isin(example_server, held)
        train_tools = sorted({int(t) for t in example_tool[train_rows]})
        remap = {t: at for at, t in enumerate(train_tools)}
        w = train(example_vectors[train_rows], np.array([remap[int(t)] for t in example_tool[train_rows]]),
                  tool_vectors[train_tools], epochs=args.epochs, temperature=args.temperature,
                  keep=args.keep, rate=args.rate, seed=7)
        fold = {"held_out": held, "queries": 0, "before": 0, "after": 0}
        for at, (_, profile, server, accepted) in enumerate(queries):
            if server not in held:
                continue
            members = [i for i, key in enumerate(keys) if key[0] in profiles[profile]]
            names = [f"{keys[i][0]}__{keys[i][1]}" for i in members]
            q = query_vectors[at]
            adapted = normalise(q @ w.T)
            before = names[int(np.argmax(tool_vectors[members] @ q))]
            after = names[int(np.argmax(tool_vectors[members] @ adapted))]
            fold["queries"] += 1
            fold["before"] += before in accepted
            fold["after"] += after in accepted
        for key in ("queries", "before", "after"):
            totals[key] += fold[key]
        report.append(fold)
        print(json.dumps(fold), file=sys.stderr)
    n = max(totals["queries"], 1)
    print(json.dumps({"settings": vars(args), "folds": report,
                      "top1_before": round(totals["before"] / n, 3), "top1_after": round(totals["after"] / n, 3),
                      "queries": totals["queries"]}, indent=1))
    if args.out:
        rows = np.ones(len(pairs), dtype=bool)
        w = train(example_vectors, example_tool, tool_vectors, epochs=args.epochs, temperature=args.temperature,
                  keep=args.keep, rate=args.rate, seed=7)
        w.astype("<f4").tofile(args.out)
        print(f"wrote {args.out}", file=sys.stderr)
        del rows


if __name__ == "__main__":
    main()
