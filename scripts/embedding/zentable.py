"""zenmode's static embedding replicated in numpy, and the table file format.

Mirrors src/select/signals/embedding.rs (sum of token rows, unit length; numbers
dropped), src/select/ (meaning_text) and src/select/text/words.rs
split_identifier, and reads and writes the ZENEMB01 table layout that
distill.py writes. Used by refine.py and eval_static.py.

The WordPiece tokenizer comes from the model directory (tokenizer.json);
call `use_model(DIR)` before `encode_ids`.
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from distill import write_table  # noqa: F401  (the table file's one writer, re-exported)

MAX_TEXT_TOKENS = 256

_tokenizer_path: Path | None = None
_tok = None


def use_model(model_dir: str | Path) -> None:
    """Sets the model directory whose tokenizer.json `tokenizer()` loads."""
    global _tokenizer_path, _tok
    path = Path(model_dir) / "tokenizer.json"
    if not path.exists():
        raise SystemExit(f"{path} not found: fill the folder with scripts/embedding/fetch_model.sh DIR")
    _tokenizer_path, _tok = path, None


def tokenizer() -> Tokenizer:
    global _tok
    if _tok is None:
        if _tokenizer_path is None:
            raise RuntimeError("zentable.use_model(DIR) was not called")
        _tok = Tokenizer.from_file(str(_tokenizer_path))
        _tok.no_truncation()
        _tok.no_padding()
    return _tok


def read_table(path: str | Path):
    """Returns (tokens, scales f32[count], int8[count, dims])."""
    data = open(path, "rb").read()
    assert data[:8] == b"ZENEMB01"
    count, dims = struct.unpack_from("<II", data, 8)
    pos = 16
    tokens = []
    for _ in range(count):
        n = data[pos]
        tokens.append(data[pos + 1 : pos + 1 + n].decode())
        pos += 1 + n
    scales = np.frombuffer(data, dtype="<f4", count=count, offset=pos).astype(np.float32)
    pos += 4 * count
    q = np.frombuffer(data, dtype=np.int8, count=count * dims, offset=pos).reshape(count, dims)
    assert pos + count * dims == len(data)
    return tokens, scales, q


def dequantize(path: str | Path):
    tokens, scales, q = read_table(path)
    return tokens, scales[:, None] * q.astype(np.float32)


def quantize_roundtrip(table: np.ndarray) -> np.ndarray:
    scales = np.abs(table).max(1) / 127.0
    scales[scales == 0] = 1.0
    q = np.clip(np.round(table / scales[:, None]), -127, 127)
    return (q * scales[:, None]).astype(np.float32)


def numeric_mask(tokens: list[str]) -> np.ndarray:
    out = np.zeros(len(tokens), dtype=bool)
    for i, t in enumerate(tokens):
        d = t[2:] if t.startswith("##") else t
        out[i] = bool(d) and all("0" <= c <= "9" for c in d)
    return out


def encode_ids(texts: list[str], numeric: np.ndarray, max_tokens: int = MAX_TEXT_TOKENS) -> list[np.ndarray]:
    """TokenTable::add_text's ids: WordPiece, numbers dropped, first max_tokens."""
    out = []
    for enc in tokenizer().encode_batch(list(texts), add_special_tokens=False):
        ids = np.array(enc.ids, dtype=np.int64)
        ids = ids[~numeric[ids]] if len(ids) else ids
        out.append(ids[:max_tokens])
    return out


def embed(table: np.ndarray, id_lists: list[np.ndarray], weights: np.ndarray | None = None) -> np.ndarray:
    """Sum of rows, unit length (all-zero when no token)."""
    out = np.zeros((len(id_lists), table.shape[1]), dtype=np.float32)
    for i, ids in enumerate(id_lists):
        if len(ids):
            rows = table[ids]
            if weights is not None:
                rows = rows * weights[ids][:, None]
            out[i] = rows.sum(0)
    norm = np.linalg.norm(out, axis=1, keepdims=True)
    ok = norm[:, 0] > np.finfo(np.float32).eps
    out[ok] /= norm[ok]
    out[~ok] = 0.0
    return out


def split_identifier(name: str) -> str:
    out = ""
    previous = None
    for c in name:
        if c in "_.-/":
            if out and not out.endswith(" "):
                out += " "
            previous = None
            continue
        if c.isupper() and previous is not None and (previous.islower() or ("0" <= previous <= "9")):
            out += " "
        out += c
        previous = c
    return out.rstrip()


def meaning_text(tool: dict) -> str:
    """mod.rs meaning_text for a foreign tool: its name in words, then its
    description (a foreign tool's summary comes from its description, so an
    empty description leaves nothing else)."""
    about = tool.get("description") or ""
    return f"{split_identifier(tool['name'])}: {about}"
