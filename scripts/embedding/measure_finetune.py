#!/usr/bin/env python3
"""The fine-tuned encoder overlay on servers it never saw, through
zenmode's served reply: for each fold of the routing profiles' twelve
servers, an overlay is tuned (finetune.py --without) and a tool classifier
fitted (tool_classifier.py --without) without those servers' example
requests, and `zenmode eval` scores the requests for those servers with
their shipped examples withheld too: once with the model as published and
its classifier, once with the overlay and the classifier fitted on its
vectors. Built-in modes on, the model installed.

    /path/to/venv/bin/python scripts/embedding/measure_finetune.py [--zenmode BIN] [--model DIR]
"""

from __future__ import annotations

import os
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
    work = Path(tempfile.mkdtemp(prefix="zen-finetune-"))
    for held in folds:
        name = "-".join(held)
        overlay = work / f"overlay-{name}.safetensors"
        subprocess.run([sys.executable, str(SCRIPTS / "finetune.py"), "--model", args.model,
                        "--out", str(overlay), "--without", *held], check=True)
        classifiers = {}
        for variant, chosen in (("plain", "none"), ("tuned", str(overlay))):
            classifiers[variant] = work / f"classifier-{variant}-{name}"
            subprocess.run([sys.executable, str(SCRIPTS / "tool_classifier.py"), "--zenmode", args.zenmode,
                            "--out", str(classifiers[variant]), "--label", f"fold-{variant}", "--without", *held],
                           check=True, env={**os.environ, "ZEN_ENCODER_OVERLAY": chosen})
        score_held_servers(args.zenmode, args.model, held, profiles, work, totals,
                           [("plain", {"ZEN_ENCODER_OVERLAY": "none",
                                       "ZEN_TOOL_CLASSIFIER": str(classifiers["plain"])}),
                            ("tuned", {"ZEN_ENCODER_OVERLAY": str(overlay),
                                       "ZEN_TOOL_CLASSIFIER": str(classifiers["tuned"])})])
    print_totals(totals, "encoder")


if __name__ == "__main__":
    main()
