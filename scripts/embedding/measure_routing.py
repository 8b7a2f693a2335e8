"""Measures zenmode and all-MiniLM-L6-v2 alone side by side on the
real-server set (tests/data/foreign/realservers) and MCPToolBench++
(tests/data/foreign/mcptoolbench, made by convert_mcptoolbench.py), with
the built-in modes on and off, each half separately, and prints Markdown
tables (docs/benchmarks.md, "Routing over real servers").

    python3 scripts/embedding/measure_routing.py --zenmode target/release/zenmode [--no-baseline] [--json OUT]

Every zenmode figure comes from `zenmode eval --json` (the select reply's
own next_call), every MiniLM figure from baseline.py over the same catalog
and labels. The union latency row runs `zenmode eval` over
../shared/catalogs/union_all.json (1,155 tools) with the server requests,
and is only meaningful with a release binary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REAL = ROOT / "tests" / "data" / "foreign" / "realservers"
MTB = ROOT / "tests" / "data" / "foreign" / "mcptoolbench"
UNION = ROOT / ".." / "shared" / "catalogs" / "union_all.json"
MODES = ROOT / "modes"


def zen(
    binary: str, catalog: Path, labels: list[Path], builtin: bool, model: str | None = None
) -> dict:
    """`zenmode eval --json` for these labels; `model` names --embedding-model."""
    args = [binary] + (["--embedding-model", model] if model else []) + ["--catalog", str(catalog)]
    if not builtin:
        args.append("--no-builtin-modes")
    args += ["eval", "--json"]
    for label in labels:
        args += ["--labels", str(label)]
    done = subprocess.run(args, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}: {done.stderr}")
    return json.loads(done.stdout)


def minilm(catalog: Path, labels: list[Path], builtin: bool) -> dict:
    """baseline.py's pooled line (or the only one) for these labels."""
    args = [sys.executable, str(HERE / "baseline.py")]
    if builtin:
        args += ["--builtin-modes", str(MODES)]
    args += [str(catalog)] + [str(l) for l in labels]
    done = subprocess.run(args, capture_output=True, text=True, cwd=HERE)
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}: {done.stderr}")
    lines = [json.loads(l) for l in done.stdout.splitlines() if l.strip()]
    return lines[-1]


def fmt(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def row(name: str, z: dict | None, m: dict | None) -> str:
    def cells(r: dict | None, ours: bool) -> list[str]:
        if r is None:
            return ["-"] * 5
        traps = f"{r.get('traps_taken', 0)}/{r.get('trap_queries', 0)}"
        if ours:
            nofit = (
                f"{r['no_fit_flagged']:.3f} / {r['no_clear_fit']:.3f}" if r.get("no_fit_queries") else f"- / {r['no_clear_fit']:.3f}"
            )
        else:
            sep = r.get("no_fit_separation")
            nofit = "-" if not sep else f"({sep['caught_with_a_tenth_flagged']:.3f})"
        return [fmt(r.get("top1")), fmt(r.get("top1_acceptable")), fmt(r.get("top3")), traps, nofit]

    zc, mc = cells(z, True), cells(m, False)
    n = (z or m or {}).get("n", "-")
    return f"| {name} | {n} | " + " | ".join(f"{a} / {b}" for a, b in zip(zc[:4], mc[:4])) + f" | {zc[4]} |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--zenmode", default=str(ROOT / "target" / "release" / "zenmode"))
    parser.add_argument("--no-baseline", action="store_true", help="zenmode only (MiniLM takes minutes)")
    parser.add_argument("--json", type=Path, help="also write every raw report here")
    args = parser.parse_args()
    raw: dict = {}

    def measure(key: str, catalog: Path, labels: list[Path], builtin: bool):
        z = zen(args.zenmode, catalog, labels, builtin)
        m = None if args.no_baseline else minilm(catalog, labels, builtin)
        raw[key] = {"zenmode": z, "minilm": m}
        return z, m

    print("zenmode default / MiniLM alone; top-1 counts exact, top-1 (acc.) counts acceptable tools; traps = destructive traps taken as next_call / queries with traps; no-fit = off-topic flagged / relevant flagged (zenmode), MiniLM has no threshold\n")
    header = "| set | n | top-1 | top-1 (acc.) | top-3 | traps | no-fit (zenmode) |\n|---|---|---|---|---|---|---|"
    print("### Real-server set (51 tools of six servers)\n")
    print(header)
    for half in ("tune", "heldout"):
        servers = REAL / f"{half}.jsonl"
        builtin = REAL / f"builtin_{half}.jsonl"
        nofit = REAL / f"nofit_{half}.jsonl"
        for on in (True, False):
            tag = "on" if on else "off"
            z, m = measure(f"real_{half}_{tag}_servers", REAL / "catalog.json", [servers], on)
            print(row(f"{half}, built-ins {tag}: server requests", z, m))
            labels = [servers, builtin, nofit] if on else [servers, nofit]
            z, m = measure(f"real_{half}_{tag}_all", REAL / "catalog.json", labels, on)
            what = "+ built-in requests + off-topic" if on else "+ off-topic"
            print(row(f"{half}, built-ins {tag}: {what}", z, m))
    if (MTB / "catalog.json").exists():
        print("\n### MCPToolBench++ (49 tools: browser, file_system, finance, search)\n")
        print(header)
        for half in ("dev", "heldout"):
            for on in (False, True):
                tag = "on" if on else "off"
                z, m = measure(f"mtb_{half}_{tag}", MTB / "catalog.json", [MTB / f"{half}.jsonl"], on)
                print(row(f"{half}, built-ins {tag}", z, m))
    else:
        print("\n(MCPToolBench++ not converted: run convert_mcptoolbench.py)")
    print("\n### Select latency over the 1,155-tool union (ms, on the built index)\n")
    print("| labels | built-ins | rank p50 | rank p99 | reply p50 | reply p99 | build |\n|---|---|---|---|---|---|---|")
    for on in (False, True):
        z = zen(args.zenmode, UNION, [REAL / "tune.jsonl", REAL / "heldout.jsonl"], on)
        raw[f"union_{'on' if on else 'off'}"] = {"zenmode": z}
        lat = z["latency"]
        print(
            f"| real-server requests ({z['n']}), top-1 {z['top1']:.3f} | {'on' if on else 'off'} | "
            f"{lat['rank']['p50_ms']:.3f} | {lat['rank']['p99_ms']:.3f} | {lat['reply']['p50_ms']:.3f} | {lat['reply']['p99_ms']:.3f} | {lat['build']} |"
        )
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
