"""Distils all-MiniLM-L6-v2 into zenmode's static token table.

    python distill.py [--dims 256] [--sif 3e-6] [--out PATH]

Steps (docs/decisions/0008-static-embedding-table.md explains the choices
and the figures):
1. Every WordPiece token alone ("[CLS] token [SEP]") goes through the model;
   its mean-pooled output is the token's vector.
2. PCA keeps the first `--dims` components (after centering).
3. Rows are scaled to unit length, then frequent tokens are made to count
   less: weight sif / (sif + p), p from the token's rank in BERT's
   frequency-ordered vocabulary (Zipf's law).
4. int8 with one f32 scale per token, written in the layout
   src/select/signals/token_table.rs parses.

Also writes tests/data/wordpiece_cases.jsonl: texts and the ids the
reference tokenizer gives them, which the Rust tokenizer must reproduce.
"""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import numpy as np

from minilm import CACHE, MiniLM

ROOT = Path(__file__).resolve().parents[2]
FIRST_WORD_ID = 1996  # BERT's vocabulary: specials and single characters first, then words by frequency.


def token_outputs(model: MiniLM) -> np.ndarray:
    cached = CACHE / "token_outputs.npy"
    if cached.exists():
        return np.load(cached)
    vocab = model.vocab()
    count = len(vocab)
    ids = np.zeros((count, 3), dtype=np.int64)
    ids[:, 0], ids[:, 1], ids[:, 2] = vocab["[CLS]"], np.arange(count), vocab["[SEP]"]
    mask = np.ones_like(ids)
    parts = [model.pool(model.forward_ids(ids[s : s + 2048], mask[s : s + 2048]), mask[s : s + 2048], normalise=False) for s in range(0, count, 2048)]
    outputs = np.concatenate(parts).astype(np.float32)
    np.save(cached, outputs)
    return outputs


def zipf_weights(count: int, sif: float) -> np.ndarray:
    rank = np.maximum(np.arange(count) - FIRST_WORD_ID + 1.0, 1.0)
    p = 1.0 / rank
    p /= p.sum()
    return sif / (sif + p)


def build_table(model: MiniLM, dims: int, sif: float) -> np.ndarray:
    outputs = token_outputs(model)
    centered = outputs - outputs.mean(0)
    _, _, vt = np.linalg.svd(centered, full_matrices=False)
    table = centered @ vt[:dims].T
    table /= np.maximum(np.linalg.norm(table, axis=1, keepdims=True), 1e-9)
    return (table * zipf_weights(len(table), sif)[:, None]).astype(np.float32)


def write_table(path: Path, tokens: list[str], table: np.ndarray) -> None:
    scales = np.abs(table).max(1) / 127.0
    scales[scales == 0] = 1.0
    quantized = np.clip(np.round(table / scales[:, None]), -127, 127).astype(np.int8)
    with path.open("wb") as out:
        out.write(b"ZENEMB01")
        out.write(struct.pack("<II", len(tokens), table.shape[1]))
        for token in tokens:
            raw = token.encode()
            out.write(struct.pack("<B", len(raw)) + raw)
        out.write(scales.astype("<f4").tobytes())
        out.write(quantized.tobytes())


def write_tokenizer_cases(model: MiniLM, path: Path) -> None:
    texts = [
        "Create a pull request from feature/login into main",
        "What's the weather like in São Paulo tomorrow?",
        "明天北京的天气怎么样",
        "에어컨 켜고 공기청정기 꺼",
        "Cari hotel murah di Jakarta untuk dua malam",
        "listModels --verbose; add_numbers(3,4) => 7!!",
        "Ünïcödé ﬁ ligatures, em—dashes and “quotes”",
        "supercalifragilisticexpialidociousness antidisestablishmentarianism",
        "tab\tnew\nline\u00a0nbsp\u200bzero-width",
        "🦀 crabs, 😀 and ①②③",
    ]
    with path.open("w") as out:
        for text in texts:
            ids = model.tokenizer.encode(text, add_special_tokens=False).ids
            out.write(json.dumps({"text": text, "ids": ids}, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--sif", type=float, default=3e-6)
    parser.add_argument("--out", type=Path, default=ROOT / "data" / "embedding" / "minilm_l6_static.bin")
    args = parser.parse_args()
    model = MiniLM()
    vocab = model.vocab()
    tokens = [token for token, _ in sorted(vocab.items(), key=lambda item: item[1])]
    table = build_table(model, args.dims, args.sif)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_table(args.out, tokens, table)
    write_tokenizer_cases(model, ROOT / "tests" / "data" / "wordpiece_cases.jsonl")
    print(f"{len(tokens)} tokens x {args.dims} dims -> {args.out} ({args.out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
