#!/usr/bin/env python3
"""Fine-tunes the last layer(s) of all-MiniLM-L6-v2 on the shipped example
requests, so that a request lands nearer the text of the tool it asks for,
and writes the tuned layers as an overlay zenmode applies over the model
(docs/decisions/0023-encoder-fine-tune.md).

    /path/to/venv/bin/python scripts/embedding/finetune.py --out FILE [--without SERVER ...]
    /path/to/venv/bin/python scripts/embedding/finetune.py --measure

Training: each example request is paired with its tool's text (the tool's
name as words and its description, as adapter.py writes it); a batch holds
the examples of two servers, so that the other tools of the same server
are among the negatives, and the loss is a softmax over the batch's tools
(scale 20). Only the top layers learn; the layers below them are run once
and their outputs kept. The overlay holds the tuned layers' tensors (the
matrices in half floats) and, in its metadata, the SHA-256 of the
model.safetensors it was trained from: zenmode applies it over that file
only.

`--measure`: the twelve servers of the routing profiles are cut into four
folds; for each, the layers are tuned without those servers' examples (nor
their livemcptool twins') and the routing requests for them are ranked
among their profile's tools by the model alone, tuned and not (top-1).
measure_finetune.py scores zenmode's served reply the same way.

Needs torch, transformers and safetensors (requirements.txt).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import save_file
from transformers import AutoTokenizer, BertModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
import adapter  # noqa: E402
from tool_classifier import example_files  # noqa: E402

ROOT = adapter.ROOT
ROUTING = ROOT / "tests" / "data" / "routing"
DEFAULT_MODEL = Path.home() / ".local/share/zenmode/model/all-MiniLM-L6-v2"


class Encoder:
    """The model split in two: the frozen layers run once per text (their
    outputs kept in half floats), the top layers run on those outputs."""

    def __init__(self, model_dir: Path, top: int):
        self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
        self.model = BertModel.from_pretrained(str(model_dir), attn_implementation="eager")
        self.model.eval()
        self.cut = len(self.model.encoder.layer) - top

    @staticmethod
    def additive(mask: torch.Tensor) -> torch.Tensor:
        return (1.0 - mask[:, None, None, :].float()) * -1e9

    @staticmethod
    def run(layers, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        additive = Encoder.additive(mask)
        for layer in layers:
            out = layer(hidden, attention_mask=additive)
            hidden = out[0] if isinstance(out, tuple) else out
        return hidden

    @torch.no_grad()
    def frozen(self, texts: list[str], max_tokens: int) -> list[torch.Tensor]:
        """Each text's hidden states below the tuned layers."""
        out: list[torch.Tensor | None] = [None] * len(texts)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), 128):
            chunk = order[start:start + 128]
            enc = self.tokenizer([texts[i] for i in chunk], padding=True, truncation=True,
                                 max_length=max_tokens, return_tensors="pt")
            hidden = self.model.embeddings(input_ids=enc["input_ids"], token_type_ids=enc["token_type_ids"])
            hidden = self.run(self.model.encoder.layer[:self.cut], hidden, enc["attention_mask"])
            for row, i in enumerate(chunk):
                length = int(enc["attention_mask"][row].sum())
                out[i] = hidden[row, :length].to(torch.float16).clone()
        return out  # type: ignore[return-value]

    def top_layers(self):
        return copy.deepcopy(self.model.encoder.layer[self.cut:])

    @staticmethod
    def pooled(layers, states: list[torch.Tensor]) -> torch.Tensor:
        """Mean of the top layers' output over each text's tokens, normalised."""
        longest = max(s.shape[0] for s in states)
        hidden = torch.zeros(len(states), longest, states[0].shape[1])
        mask = torch.zeros(len(states), longest)
        for row, s in enumerate(states):
            hidden[row, :s.shape[0]] = s.float()
            mask[row, :s.shape[0]] = 1
        hidden = Encoder.run(layers, hidden, mask)
        mean = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return torch.nn.functional.normalize(mean, dim=-1)

    @staticmethod
    @torch.no_grad()
    def vectors(layers, states: list[torch.Tensor]) -> np.ndarray:
        return torch.cat([Encoder.pooled(layers, states[s:s + 256])
                          for s in range(0, len(states), 256)]).numpy()


def training_pairs(tools: dict, without: list[str]) -> list[tuple[str, tuple[str, str]]]:
    """(example, (server, tool)) for the shipped examples, but those of the
    servers `without` names and their livemcptool twins; each file belongs
    to the catalog server sharing most of its tool names."""
    by_server: dict[str, set[str]] = {}
    for server, name in tools:
        by_server.setdefault(server, set()).add(name)
    pairs = []
    for _, names, shipped in example_files(without):
        server = max(by_server, key=lambda s: len(by_server[s] & names))
        if len(by_server[server] & names) * 2 < len(names):
            continue
        for name, tool in shipped.items():
            if (server, name) in tools:
                pairs.extend((example, (server, name)) for example in tool["examples"])
    return pairs


