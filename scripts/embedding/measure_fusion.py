"""Side by side on every tracked set: zenmode with the table only, zenmode
with the full model (`--embedding-model`), and all-MiniLM-L6-v2 alone
(baseline.py), for the tune or the held-out half (docs/benchmarks.md,
"Tools without example phrasings"; the choices they informed are in
docs/decisions/).

    python3 scripts/embedding/measure_fusion.py --half tune [--model target/minilm] \
        [--zenmode target/release/zenmode] [--only real_on_all,mtb_on] [--no-baseline] [--json OUT]

The zenmode binary must be built with `--features transformer` for the
model column. `ZEN_SELECT_TUNING` / `ZEN_SELECT_MODEL_TUNING` in the
environment reach zenmode unchanged (for measuring alternatives). MiniLM's
figures are kept in `--baseline-cache` (they do not change with zenmode).

Sets (built-in modes on where the name says so; MetaTool, bfcl_live and
bfcl_multiple are measured without them, as their earlier figures were):
real-server requests with the built-ins on (`real_on_servers`), with the
built-in and off-topic requests pooled (`real_on_all`), built-ins off
(`real_off`), MCPToolBench++ off and on, MetaTool, bfcl_live, and
bfcl_multiple (no halves: the same 200 requests in both).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_routing import minilm, zen  # noqa: E402  (same runners, one copy)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
FOREIGN = ROOT / "tests" / "data" / "foreign"
REAL = FOREIGN / "realservers"
MTB = FOREIGN / "mcptoolbench"
BFCL_MULTIPLE = ROOT / ".." / "shared" / "routing" / "bfcl_multiple"


def sets(half: str) -> dict[str, tuple[Path, list[Path], bool]]:
    mtb = "dev" if half == "tune" else "heldout"
    dev = "dev" if half == "tune" else "heldout"
    return {
        "real_on_servers": (REAL / "catalog.json", [REAL / f"{half}.jsonl"], True),
        "real_on_all": (
            REAL / "catalog.json",
            [REAL / f"{half}.jsonl", REAL / f"builtin_{half}.jsonl", REAL / f"nofit_{half}.jsonl"],
            True,
        ),
        "real_off": (REAL / "catalog.json", [REAL / f"{half}.jsonl"], False),
        "mtb_off": (MTB / "catalog.json", [MTB / f"{mtb}.jsonl"], False),
        "mtb_on": (MTB / "catalog.json", [MTB / f"{mtb}.jsonl"], True),
        "metatool": (FOREIGN / "metatool" / "catalog.json", [FOREIGN / "metatool" / f"{dev}.jsonl"], False),
        "bfcl_live": (FOREIGN / "bfcl_live" / "catalog.json", [FOREIGN / "bfcl_live" / f"{dev}.jsonl"], False),
        "bfcl_multiple": (BFCL_MULTIPLE / "global_catalog.json", [BFCL_MULTIPLE / "global_labels.jsonl"], False),
    }


def cell(r: dict | None) -> str:
    if r is None:
        return "-"
    traps = f"{r.get('traps_taken', 0)}/{r.get('trap_queries', 0)}"
    return f"{r['top1_acceptable']:.3f} ({r['top1']:.3f}, {traps})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--half", choices=["tune", "heldout"], required=True)
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--model", default=str(ROOT / "target" / "minilm"))
    parser.add_argument("--only", default="", help="comma-separated set names")
    parser.add_argument("--no-table", action="store_true")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--baseline-cache", type=Path, default=Path("/tmp/zenmode-minilm-baseline.json"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cache = json.loads(args.baseline_cache.read_text()) if args.baseline_cache.exists() else {}
    wanted = [s for s in args.only.split(",") if s]
    raw = {}
    print(f"{args.half}: top-1 with acceptable tools counted (exact top-1, destructive traps taken / queries with traps)")
    print(f"env: ZEN_SELECT_TUNING={os.environ.get('ZEN_SELECT_TUNING', '')} ZEN_SELECT_MODEL_TUNING={os.environ.get('ZEN_SELECT_MODEL_TUNING', '')}\n")
    print("| set | n | table (`--embedding-model none`) | with the model | MiniLM alone | ECE table / model |")
    print("|---|---|---|---|---|---|")
    for name, (catalog, labels, builtin) in sets(args.half).items():
        if wanted and name not in wanted:
            continue
        if not catalog.exists():
            print(f"| {name} | (missing: {catalog}) |")
            continue
        # `none`: an installed model is found by default, and the table
        # column must not measure it.
        table = None if args.no_table else zen(args.zenmode, catalog, labels, builtin, "none")
        model = zen(args.zenmode, catalog, labels, builtin, args.model)
        key = f"{args.half}:{name}"
        base = None
        if not args.no_baseline:
            if key not in cache:
                cache[key] = minilm(catalog, labels, builtin)
                args.baseline_cache.write_text(json.dumps(cache))
            base = cache[key]
        raw[name] = {"table": table, "model": model, "minilm": base}
        ece = f"{table['calibration_error']:.3f}" if table else "-"
        print(f"| {name} | {model['n']} | {cell(table)} | {cell(model)} | {cell(base)} | {ece} / {model['calibration_error']:.3f} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
