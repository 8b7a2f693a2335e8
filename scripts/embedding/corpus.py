"""Builds the training corpus for refine.py and the model's sentence vectors for it.

    python scripts/embedding/corpus.py [--model DIR] [--max 64000] [--extra-max 96000]
        [--seed 0] [--docstrings-root DIR ...] [--man-root DIR] [--wordnet-root DIR]
        [--threads N] [--no-teacher]

The first --max texts, in this order of priority:
- the built-in mode manifests (modes/*.json in this repository);
- the MCP catalogs in ../shared/catalogs/*.json (union_all.json skipped);
- English man pages (--man-root, default /usr/share/man): the NAME line and
  the first DESCRIPTION paragraph;
- first paragraphs of function, class and module docstrings, read with ast
  (never imported), under each --docstrings-root (default: the running
  interpreter's site-packages and standard library).
Modes and catalogs are all kept; man pages fill up to a third of the rest of
--max and docstrings the remainder, each sampled with --seed.

Then --extra-max more, so a larger corpus leaves the first part unchanged
(refine.py --sources can still train on it alone):
- the one-line descriptions of Debian's programs (`apt-cache dumpavail`;
  libraries, bindings, fonts and -dev/-doc/-data packages left out);
- WordNet 3.0 (Debian package wordnet-base, --wordnet-root): every verb
  gloss, every example sentence, then noun, adjective and adverb glosses in
  a seeded shuffle.
Every text is cut to its first 64 WordPiece tokens and duplicates (ignoring
case) dropped.

The evaluation sets (tests/data/foreign, ../shared/routing, MetaTool, BFCL)
are never read.

Writes corpus.jsonl ({"text", "source"}) and teacher.npy (the unit-length
all-MiniLM-L6-v2 sentence vector of each text, float32, same order) to the
cache folder (minilm.py's CACHE / "refine", outside the repository). DIR is a
folder filled by fetch_model.sh (tokenizer.json and the sentence-transformers
files); the vectors come from sentence-transformers on the CPU.
The shipped table was built with the defaults and --threads 2: 160,000
texts (21,489 package descriptions, 74,511 WordNet texts), about 33 minutes.
"""
from __future__ import annotations

import argparse
import ast
import glob
import gzip
import json
import os
import random
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from minilm import CACHE
from zentable import split_identifier

ROOT = Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared"
CACHE_DIR = CACHE / "refine"
MODEL_DIR = CACHE / "all-MiniLM-L6-v2"  # fetch_model.sh's default folder
MAX_TOKENS = 64


