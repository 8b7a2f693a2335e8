#!/usr/bin/env python3
"""The tool classifier on servers it never saw, through zenmode's served
reply: for each fold of the routing profiles' twelve servers, a classifier
is trained (tool_classifier.py --without) without those servers' example
requests, and `zenmode eval` scores the requests for those servers with
their shipped examples withheld too, once with that classifier
(ZEN_TOOL_CLASSIFIER) and once with none. The held-out servers' tools have
no row in the classifier; the question is whether the rows of the other
servers in the profile pull their requests away. Built-in modes on, the
model installed.

    /path/to/venv/bin/python scripts/embedding/measure_classifier.py [--zenmode BIN] [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adapter  # noqa: E402
from measure_adapter import print_totals, score_held_servers  # noqa: E402

ROOT = adapter.ROOT
ROUTING = ROOT / "tests" / "data" / "routing"
SCRIPTS = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--model", default=str(Path.home() / ".local/share/zenmode/model/all-MiniLM-L6-v2"))
    parser.add_argument("--folds", type=int, default=4)
    args = parser.parse_args()

    profiles = json.loads((ROUTING / "profiles.json").read_text())
    shared = sorted({s for listed in profiles.values() for s in listed})
    folds = [shared[at::args.folds] for at in range(args.folds)]
    totals: dict[str, dict[str, float]] = {}
    work = Path(tempfile.mkdtemp(prefix="zen-classifier-"))
    for held in folds:
        base = work / ("classifier-" + "-".join(held))
        subprocess.run([sys.executable, str(SCRIPTS / "tool_classifier.py"), "--zenmode", args.zenmode,
                        "--out", str(base), "--label", "fold", "--without", *held], check=True)
        score_held_servers(args.zenmode, args.model, held, profiles, work, totals,
                           [("none", {"ZEN_TOOL_CLASSIFIER": "none"}),
                            ("classifier", {"ZEN_TOOL_CLASSIFIER": str(base)})])
    print_totals(totals, "classifier")


if __name__ == "__main__":
    main()
