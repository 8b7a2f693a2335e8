#!/usr/bin/env python3
"""Builds data/examples/<server>.json from example writers' files.

    python3 scripts/examples/build_examples.py WRITTEN.json... [--scored FILE.jsonl...]

Each WRITTEN file is {"<catalog>": {"<tool>": ["request", ...]}}, as the
writers hand it in; <catalog> names a file of ../shared/catalogs or tests/data/registry (or a
server of livemcptool.json). For every tool this script
- adds the fingerprint of the description the examples were written for
  (the first 16 hex digits of its SHA-256, as src/catalog/tool_examples.rs
  computes it), so a changed tool is noticed;
- drops examples that repeat another (case and punctuation aside) and those
  whose rarity-weighted word overlap with a scored request reaches 0.35
  (decision 0010): an evaluation must measure ranking, not memory. The
  test `tool_examples_are_disjoint_from_the_scored_sets` holds every example
  under 0.45.
Files of servers it is not given are left as they are. Prints what it kept
and dropped per server.
"""
import argparse
import glob
import hashlib
import json
import math
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CATALOGS = os.path.join(ROOT, "..", "shared", "catalogs")
# Servers captured from their npm packages (tests/data/registry/README.md).
REGISTRY = os.path.join(ROOT, "tests", "data", "registry")
OUT = os.path.join(ROOT, "data", "examples")
DROP_AT = 0.35