def train(encoder: Encoder, example_states, example_tools: list[int], example_servers: list[str],
          tool_states, *, per_tool: int, lr: float, scale: float, keep: float, seed: int,
          anchor_states=None, anchor_keep: float = 0.0):
    """The top layers tuned for one pass over at most `per_tool` examples
    of each tool; `keep` weighs how far each text's vector may move from
    the published model's (1 - cosine), which holds the texts of other
    kinds of tool catalogs where they were. `anchor_states`: texts that
    are not about MCP tools (man pages, docstrings), 32 of which a batch
    also holds near where the published model puts them, at
    `anchor_keep`."""
    random.seed(seed)
    torch.manual_seed(seed)
    plain = encoder.model.encoder.layer[encoder.cut:]
    plain_requests = torch.from_numpy(Encoder.vectors(plain, example_states))
    plain_texts = torch.from_numpy(Encoder.vectors(plain, tool_states))
    plain_anchors = torch.from_numpy(Encoder.vectors(plain, anchor_states)) if anchor_states else None
    layers = encoder.top_layers()
    layers.eval()  # no dropout: the frozen layers ran without it
    optimiser = torch.optim.AdamW([p for layer in layers for p in layer.parameters()], lr=lr, weight_decay=0.01)
    by_tool: dict[int, list[int]] = {}
    for row, tool in enumerate(example_tools):
        by_tool.setdefault(tool, []).append(row)
    rows = []
    for tool in sorted(by_tool):
        listed = by_tool[tool]
        random.shuffle(listed)
        rows.extend(listed[:per_tool])
    by_server: dict[str, list[int]] = {}
    for row in rows:
        by_server.setdefault(example_servers[row], []).append(row)
    chunks = []
    for server in sorted(by_server):
        listed = by_server[server]
        random.shuffle(listed)
        chunks.extend(listed[s:s + 32] for s in range(0, len(listed), 32))
    random.shuffle(chunks)
    for start in range(0, len(chunks), 2):
        batch = [row for chunk in chunks[start:start + 2] for row in chunk]
        batch_tools = sorted({example_tools[row] for row in batch})
        column = {tool: at for at, tool in enumerate(batch_tools)}
        requests = Encoder.pooled(layers, [example_states[row] for row in batch])
        texts = Encoder.pooled(layers, [tool_states[tool] for tool in batch_tools])
        loss = torch.nn.functional.cross_entropy(
            scale * requests @ texts.T, torch.tensor([column[example_tools[row]] for row in batch]))
        if keep > 0:
            moved = (1 - (requests * plain_requests[batch]).sum(-1)).mean() \
                + (1 - (texts * plain_texts[batch_tools]).sum(-1)).mean()
            loss = loss + keep * moved
        if plain_anchors is not None and anchor_keep > 0:
            picked = random.sample(range(len(anchor_states)), min(32, len(anchor_states)))
            anchors = Encoder.pooled(layers, [anchor_states[i] for i in picked])
            loss = loss + anchor_keep * (1 - (anchors * plain_anchors[picked]).sum(-1)).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return layers


def anchor_texts(count: int, seed: int) -> list[str]:
    """`count` man-page and docstring texts of corpus.py's corpus (which
    never reads an evaluation set), sampled with `seed`."""
    from corpus import CACHE_DIR
    path = CACHE_DIR / "corpus.jsonl"
    if not path.exists():
        sys.exit(f"error: {path} not found: run corpus.py --no-teacher first")
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    texts = [row["text"] for row in rows if row["source"] in ("man", "docstrings")]
    return random.Random(seed).sample(texts, min(count, len(texts)))


