#!/usr/bin/env python3
"""Trains the tool classifier: one weight vector and bias per tool with
shipped example requests, fitted on those requests' all-MiniLM-L6-v2
vectors (and each tool's description) by multinomial logistic regression,
so that a request's vector scores each known tool by how its users ask for
it (docs/decisions/0021-tool-classifier.md).

    /path/to/venv/bin/python scripts/embedding/tool_classifier.py \
        [--out data/embedding/tool_classifier] [--without SERVER ...]

Writes OUT.f32 (rows x (dims + 1) little-endian f32: the weights, then the
bias) and OUT.json (each row's tool and the examples files, by their
`server`, whose tool it is, and the scale and bias that score a tool with
no row from its description's cosine: see calibrate_unseen). `--without` leaves the examples of those
catalog servers (and their livemcptool twins) out, for measurements on
servers the classifier never saw. Needs numpy and scikit-learn; vectors
come from `zenmode model embed` as in adapter.py.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adapter  # noqa: E402

ROOT = adapter.ROOT

# Inverse regularisation strength. Chosen on the web and ops tune sets of
# tests/data/routing (0.72 / 0.77 top-1 at 10, 0.70 / 0.77 at 30, 0.63 /
# 0.63 at 1); the held-out sets were not read for it.
STRENGTH = 10.0


def example_files(without: list[str]) -> list[tuple[str, set[str], dict]]:
    """(the file's `server`, its tool names, its tools) for every file but
    those of the servers `without` names and their livemcptool twins."""
    files = []
    for path in sorted((ROOT / "data/examples").glob("*.json")):
        if any(path.stem == s or path.stem.startswith((s + "-", s + "_")) for s in without):
            continue
        shipped = json.loads(path.read_text())
        files.append((shipped["server"], set(shipped["tools"]), shipped["tools"]))
    return files


def fit(features: np.ndarray, targets: np.ndarray, strength: float) -> LogisticRegression:
    return LogisticRegression(C=strength, max_iter=500).fit(features, targets)


def calibrate_unseen(examples, example_rows, descriptions, servers, strength) -> tuple[float, float]:
    """The scale and bias that put a tool without a row (a server never
    seen) on the rows' logit scale: logit = scale * cosine(request,
    description) + bias. Fitted where that is the case: the servers are cut
    in two halves; a classifier is trained on one half (four fifths of its
    examples, and its descriptions), and requests are scored in a softmax
    over that half's rows and the other half's tools by the formula: the
    other half's examples, whose tool is scored by the formula, and the
    first half's fifth left out of training, whose tool has a row. Both
    kinds weigh the same: a scale and bias that favour tools without a row
    take the requests of the tools with one. The two halves' fits are
    averaged."""
    from scipy.optimize import minimize

    names = sorted(set(servers))
    halves = [set(names[0::2]), set(names[1::2])]
    spare = np.arange(len(example_rows)) % 5 == 0
    fits = []
    for known in halves:
        is_known_tool = np.array([s in known for s in servers])
        known_tools = np.flatnonzero(is_known_tool)
        unseen_tools = np.flatnonzero(~is_known_tool)
        of_known = np.isin(example_rows, known_tools)
        train = of_known & ~spare
        remap = {int(t): at for at, t in enumerate(known_tools)}
        model = fit(np.vstack([examples[train], descriptions[known_tools]]),
                    np.array([remap[int(t)] for t in example_rows[train]] + list(range(len(known_tools)))),
                    strength)
        where = {int(t): len(known_tools) + at for at, t in enumerate(unseen_tools)}
        sets = []
        for rows in (~of_known, of_known & spare):
            known_logits = examples[rows] @ model.coef_.T + model.intercept_
            cosines = examples[rows] @ descriptions[unseen_tools].T
            target = np.array([remap.get(int(t), where.get(int(t))) for t in example_rows[rows]])
            sets.append((known_logits, cosines, target))

        def loss(params):
            scale, bias = params
            total = 0.0
            for known_logits, cosines, target in sets:
                both = np.hstack([known_logits, scale * cosines + bias])
                top = both.max(axis=1, keepdims=True)
                log_total = np.log(np.exp(both - top).sum(axis=1)) + top[:, 0]
                total += float(np.mean(log_total - both[np.arange(len(target)), target]))
            return total / len(sets)

        best = minimize(loss, x0=[10.0, 0.0], method="Nelder-Mead")
        print(f"calibration with {sorted(known)[:3]}... known: scale {best.x[0]:.2f} bias {best.x[1]:.2f}",
              file=sys.stderr)
        fits.append(best.x)
    scale, bias = np.mean(fits, axis=0)
    return float(scale), float(bias)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--out", default=str(ROOT / "data" / "embedding" / "tool_classifier"))
    parser.add_argument("--without", nargs="*", default=[], help="catalog servers to leave out")
    parser.add_argument("--strength", type=float, default=STRENGTH)
    parser.add_argument("--label", default="classifier", help="names the cached vectors")
    args = parser.parse_args()

    tools = adapter.load_tools()
    # The shared catalogs of servers with examples that no routing profile
    # installs (everything, the old GitHub server) have rows too.
    loaded = {server for server, _ in tools}
    for server, _, _ in example_files([]):
        path = adapter.CATALOGS / f"{server}.json"
        if server not in loaded and path.exists():
            for tool in json.loads(path.read_text())["tools"]:
                tools[(server, tool["name"])] = adapter.tool_text(tool["name"], tool.get("description", ""))
    by_server: dict[str, set[str]] = {}
    for server, name in tools:
        by_server.setdefault(server, set()).add(name)
    # Each examples file belongs to the catalog server sharing most of its
    # tool names (as adapter.load_examples decides).
    owners: dict[tuple[str, str], set[str]] = {}
    pairs: list[tuple[str, tuple[str, str]]] = []
    for file_server, names, shipped in example_files(args.without):
        server = max(by_server, key=lambda s: len(by_server[s] & names))
        if len(by_server[server] & names) * 2 < len(names):
            continue
        for name, tool in shipped.items():
            key = (server, name)
            if key not in tools:
                continue
            owners.setdefault(key, set()).add(file_server)
            pairs.extend((example, key) for example in tool["examples"])
    keys = sorted(owners)
    row_of = {key: at for at, key in enumerate(keys)}
    print(f"{len(keys)} tools, {len(pairs)} examples", file=sys.stderr)

    examples = adapter.normalise(adapter.encode(args.zenmode, [p[0] for p in pairs], f"examples-{args.label}"))
    descriptions = adapter.normalise(adapter.encode(args.zenmode, [tools[k] for k in keys], f"tools-{args.label}"))
    features = np.vstack([examples, descriptions])
    targets = np.array([row_of[p[1]] for p in pairs] + list(range(len(keys))))
    started = time.time()
    model = fit(features, targets, args.strength)
    print(f"trained in {time.time() - started:.0f} s", file=sys.stderr)
    scale, bias = calibrate_unseen(examples, np.array([row_of[p[1]] for p in pairs]), descriptions,
                                   [key[0] for key in keys], args.strength)
    assert list(model.classes_) == list(range(len(keys)))

    matrix = np.hstack([model.coef_, model.intercept_[:, None]]).astype("<f4")
    out = Path(args.out)
    out.with_suffix(".f32").write_bytes(matrix.tobytes())
    index = {
        "dims": int(examples.shape[1]),
        "strength": args.strength,
        "unseen": {"scale": round(scale, 4), "bias": round(bias, 4)},
        "rows": [{"tool": key[1], "files": sorted(owners[key])} for key in keys],
    }
    out.with_suffix(".json").write_text(json.dumps(index, indent=0) + "\n")
    print(f"wrote {out.with_suffix('.f32')} ({matrix.nbytes} bytes) and {out.with_suffix('.json')}", file=sys.stderr)


if __name__ == "__main__":
    main()
