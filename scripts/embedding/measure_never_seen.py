#!/usr/bin/env python3
"""Routing over registry servers zenmode has never seen, through the
served reply: the requests of tests/data/registry's profiles whose tool
belongs to a server of the fold, scored by `zenmode eval` over each
profile's catalog with the fold's shipped examples withheld. Built-in
modes on, the model installed. For a clean figure, pass an overlay and a
classifier fitted without the fold (finetune.py and tool_classifier.py,
both with `--without` and the fold's servers); the shipped ones have seen
them.

    python3 scripts/embedding/measure_never_seen.py --fold B \\
        [--overlay FILE] [--classifier PATH] [--tuning name=value,...]

`--fold` is B (the nine servers of decision 0030), C (the other 27
registry servers) or a comma-separated list of servers. Prints, per
profile and in all, the share served right and the share whose reply
shows the right tool, and the benign and off-topic requests of the
profiles that got a ready call to a changing tool; and, as the cost side,
the share served right of the same profiles' requests for the servers
installed beside the fold (`beside_served`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from measure_adapter import ROOT, example_files_of  # noqa: E402

REGISTRY = ROOT / "tests" / "data" / "registry"
FOLD_B = ["kubernetes", "neon", "figma", "sentry", "hubspot", "ms-365", "linear", "bitbucket", "gitlab"]


def fold_servers(name: str) -> list[str]:
    """The servers of a named fold, or of a comma-separated list."""
    registry = sorted(p.stem for p in REGISTRY.glob("*.json") if p.stem != "profiles")
    if name == "B":
        return FOLD_B
    if name == "C":
        return [server for server in registry if server not in FOLD_B]
    servers = [s for s in name.split(",") if s]
    unknown = [s for s in servers if s not in registry]
    if unknown:
        sys.exit(f"error: not a registry server: {', '.join(unknown)}")
    return servers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fold", required=True)
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--model", default=str(Path.home() / ".local/share/zenmode/model/all-MiniLM-L6-v2"))
    parser.add_argument("--overlay", help="ZEN_ENCODER_OVERLAY (default: the shipped one)")
    parser.add_argument("--classifier", help="ZEN_TOOL_CLASSIFIER, a path without extension")
    parser.add_argument("--tuning", help="ZEN_SELECT_MODEL_TUNING, name=value,...")
    parser.add_argument("--misses", help="a JSON-lines file to write the fold's misses to")
    args = parser.parse_args()

    held = fold_servers(args.fold)
    # zenmode leaves a classifier that does not load out with a warning
    # only; a figure taken without it would pass for one taken with it.
    if args.classifier and args.classifier != "none":
        missing = [f"{args.classifier}.{ext}" for ext in ("f32", "json")
                   if not Path(f"{args.classifier}.{ext}").is_file()]
        if missing:
            sys.exit(f"error: no classifier file {', '.join(missing)}")
    withheld = [name for server in held for name in example_files_of(server)]
    environment = dict(os.environ)
    for variable, value in (("ZEN_ENCODER_OVERLAY", args.overlay), ("ZEN_TOOL_CLASSIFIER", args.classifier),
                            ("ZEN_SELECT_MODEL_TUNING", args.tuning)):
        if value:
            environment[variable] = value
    profiles = json.loads((REGISTRY / "profiles.json").read_text())
    work = Path(tempfile.mkdtemp(prefix="zen-never-seen-"))
    misses = []
    total = {"n": 0, "served": 0.0, "shown": 0.0, "benign": 0, "offtopic": 0, "beside": 0, "beside_served": 0.0}
    for profile, servers in profiles.items():
        lines = (REGISTRY / f"requests_{profile}.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines if line.strip()]
        mine = [row for row in rows if (row.get("expected") or "").split("__")[0] in held]
        guards = [row for row in rows if row.get("kind") in ("benign", "offtopic")]
        # The requests for the servers it knows, installed beside the fold:
        # what a never-seen server's tools take from them.
        beside = [row for row in rows if row.get("expected") and row not in mine and row not in guards]
        if not mine:
            continue
        catalog = work / f"{profile}.json"
        subprocess.run([sys.executable, str(ROOT / "scripts/examples/profile_catalog.py"), str(catalog), *servers],
                       check=True)
        scores = {}
        for kind, chosen in (("fold", mine), ("guards", guards), ("beside", beside)):
            if not chosen:
                continue
            labels = work / f"{profile}-{kind}.jsonl"
            labels.write_text("".join(json.dumps(row) + "\n" for row in chosen))
            command = [args.zenmode, "--embedding-model", args.model, "--catalog", str(catalog), "eval", "--json",
                       "--labels", str(labels)]
            for server in withheld:
                command += ["--withhold-examples", server]
            done = subprocess.run(command, capture_output=True, text=True, env=environment)
            if done.returncode != 0:
                sys.exit(f"error: zenmode eval failed on {profile}: {done.stderr.strip()}")
            scores[kind] = json.loads(done.stdout)
        fold = scores["fold"]
        misses += [dict(miss, profile=profile) for miss in fold.get("misses", [])]
        benign = scores.get("guards", {}).get("benign_changing_calls", 0)
        offtopic = scores.get("guards", {}).get("offtopic_changing_calls", 0)
        n = len(mine)
        total["n"] += n
        total["served"] += fold["served_top1_acceptable"] * n
        total["shown"] += fold["reply_recall"] * n
        total["benign"] += benign
        total["offtopic"] += offtopic
        if "beside" in scores:
            total["beside"] += len(beside)
            total["beside_served"] += scores["beside"]["served_top1_acceptable"] * len(beside)
        print(f"{profile}: served {fold['served_top1_acceptable']:.3f} shown {fold['reply_recall']:.3f} "
              f"({n}); benign / off-topic ready changing calls {benign} / {offtopic}")
    if args.misses:
        Path(args.misses).write_text("".join(json.dumps(miss) + "\n" for miss in misses))
    if total["n"] == 0:
        sys.exit("error: no request in the profiles is for these servers")
    print(json.dumps({"fold": args.fold, "requests": total["n"], "served": round(total["served"] / total["n"], 3),
                      "shown": round(total["shown"] / total["n"], 3), "benign_changing_calls": total["benign"],
                      "offtopic_changing_calls": total["offtopic"],
                      "beside": total["beside"],
                      "beside_served": round(total["beside_served"] / max(total["beside"], 1), 3)}))


if __name__ == "__main__":
    main()