def save_overlay(encoder: Encoder, layers, path: Path, model_dir: Path, settings: dict) -> None:
    tensors = {}
    for offset, layer in enumerate(layers):
        for name, value in layer.state_dict().items():
            value = value.detach().contiguous()
            # The matrices in half floats (the encoder packs them so anyway);
            # biases and norms as they are.
            tensors[f"encoder.layer.{encoder.cut + offset}.{name}"] = (
                value.to(torch.float16) if value.dim() == 2 else value.float())
    base = hashlib.sha256((model_dir / "model.safetensors").read_bytes()).hexdigest()
    save_file(tensors, str(path), metadata={"base_sha256": base, "settings": json.dumps(settings)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--out", help="write the overlay here")
    parser.add_argument("--without", nargs="*", default=[], help="catalog servers whose examples are left out")
    parser.add_argument("--measure", action="store_true", help="the split by server, model alone")
    parser.add_argument("--top", type=int, default=2, help="how many layers learn")
    parser.add_argument("--per-tool", type=int, default=10)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--scale", type=float, default=20.0)
    # 2, not 20: held less near the published model, the overlay lifted
    # servers it never saw by 7 points and the sets outside MCP too, once
    # zenmode's meaning floor followed it (decision 0031).
    parser.add_argument("--keep", type=float, default=2.0)
    parser.add_argument("--anchors", type=int, default=0,
                        help="man-page and docstring texts of corpus.py's corpus held near the published model")
    parser.add_argument("--anchor-keep", type=float, default=2.0)
    parser.add_argument("--folds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7, help="the batches' order and the start of training")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    settings = {"top": args.top, "per_tool": args.per_tool, "lr": args.lr, "scale": args.scale,
                "keep": args.keep}
    if args.anchors:
        settings.update(anchors=args.anchors, anchor_keep=args.anchor_keep)

    model_dir = Path(args.model)
    encoder = Encoder(model_dir, args.top)
    tools = adapter.load_tools()
    keys = sorted(tools)
    index = {key: at for at, key in enumerate(keys)}
    started = time.time()
    tool_states = encoder.frozen([tools[k] for k in keys], 128)

    if args.out:
        pairs = training_pairs(tools, args.without)
        states = encoder.frozen([p[0] for p in pairs], 64)
        anchor_states = encoder.frozen(anchor_texts(args.anchors, args.seed), 64) if args.anchors else None
        layers = train(encoder, states, [index[p[1]] for p in pairs], [p[1][0] for p in pairs], tool_states,
                       per_tool=args.per_tool, lr=args.lr, scale=args.scale, keep=args.keep, seed=args.seed,
                       anchor_states=anchor_states, anchor_keep=args.anchor_keep)
        save_overlay(encoder, layers, Path(args.out), model_dir, settings)
        print(f"{len(pairs)} examples, {time.time() - started:.0f} s: wrote {args.out}", file=sys.stderr)
    if not args.measure:
        return

    profiles = json.loads((ROUTING / "profiles.json").read_text())
    queries = []
    for path in sorted(ROUTING.glob("*.jsonl")):
        profile = path.stem.rsplit("_", 1)[0]
        for line in path.read_text().splitlines():
            label = json.loads(line)
            if label.get("expected"):
                queries.append((label["query"], profile, label["expected"].split("__", 1)[0],
                                [label["expected"], *label.get("acceptable", [])]))
    query_states = encoder.frozen([q[0] for q in queries], 64)
    members = {p: [i for i, k in enumerate(keys) if k[0] in listed] for p, listed in profiles.items()}
    names = [f"{k[0]}__{k[1]}" for k in keys]

    def right(tool_vectors, query_vectors, held) -> tuple[int, int]:
        hits = count = 0
        for at, (_, profile, server, accepted) in enumerate(queries):
            if server in held:
                member = members[profile]
                best = member[int(np.argmax(tool_vectors[member] @ query_vectors[at]))]
                hits += names[best] in accepted
                count += 1
        return hits, count

    plain = encoder.model.encoder.layer[encoder.cut:]
    plain_tools, plain_queries = Encoder.vectors(plain, tool_states), Encoder.vectors(plain, query_states)
    shared = sorted({s for listed in profiles.values() for s in listed})
    totals = [0, 0, 0]
    folds = []
    for held in (shared[at::args.folds] for at in range(args.folds)):
        pairs = training_pairs(tools, held)
        states = encoder.frozen([p[0] for p in pairs], 64)
        layers = train(encoder, states, [index[p[1]] for p in pairs], [p[1][0] for p in pairs], tool_states,
                       per_tool=args.per_tool, lr=args.lr, scale=args.scale, keep=args.keep, seed=args.seed)
        before, count = right(plain_tools, plain_queries, held)
        after, _ = right(Encoder.vectors(layers, tool_states), Encoder.vectors(layers, query_states), held)
        fold = {"held_out": held, "queries": count, "before": round(before / count, 3),
                "after": round(after / count, 3)}
        print(json.dumps(fold), file=sys.stderr, flush=True)
        folds.append(fold)
        totals = [totals[0] + count, totals[1] + before, totals[2] + after]
    print(json.dumps({"settings": settings, "folds": folds, "queries": totals[0],
                      "top1_before": round(totals[1] / totals[0], 3),
                      "top1_after": round(totals[2] / totals[0], 3)}, indent=1))


if __name__ == "__main__":
    main()