# Catalog file -> (server id of the examples file, identity names).
NAMED = {
    "github": ("github", ["github-mcp-server", "github/github-mcp-server"]),
    "github_reference_legacy": ("github_reference_legacy", ["@modelcontextprotocol/server-github", "github-reference"]),
    "atlassian": ("atlassian", ["mcp-atlassian", "atlassian", "jira", "confluence"]),
    "cloudflare": ("cloudflare", ["@cloudflare/mcp-server-cloudflare"]),
    "huly": ("huly", ["huly-mcp", "@firfi/huly-mcp"]),
    "huly_v0.1.35": ("huly", ["huly-mcp", "@firfi/huly-mcp"]),
    "playwright": ("playwright", ["@playwright/mcp", "Playwright"]),
    "playwright_allcaps": ("playwright", ["@playwright/mcp", "Playwright"]),
    "puppeteer": ("puppeteer", ["@modelcontextprotocol/server-puppeteer", "example-servers/puppeteer"]),
    "slack": ("slack", ["@modelcontextprotocol/server-slack", "Slack MCP Server"]),
    "notion": ("notion", ["@notionhq/notion-mcp-server", "Notion API"]),
    "stripe": ("stripe", ["@stripe/mcp"]),
    "filesystem": ("filesystem", ["secure-filesystem-server", "@modelcontextprotocol/server-filesystem"]),
    "everything": ("everything", ["example-servers/everything", "mcp-servers/everything", "@modelcontextprotocol/server-everything"]),
    "memory": ("memory", ["memory-server", "@modelcontextprotocol/server-memory"]),
    "git": ("git", ["mcp-git", "mcp-server-git"]),
    "fetch": ("fetch", ["mcp-fetch", "mcp-server-fetch"]),
    "time": ("time", ["mcp-time", "mcp-server-time"]),
    "brave-search": ("brave-search", ["example-servers/brave-search", "@modelcontextprotocol/server-brave-search"]),
    "gitlab": ("gitlab", ["gitlab-mcp-server", "@modelcontextprotocol/server-gitlab"]),
    "google-maps": ("google-maps", ["mcp-server/google-maps", "@modelcontextprotocol/server-google-maps"]),
    "postgres": ("postgres", ["example-servers/postgres", "@modelcontextprotocol/server-postgres"]),
    "everart": ("everart", ["example-servers/everart", "@modelcontextprotocol/server-everart"]),
    "sentry": ("sentry", ["Sentry MCP", "@sentry/mcp-server"]),
    "mongodb": ("mongodb", ["MongoDB MCP Server", "mongodb-mcp-server"]),
    "firecrawl": ("firecrawl", ["firecrawl-fastmcp", "firecrawl-mcp"]),
    "tavily": ("tavily", ["tavily-mcp"]),
    "exa": ("exa", ["exa-search-server", "exa-mcp-server"]),
    "kubernetes": ("kubernetes", ["kubernetes", "mcp-server-kubernetes"]),
    "hubspot": ("hubspot", ["hubspot-mcp-server", "@hubspot/mcp-server"]),
    "figma": ("figma", ["Figma MCP Server", "figma-developer-mcp"]),
    "neon": ("neon", ["mcp-server-neon", "@neondatabase/mcp-server-neon"]),
    "elasticsearch": ("elasticsearch", ["elasticsearch-mcp", "@elastic/mcp-server-elasticsearch"]),
    "chrome-devtools": ("chrome-devtools", ["chrome_devtools", "chrome-devtools-mcp"]),
    "browserbase": ("browserbase", ["Browserbase MCP Server", "@browserbasehq/mcp-server-browserbase"]),
    "circleci": ("circleci", ["mcp-server-circleci", "@circleci/mcp-server-circleci"]),
    "netlify": ("netlify", ["netlify-mcp", "@netlify/mcp"]),
    "sqlite": ("sqlite", ["mcp-server-sqlite"]),
    "redis": ("redis", ["@modelcontextprotocol/server-redis"]),
    "gmail": ("gmail", ["@gongrzhe/server-gmail-autoauth-mcp"]),
    "google-calendar": ("google-calendar", ["@cocal/google-calendar-mcp"]),
    "discord": ("discord", ["MCP-Discord", "mcp-discord"]),
    "obsidian": ("obsidian", ["mcp-obsidian"]),
    "airtable": ("airtable", ["airtable-mcp-server"]),
    "task-master": ("task-master", ["Task Master MCP Server", "task-master-ai"]),
    "perplexity": ("perplexity", ["ai.perplexity/mcp-server", "@perplexity-ai/mcp-server"]),
    "pinecone": ("pinecone", ["pinecone-mcp", "@pinecone-database/mcp"]),
    "aws-documentation": ("aws-documentation", ["awslabs.aws-documentation-mcp-server"]),
    "shopify": ("shopify", ["shopify-dev-mcp", "@shopify/dev-mcp"]),
    "linear": ("linear", ["@tacticlaunch/mcp-linear"]),
    "line": ("line", ["line-bot", "@line/line-bot-mcp-server"]),
    "youtube": ("youtube", ["YouTube", "youtube-data-mcp-server"]),
    "bitbucket": ("bitbucket", ["@aashari/mcp-server-atlassian-bitbucket"]),
    "ms-365": ("ms-365", ["Microsoft365MCP", "@softeria/ms-365-mcp-server"]),
}
# What users call a server in their requests, besides its id.
CALLED = {
    "github": ["github", "gh"],
    "github_reference_legacy": ["github", "gh"],
    "atlassian": ["jira", "confluence", "atlassian"],
    "cloudflare": ["cloudflare", "wrangler"],
    "huly": ["huly"],
    "playwright": ["playwright", "browser"],
    "puppeteer": ["puppeteer", "browser"],
    "slack": ["slack"],
    "notion": ["notion"],
    "stripe": ["stripe"],
    "git": ["git"],
    "brave-search": ["brave"],
    "gitlab": ["gitlab"],
    "google-maps": ["maps"],
    "postgres": ["postgres", "postgresql", "psql"],
    "everart": ["everart"],
    "sentry": ["sentry"],
    "mongodb": ["mongodb", "mongo"],
    "firecrawl": ["firecrawl"],
    "tavily": ["tavily"],
    "exa": ["exa"],
    "kubernetes": ["kubernetes", "k8s", "kubectl"],
    "hubspot": ["hubspot"],
    "figma": ["figma"],
    "neon": ["neon"],
    "elasticsearch": ["elasticsearch", "elastic"],
    "chrome-devtools": ["devtools"],
    "browserbase": ["browserbase", "stagehand"],
    "circleci": ["circleci", "circle"],
    "netlify": ["netlify"],
    "sqlite": ["sqlite"],
    "redis": ["redis"],
    "gmail": ["gmail", "email", "mail"],
    "google-calendar": ["calendar", "gcal"],
    "discord": ["discord"],
    "obsidian": ["obsidian", "vault"],
    "airtable": ["airtable"],
    "task-master": ["taskmaster"],
    "perplexity": ["perplexity"],
    "pinecone": ["pinecone"],
    "aws-documentation": ["aws"],
    "shopify": ["shopify"],
    "linear": ["linear"],
    "youtube": ["youtube", "yt"],
    "bitbucket": ["bitbucket"],
    "ms-365": ["outlook", "onedrive", "onenote", "office", "microsoft", "m365", "o365"],
}
CATALOG_FILE = {"huly": "huly_v0.1.35", "playwright": "playwright_allcaps"}
# Written keys of livemcptool.json's servers (--live files) start with this.
LIVE = "livemcptool:"


def fingerprint(description):
    return hashlib.sha256(description.encode("utf-8")).hexdigest()[:16]