def clean(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def first_paragraph(doc: str) -> str:
    doc = doc.strip()
    para = re.split(r"\n\s*\n", doc, maxsplit=1)[0]
    return clean(para)


def first_sentence(text: str) -> str:
    m = re.search(r"\.\s", text)
    return text[: m.start() + 1] if m else text


def modes():
    for path in sorted(glob.glob(str(ROOT / "modes" / "*.json"))):
        d = json.load(open(path))
        name = split_identifier(d.get("name", ""))
        about = d.get("description") or d.get("summary") or ""
        yield f"{name}: {clean(about)}"
        for key in ("summary", "description"):
            if d.get(key):
                yield clean(d[key])
        for ex in d.get("examples", []):
            yield clean(ex)


def catalogs():
    seen = set()
    for path in sorted(glob.glob(str(SHARED / "catalogs" / "*.json"))):
        if path.endswith("union_all.json"):
            continue
        try:
            d = json.load(open(path))
        except Exception:
            continue
        for tool in d.get("tools", []):
            name, desc = tool.get("name", ""), clean(tool.get("description") or "")
            if (name, desc) in seen:
                continue
            seen.add((name, desc))
            yield f"{split_identifier(name)}: {desc}"
            if desc:
                yield first_sentence(desc)
            props = ((tool.get("inputSchema") or {}).get("properties") or {})
            if isinstance(props, dict):
                for pname, p in props.items():
                    if isinstance(p, dict) and isinstance(p.get("description"), str) and p["description"].strip():
                        yield f"{split_identifier(pname)}: {clean(p['description'])}"


def docstrings(roots):
    files = []
    for root in roots:
        files += glob.glob(os.path.join(root, "**", "*.py"), recursive=True)
    files = sorted(set(files))
    for path in files:
        if "/test" in path or "/tests/" in path:
            continue
        try:
            src = open(path, encoding="utf-8", errors="ignore").read()
            tree = ast.parse(src)
        except Exception:
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                doc = ast.get_docstring(node, clean=True)
                if not doc:
                    continue
                para = first_paragraph(doc)
                if len(para) < 20 or len(para.split()) < 4:
                    continue
                if isinstance(node, ast.Module):
                    yield para
                else:
                    name = node.name
                    if name.startswith("__"):
                        yield para
                    else:
                        yield f"{split_identifier(name.strip('_'))}: {para}"


def hash_path(path: str) -> int:
    import zlib

    return zlib.crc32(path.encode())


def troff_text(s: str) -> str:
    s = re.sub(r"\\f[0-9BIRP]|\\f\(..|\\f\[[^\]]*\]|\\[,/&]|\\\(..|\\\*\(..|\\\*.", "", s)
    s = s.replace("\\-", "-").replace("\\e", "\\").replace("\\ ", " ")
    return clean(s)


def manpages(root):
    for path in sorted(glob.glob(os.path.join(root, "man[1-8]", "*.gz"))):
        # gcloud ships thousands of near-identical pages: keep one in six
        if os.path.basename(path).startswith("gcloud") and hash_path(path) % 6:
            continue
        try:
            raw = gzip.open(path, "rt", errors="ignore").read()
        except Exception:
            continue
        lines = raw.splitlines()
        section = None
        name_buf, desc_buf = [], []
        for line in lines:
            if line.startswith(".SH") or line.startswith(".Sh"):
                section = line[3:].strip().strip('"').upper()
                if desc_buf and section != "DESCRIPTION":
                    pass
                continue
            if line.startswith(".\\\"") or line.startswith("'\\\""):
                continue
            if section == "NAME":
                if not line.startswith("."):
                    name_buf.append(line)
                elif line.startswith((".Nm", ".Nd")):
                    name_buf.append(line[3:])
            elif section == "DESCRIPTION":
                if line.startswith((".PP", ".P", ".LP", ".IP", ".TP", ".Pp")) and desc_buf:
                    section = "DONE"
                elif not line.startswith("."):
                    desc_buf.append(line)
                elif line.startswith((".B ", ".I ", ".BR ", ".IR ", ".BI ", ".RB ", ".RI ")):
                    desc_buf.append(re.sub(r"^\.\w+\s+", "", line).replace('"', ""))
        name = troff_text(" ".join(name_buf))
        if " - " in name:
            cmd, what = name.split(" - ", 1)
            yield f"{cmd.strip()}: {what.strip()}"
        desc = troff_text(" ".join(desc_buf))
        if len(desc.split()) >= 4:
            yield desc


def debian_packages():
    """Short descriptions of the Debian archive's programs ("fzy: fast, simple
    fuzzy text selector"): what a tool does in one line, like a catalog's
    descriptions but from tens of thousands of authors. Libraries, language
    bindings, fonts and -dev/-doc/-data splits are left out: their lines
    repeat one pattern thousands of times."""
    try:
        dump = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as err:
        raise SystemExit(f"apt-cache dumpavail failed ({err}): the Debian descriptions need apt, or pass --extra-max 0")
    skip_prefix = re.compile(r"^(lib|golang-|node-|ruby-|r-cran-|librust-|fonts-|texlive|python3?-|php-|perl-|haskell-|ocaml-|elpa-|xfonts-)")
    skip_suffix = re.compile(r"-(dev|doc|dbg|dbgsym|data|common|examples|tests?)$")
    package = None
    for line in dump.splitlines():
        if line.startswith("Package: "):
            package = line[9:].strip()
        elif line.startswith("Description: ") and package:
            if skip_prefix.match(package) or skip_suffix.search(package):
                continue
            yield f"{package.replace('-', ' ')}: {line[13:].strip()}"


def wordnet(root, rng):
    """WordNet's glosses and example sentences: everyday English in short
    texts, the register of people's requests more than of API docs. All verb
    glosses (actions are what tools do), all example sentences, then noun,
    adjective and adverb glosses in a seeded shuffle."""
    verbs, examples, others = [], [], []
    for pos in ("verb", "noun", "adj", "adv"):
        path = os.path.join(root, f"data.{pos}")
        if not os.path.exists(path):
            raise SystemExit(f"{path} not found: apt-get install wordnet-base, or pass --extra-max 0")
        for line in open(path, encoding="latin-1"):
            if line.startswith("  "):  # the licence header
                continue
            head, _, gloss = line.partition(" | ")
            fields = head.split()
            word = re.sub(r"\(\w+\)$", "", fields[4]).replace("_", " ")
            parts = [p.strip() for p in gloss.strip().split(";")]
            definitions = [p for p in parts if p and not p.startswith('"')]
            if definitions:
                (verbs if pos == "verb" else others).append(f"{word}: {definitions[0]}")
            examples += [p.strip('"') for p in parts if p.startswith('"') and len(p.split()) >= 3]
    rng.shuffle(others)
    return verbs + examples + others


def cut(tokenizer, texts):
    out = []
    for t, enc in zip(texts, tokenizer.encode_batch(texts, add_special_tokens=False)):
        if len(enc.ids) > MAX_TOKENS:
            t = t[: enc.offsets[MAX_TOKENS - 1][1]]
        out.append(t)
    return out


def main():
    ap = argparse.ArgumentParser(description="Builds refine.py's corpus and the model's sentence vectors for it.")
    ap.add_argument("--model", type=Path, default=MODEL_DIR, metavar="DIR", help=f"folder filled by fetch_model.sh (default {MODEL_DIR})")
    ap.add_argument("--max", type=int, default=64000, help="number of texts (default 64000, as shipped)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--docstrings-root", action="append", metavar="DIR", help="folder searched for *.py docstrings; repeatable (default: this interpreter's site-packages and standard library)")
    ap.add_argument("--man-root", default="/usr/share/man", metavar="DIR", help="man page folder holding man1..man8 (default /usr/share/man)")
    ap.add_argument("--extra-max", type=int, default=96000, help="texts added after the --max ones: Debian package descriptions, then WordNet glosses and examples (default 96000, as shipped; 0 leaves them out)")
    ap.add_argument("--wordnet-root", default="/usr/share/wordnet", metavar="DIR", help="WordNet 3.0 database (Debian package wordnet-base; default /usr/share/wordnet)")
    ap.add_argument("--threads", type=int, default=1, help="CPU threads for the model (default 1; more changes the last bits of the vectors)")
    ap.add_argument("--no-teacher", action="store_true", help="write corpus.jsonl only")
    args = ap.parse_args()
    from tokenizers import Tokenizer

    for needed in ("tokenizer.json", "modules.json"):
        if not (args.model / needed).exists():
            raise SystemExit(f"{args.model / needed} not found: fill the folder with scripts/embedding/fetch_model.sh DIR")
    roots = args.docstrings_root or [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["stdlib"]]
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer.from_file(str(args.model / "tokenizer.json"))
    tok.no_truncation()
    tok.no_padding()
    rng = random.Random(args.seed)
    pools = {
        "modes": list(modes()),
        "catalogs": list(catalogs()),
        "man": list(manpages(args.man_root)),
        "docstrings": list(docstrings(roots)),
    }
    if args.extra_max:
        pools["packages"] = list(debian_packages())
        pools["wordnet"] = wordnet(args.wordnet_root, random.Random(args.seed))
    seen, corpus = set(), []
    for source in pools:
        texts = [t for t in pools[source] if t and len(t) >= 8]
        texts = cut(tok, texts)
        uniq = []
        for t in texts:
            key = t.lower()
            if key not in seen:
                seen.add(key)
                uniq.append(t)
        print(source, "raw", len(pools[source]), "unique", len(uniq), file=sys.stderr)
        pools[source] = uniq
    fixed = pools["modes"] + pools["catalogs"]
    room = max(0, args.max - len(fixed))
    man = list(pools["man"])
    rng.shuffle(man)
    man = man[: room // 3]
    docs = list(pools["docstrings"])
    rng.shuffle(docs)
    docs = docs[: room - len(man)]
    src = {t: s for s in pools for t in pools[s]}
    corpus = fixed + man + docs
    if args.extra_max:
        # after the --max texts, so those stay as they were and refine.py --sources can leave these out
        extra = pools["packages"][: args.extra_max]
        corpus += extra + pools["wordnet"][: args.extra_max - len(extra)]
    with open(CACHE_DIR / "corpus.jsonl", "w") as f:
        for t in corpus:
            f.write(json.dumps({"text": t, "source": src[t]}) + "\n")
    counts = {}
    for t in corpus:
        counts[src[t]] = counts.get(src[t], 0) + 1
    print("corpus", len(corpus), counts, file=sys.stderr)
    if args.no_teacher:
        return
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(args.model), device="cpu")
    order = sorted(range(len(corpus)), key=lambda i: len(corpus[i]))
    vecs = np.zeros((len(corpus), 384), dtype=np.float32)
    t0 = time.time()
    step = 4096
    for s in range(0, len(order), step):
        idx = order[s : s + step]
        vecs[idx] = model.encode([corpus[i] for i in idx], batch_size=64, normalize_embeddings=True)
        el = time.time() - t0
        print(f"teacher {s + len(idx)}/{len(order)} {el:.0f}s {(s + len(idx)) / el:.0f}/s", file=sys.stderr, flush=True)
        np.save(CACHE_DIR / "teacher_partial.npy", vecs)
    np.save(CACHE_DIR / "teacher.npy", vecs)
    print(f"wrote {CACHE_DIR / 'corpus.jsonl'} and {CACHE_DIR / 'teacher.npy'}", file=sys.stderr)


if __name__ == "__main__":
    main()
