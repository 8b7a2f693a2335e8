"""Builds tests/data/foreign/mcptoolbench/ from MCPToolBench++.

Source: github.com/mcp-tool-bench/MCPToolBenchPP, the single-call sets of
four domains: browser (Playwright and Puppeteer servers, 32 tools),
file_system (the filesystem reference server, 11 tools), finance (one stock
quote tool) and search (Google search and Tavily, 5 tools). Each record
holds a request, the tools offered with it and the labeled call; a label's
`similar_tools` (the same action on the other server: `puppeteer_hover`
for `playwright_hover`) become acceptable alternatives.

The repository carries no licence file and its README states none, so the
converted files are NOT committed (the folder is in .gitignore): run this
script to make them.

    python3 scripts/embedding/convert_mcptoolbench.py                # clones the pinned commit
    python3 scripts/embedding/convert_mcptoolbench.py --source DIR   # a checkout, or a bare git dir

Writes `catalog.json`: the 49 tools of the four domains pooled into one
catalog (`tools/list` shape; names as the benchmark gives them, all
distinct), so a request has to find its tool among every domain's, as a
gateway user with these servers would; and `dev.jsonl` / `heldout.jsonl`:
the 699 requests, split by a hash of the record's uuid (only the dev half
is ever looked at while tuning). Multi-language map and pay sets are left
out (not in the brief; pay has no published single-call file here).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "foreign" / "mcptoolbench"
URL = "https://github.com/mcp-tool-bench/MCPToolBenchPP"
COMMIT = "323725c417b43a02bea5a1421662e299dbadeb77"
FILES = {
    "browser": "data/browser/browser_0724_single_v3.json",
    "file_system": "data/file_system/filesystem_0723_single.json",
    "finance": "data/finance/finance_0724_single_v3.json",
    "search": "data/search/search_0725_single_v2.json",
}


def half_of(uuid: str) -> str:
    return "dev" if hashlib.sha256(uuid.encode()).digest()[0] % 2 == 0 else "heldout"


def reader(source: Path | None):
    """A function path -> text over the pinned commit of the repository."""
    if source is None:
        tmp = Path(tempfile.mkdtemp(prefix="mcptoolbench-"))
        subprocess.run(["git", "clone", "--quiet", "--bare", URL, str(tmp)], check=True)
        source = tmp
    git_dir = source / ".git" if (source / ".git").exists() else source

    def read(path: str) -> str:
        for rev in (COMMIT, "HEAD"):
            done = subprocess.run(
                ["git", f"--git-dir={git_dir}", "show", f"{rev}:{path}"],
                capture_output=True,
                text=True,
            )
            if done.returncode == 0:
                if rev != COMMIT:
                    print(f"warning: commit {COMMIT[:10]} not found, read {path} at HEAD", file=sys.stderr)
                return done.stdout
        sys.exit(f"cannot read {path} from {git_dir}")

    return read


def main() -> None:
    parser = argparse.ArgumentParser(description="MCPToolBench++ as zenmode eval labels")
    parser.add_argument("--source", type=Path, help="checkout or bare git dir of MCPToolBenchPP")
    args = parser.parse_args()
    read = reader(args.source)

    tools: dict[str, dict] = {}
    halves: dict[str, list[dict]] = {"dev": [], "heldout": []}
    for domain, path in FILES.items():
        for record in json.loads(read(path)):
            for tool in record["tools"]:
                entry = {
                    "name": tool["name"],
                    "description": (tool.get("description") or "").strip(),
                    "inputSchema": tool.get("input_schema") or {"type": "object"},
                }
                known = tools.setdefault(tool["name"], entry)
                if known["description"] != entry["description"]:
                    sys.exit(f"two tools named {tool['name']} with different descriptions")
            calls = record["function_call_label"]
            if len(calls) != 1:
                continue  # single-call sets only
            call = calls[0]
            label = {"query": record["query"].strip(), "expected": call["name"]}
            similar = sorted({t["name"] for t in call.get("similar_tools") or []} - {call["name"]})
            if similar:
                label["acceptable"] = similar
            label["domain"] = domain
            halves[half_of(record["uuid"])].append(label)

    for half in halves.values():
        for label in half:
            for name in [label["expected"], *label.get("acceptable", [])]:
                if name not in tools:
                    sys.exit(f"label names {name}, which no record offers")
    OUT.mkdir(parents=True, exist_ok=True)
    catalog = {
        "source": f"{URL} @ {COMMIT[:10]}: tools offered with the single-call records of {', '.join(FILES)}",
        "license": "none stated in the repository (not committed here)",
        "count": len(tools),
        "tools": [tools[name] for name in sorted(tools)],
    }
    (OUT / "catalog.json").write_text(json.dumps(catalog, indent=1, ensure_ascii=False) + "\n")
    for half, labels in halves.items():
        # The domain is not a zenmode label field: it goes into one file per
        # domain beside the pooled one, for figures per domain.
        pooled = [{k: v for k, v in label.items() if k != "domain"} for label in labels]
        with (OUT / f"{half}.jsonl").open("w") as out:
            for label in pooled:
                out.write(json.dumps(label, ensure_ascii=False) + "\n")
        for domain in FILES:
            with (OUT / f"{domain}_{half}.jsonl").open("w") as out:
                for label, clean in zip(labels, pooled):
                    if label["domain"] == domain:
                        out.write(json.dumps(clean, ensure_ascii=False) + "\n")
        print(f"{half}: {len(labels)} requests")
    print(f"catalog: {len(tools)} tools -> {OUT}")


if __name__ == "__main__":
    main()
