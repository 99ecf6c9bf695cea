"""Calibrate the duplicate hint's words path (`recall.dedup.restates`; a plain script).

Usage: .venv/bin/python tests/bench/calibrate_restates.py [--eval /work/shared/eval]

Below the cosine threshold, a candidate from `WORDS_FLOOR` is still hinted when
it holds `SAME_SAYING` of the new memory's words (a restatement under a new
name: the vectors embed names). Every such hint on LoCoMo is false, as in
`calibrate_dedup.py`: each observation against the other observations of its
conversation, each turn against the earlier turns of its conversation. For each
(share, least words) it prints the share of rows the words path adds a false
hint to (the rows the cosine threshold already hints are not counted twice).
The eval data is read from its shared directory, never copied.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall import dedup  # noqa: E402
from recall.embedders.onnx import OnnxEmbedder  # noqa: E402
from recall.types import MEMORY, Record  # noqa: E402

SETTINGS = ((0.8, 6), (0.9, 6), (0.9, 8), (1.0, 6))  # (SAME_SAYING, MIN_SAYING)
THRESHOLD = 0.93  # the default model's durable threshold (calibrate_dedup.py)


def read(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def record(row: dict[str, str]) -> Record:
    text = row["description"]
    return Record(
        id=row["id"], item=MEMORY, project=row["project"], kind="fact", name=row["name"],
        title=row["name"], description=text[:150], body=text,
    )  # fmt: skip


def false_hints(
    rows: list[dict[str, str]], vectors: np.ndarray, *, earlier: bool
) -> tuple[float, float]:
    """(share hinted by the cosine threshold, share the words path adds)."""
    by_cosine = by_words = 0
    said = [dedup.said_words(r["description"][:150], r["description"]) for r in rows]
    for i, row in enumerate(rows):
        others = [
            j for j, other in enumerate(rows[: i if earlier else len(rows)])
            if other["project"] == row["project"] and j != i
        ]  # fmt: skip
        if not others:
            continue
        cosines = vectors[others] @ vectors[i]
        if float(cosines.max()) >= THRESHOLD:
            by_cosine += 1
            continue
        close = [j for j, c in zip(others, cosines, strict=True) if c >= dedup.WORDS_FLOOR]
        by_words += any(dedup.restates(said[i], record(rows[j])) for j in close)
    return by_cosine / len(rows), by_words / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=Path("/work/shared/eval"))
    args = parser.parse_args()
    embedder = OnnxEmbedder()
    for name, earlier in (("memories_observation.jsonl", False), ("memories.jsonl", True)):
        rows = read(args.eval / "locomo" / name)
        texts = [
            dedup.probe(
                r["project"], r["name"], r["description"][:150], r["description"]
            ).embedding_text()
            for r in rows
        ]
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for same, least in SETTINGS:
            dedup.SAME_SAYING, dedup.MIN_SAYING = same, least
            cosine, words = false_hints(rows, vectors, earlier=earlier)
            print(f"{name}: holding {same:.0%}, {least}+ words: cosine {cosine:.2%}, "
                  f"words path adds {words:.2%}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
