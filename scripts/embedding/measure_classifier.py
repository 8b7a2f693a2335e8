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

import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_adapter import fold_arguments, print_totals, score_held_servers, server_folds  # noqa: E402

SCRIPTS = Path(__file__).resolve().parent


def main() -> None:
    args = fold_arguments(__doc__)
    profiles, folds = server_folds(args.folds)
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
