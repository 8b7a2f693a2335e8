#!/usr/bin/env python3
"""The request adapter on servers it never saw, through zenmode's served
reply: for each fold of the routing profiles' twelve servers, an adapter is
trained (adapter.py) without those servers' example requests, and
`zenmode eval` scores the requests for those servers with their shipped
examples withheld too, once with that adapter (ZEN_REQUEST_ADAPTER) and
once with none. Built-in modes on, the model installed.

    /path/to/venv/bin/python scripts/embedding/measure_adapter.py [--zenmode BIN] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adapter  # noqa: E402

ROOT = adapter.ROOT
ROUTING = ROOT / "tests" / "data" / "routing"


def example_files_of(server: str) -> list[str]:
    """The examples files (their `server` names) that could serve `server`:
    its own and the copies written for its livemcptool twin."""
    names = []
    for path in (ROOT / "data" / "examples").glob("*.json"):
        if path.stem == server or path.stem.startswith(server + "-") or path.stem.startswith(server + "_"):
            names.append(json.loads(path.read_text())["server"])
    return names


def score_held_servers(zenmode: str, model: str, held: list[str], profiles: dict, work: Path,
                       totals: dict, variants: list[tuple[str, dict[str, str]]]) -> None:
    """Scores, with `zenmode eval`, the routing requests whose tool belongs
    to a `held` server, those servers' shipped examples withheld, once per
    variant (a name and the environment it adds); adds the served reply and
    recall into `totals` by variant name."""
    withheld = [name for server in held for name in example_files_of(server)]
    for labels_file in sorted(ROUTING.glob("*.jsonl")):
        profile = labels_file.stem.rsplit("_", 1)[0]
        mine = [line for line in labels_file.read_text().splitlines()
                if (json.loads(line).get("expected") or "").split("__")[0] in held]
        if not mine:
            continue
        labels = work / f"{labels_file.stem}-{'-'.join(held)}.jsonl"
        labels.write_text("\n".join(mine) + "\n")
        catalog = work / f"{profile}.json"
        subprocess.run([sys.executable, str(ROOT / "scripts/examples/profile_catalog.py"), str(catalog),
                        *profiles[profile]], check=True)
        for name, environment in variants:
            command = [zenmode, "--embedding-model", model, "--catalog", str(catalog), "eval",
                       "--json", "--labels", str(labels)]
            for server in withheld:
                command += ["--withhold-examples", server]
            done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **environment})
            report = json.loads(done.stdout)
            tally = totals.setdefault(name, {"queries": 0, "served": 0.0, "recall": 0.0})
            tally["queries"] += len(mine)
            tally["served"] += report["served_top1_acceptable"] * len(mine)
            tally["recall"] += report["reply_recall"] * len(mine)
            print(f"{labels_file.stem} held {held}: {name} served {report['served_top1_acceptable']:.3f} "
                  f"recall {report['reply_recall']:.3f} ({len(mine)})", file=sys.stderr)


def fold_arguments(doc: str) -> argparse.Namespace:
    """The measurements' options: the zenmode binary, the model, how many
    folds of servers."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--model", default=str(Path.home() / ".local/share/zenmode/model/all-MiniLM-L6-v2"))
    parser.add_argument("--folds", type=int, default=4)
    return parser.parse_args()


def server_folds(count: int) -> tuple[dict, list[list[str]]]:
    """The routing profiles, and their servers cut into `count` folds."""
    profiles = json.loads((ROUTING / "profiles.json").read_text())
    shared = sorted({s for listed in profiles.values() for s in listed})
    return profiles, [shared[at::count] for at in range(count)]


def print_totals(totals: dict, label: str) -> None:
    """One JSON line per variant: its served reply and recall over every fold."""
    for name, tally in totals.items():
        n = tally["queries"]
        print(json.dumps({label: name, "queries": n, "served": round(tally["served"] / n, 3),
                          "recall": round(tally["recall"] / n, 3)}))


def main() -> None:
    args = fold_arguments(__doc__)

    tools = adapter.load_tools()
    keys = sorted(tools)
    index = {key: at for at, key in enumerate(keys)}
    pairs = adapter.load_examples(tools)
    tool_vectors = adapter.normalise(adapter.encode(args.zenmode, [tools[k] for k in keys], "tools"))
    example_vectors = adapter.normalise(adapter.encode(args.zenmode, [p[0] for p in pairs], "examples"))
    example_server = np.array([p[1] for p in pairs])
    example_tool = np.array([index[(p[1], p[2])] for p in pairs])
    profiles, folds = server_folds(args.folds)
    totals: dict[str, dict[str, float]] = {}
    work = Path(tempfile.mkdtemp(prefix="zen-adapter-"))
    for held in folds:
        rows = ~np.isin(example_server, held)
        train_tools = sorted({int(t) for t in example_tool[rows]})
        remap = {t: at for at, t in enumerate(train_tools)}
        w = adapter.train(example_vectors[rows], np.array([remap[int(t)] for t in example_tool[rows]]),
                          tool_vectors[train_tools], epochs=4, temperature=0.05, keep=0.05, rate=2e-3, seed=7)
        weights = work / ("adapter-" + "-".join(held) + ".f32")
        w.astype("<f4").tofile(weights)
        score_held_servers(args.zenmode, args.model, held, profiles, work, totals,
                           [("none", {"ZEN_REQUEST_ADAPTER": "none"}),
                            ("adapter", {"ZEN_REQUEST_ADAPTER": str(weights)})])
    print_totals(totals, "adapter")


if __name__ == "__main__":
    main()