def normalized(text):
    # As tests/select_eval.rs splits: on anything that is not a letter or digit.
    return " ".join(w.lower() for w in re.split(r"[\W_]+", text, flags=re.UNICODE) if w)


def catalog_tools(name):
    """(server id, identity, {tool: description}) of a written key."""
    file = CATALOG_FILE.get(name, name)
    path = os.path.join(CATALOGS, f"{file}.json")
    if not os.path.exists(path):
        path = os.path.join(REGISTRY, f"{file}.json")
    if name.startswith(LIVE):
        name = name[len(LIVE):]
    elif os.path.exists(path) and name in NAMED:
        tools = {t["name"]: t.get("description", "") for t in json.load(open(path))["tools"]}
        server, identity = NAMED[name]
        return server, identity, tools
    live = json.load(open(os.path.join(CATALOGS, "livemcptool.json")))["tools"]
    tools = {t["name"]: t.get("description", "") for t in live if t.get("server") == name}
    if not tools:
        sys.exit(f"{name}: neither a catalog nor a livemcptool server")
    server = name if name not in NAMED else f"{name}-livemcp"
    return server, [name], tools


def file_name(server):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", server).strip("-") + ".json"


class Overlap:
    def __init__(self, texts):
        freq = {}
        self.docs = 0
        for text in texts:
            self.docs += 1
            for w in set(normalized(text).split()):
                freq[w] = freq.get(w, 0) + 1
        self.idf = {w: math.log(self.docs / f) for w, f in freq.items()}

    def words(self, text):
        return {w for w in normalized(text).split() if w in self.idf}

    def weight(self, words):
        return sum(self.idf[w] for w in words)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("written", nargs="+")
    parser.add_argument("--live", nargs="*", default=[], help="written files keyed by livemcptool.json's servers")
    parser.add_argument("--scored", nargs="*", default=[])
    args = parser.parse_args()
    scored = []
    for path in args.scored:
        for line in open(path):
            line = line.strip()
            if line:
                record = json.loads(line)
                if "query" in record:
                    scored.append(record["query"])
    merged = {}
    # A tool written in several files (a later top-up) has all their examples.
    for prefix, paths in (("", args.written), (LIVE, args.live)):
        for path in paths:
            for key, tools in json.load(open(path)).items():
                for tool, examples in tools.items():
                    merged.setdefault(prefix + key, {}).setdefault(tool, []).extend(examples)
    all_examples = [e for tools in merged.values() for ex in tools.values() for e in ex]
    overlap = Overlap(scored + all_examples)
    scored_words = [(q, overlap.words(q)) for q in scored]
    postings = {}
    for i, (_, words) in enumerate(scored_words):
        for w in words:
            postings.setdefault(w, []).append(i)
    os.makedirs(OUT, exist_ok=True)
    for key, tools in sorted(merged.items()):
        server, identity, described = catalog_tools(key)
        out = {"server": server, "identity": identity, "called": CALLED.get(server, []), "tools": {}}
        seen = set()
        kept = dropped_repeat = dropped_scored = 0
        for tool, examples in sorted(tools.items()):
            if tool not in described:
                sys.exit(f"{key}: {tool} is not a tool of its catalog")
            keep = []
            for example in examples:
                example = " ".join(example.split())
                norm = normalized(example)
                if not norm or norm in seen:
                    dropped_repeat += 1
                    continue
                words = overlap.words(example)
                shared = {}
                for w in words:
                    for i in postings.get(w, []):
                        shared[i] = shared.get(i, 0.0) + overlap.idf[w]
                own = overlap.weight(words)
                too_close = False
                for i, s in shared.items():
                    union = own + overlap.weight(scored_words[i][1]) - s
                    if union > 0 and s / union >= DROP_AT:
                        too_close = True
                        break
                if too_close:
                    dropped_scored += 1
                    continue
                seen.add(norm)
                keep.append(example)
            out["tools"][tool] = {"fingerprint": fingerprint(described[tool]), "examples": keep}
            kept += len(keep)
        missing = sorted(set(described) - set(tools))
        with open(os.path.join(OUT, file_name(server)), "w") as f:
            json.dump(out, f, indent=1, ensure_ascii=False)
            f.write("\n")
        fewest = min((len(t["examples"]) for t in out["tools"].values()), default=0)
        print(f"{server}: {len(out['tools'])} tools, {kept} examples kept (fewest {fewest}), "
              f"{dropped_repeat} repeats and {dropped_scored} near scored requests dropped"
              + (f"; no examples for {len(missing)} tools" if missing else ""))


if __name__ == "__main__":
    main()
