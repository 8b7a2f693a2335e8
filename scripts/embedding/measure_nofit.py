"""Measures the "no clear fit" flag per catalog: the share of
off-topic requests flagged and the share of relevant requests flagged,
with the embedding table and (with --model) the full model.

Usage:
  python scripts/embedding/measure_nofit.py --zenmode target/release/zenmode \
      --simple /tmp/simple [--model target/minilm] [--only NAME]

--simple is the directory `convert_bfcl_simple.py` writes (BFCL's
simple_python catalog; left out when not given). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
F = ROOT / "tests" / "data" / "foreign"
BFCL_M = ROOT.parent / "shared" / "routing" / "bfcl_multiple"
RS = F / "realservers"
IRR = [F / "bfcl_irrelevance" / "dev.jsonl", F / "bfcl_irrelevance" / "heldout.jsonl"]
RS_NOFIT = [RS / "nofit_tune.jsonl", RS / "nofit_heldout.jsonl"]


def sets(simple: Path | None):
    """(name, kind of off-topic requests, catalog args, label files)."""
    out = []
    if simple:
        out += [
            ("simple_python + irrelevance", "BFCL", ["--catalog", simple / "catalog.json", "--no-builtin-modes"],
             [simple / "relevant.jsonl", simple / "irrelevance.jsonl"]),
            ("simple_python + live_irrelevance", "BFCL", ["--catalog", simple / "catalog.json", "--no-builtin-modes"],
             [simple / "relevant.jsonl", simple / "live_irrelevance.jsonl"]),
        ]
    out += [
        ("bfcl_multiple + live_irrelevance", "BFCL", ["--catalog", BFCL_M / "global_catalog.json", "--no-builtin-modes"],
         [BFCL_M / "global_labels.jsonl", *IRR]),
        ("bfcl_live + live_irrelevance", "BFCL", ["--catalog", F / "bfcl_live" / "catalog.json", "--no-builtin-modes"],
         [F / "bfcl_live" / "dev.jsonl", F / "bfcl_live" / "heldout.jsonl", *IRR]),
        ("metatool (no-tool requests)", "MetaTool", ["--catalog", F / "metatool" / "catalog.json", "--no-builtin-modes"],
         [F / "metatool" / "dev.jsonl", F / "metatool" / "heldout.jsonl"]),
        ("realservers, built-ins off", "off-topic", ["--catalog", RS / "catalog.json", "--no-builtin-modes"],
         [RS / "tune.jsonl", RS / "heldout.jsonl", *RS_NOFIT]),
        ("realservers, built-ins on", "off-topic", ["--catalog", RS / "catalog.json"],
         [RS / "tune.jsonl", RS / "heldout.jsonl", RS / "builtin_tune.jsonl", RS / "builtin_heldout.jsonl", *RS_NOFIT]),
        ("built-in modes alone + realservers off-topic", "off-topic", [],
         [ROOT / "tests" / "data" / "select_dev.jsonl", *RS_NOFIT]),
        ("built-in modes alone + live_irrelevance", "BFCL", [],
         [ROOT / "tests" / "data" / "select_dev.jsonl", *IRR]),
    ]
    return out


def run(zenmode: str, args: list, labels: list, model: str | None) -> dict:
    cmd = [zenmode, *map(str, args)]
    if model:
        cmd += ["--embedding-model", model]
    cmd += ["eval", "--json"]
    for label in labels:
        cmd += ["--labels", str(label)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--simple", type=Path)
    parser.add_argument("--model")
    parser.add_argument("--only")
    a = parser.parse_args()
    print("| catalog | off-topic kind | off-topic flagged | relevant flagged | best threshold in hindsight: caught at 5% / 10% flagged | top-1 | seconds |")
    print("|---|---|---|---|---|---|---|")
    for name, kind, args, labels in sets(a.simple):
        if a.only and a.only not in name:
            continue
        started = time.time()
        r = run(a.zenmode, args, labels, a.model)
        sep = r.get("no_fit_separation") or {}
        hindsight = (f"{sep.get('caught_with_a_twentieth_flagged', float('nan')):.3f} / "
                     f"{sep.get('caught_with_a_tenth_flagged', float('nan')):.3f}")
        print(f"| {name} | {kind} | {r['no_fit_flagged']:.3f} ({r['no_fit_queries']}) | "
              f"{r['no_clear_fit']:.3f} | {hindsight} | {r.get('top1', 0):.3f} | {time.time() - started:.0f} |", flush=True)


if __name__ == "__main__":
    main()
