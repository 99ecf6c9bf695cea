"""Calibrate the duplicate hint per embedding model and kind group (a plain script).

Usage: .venv/bin/python tests/bench/calibrate_dedup.py [--eval /work/shared/eval]

A hint is right when the memory being written restates one already stored,
wrong when it points at a different thing. On ../shared/eval:
- false hints, episodic: each LoCoMo turn written in order against the
  earlier turns of its conversation (what the hint compares when an agent
  writes a conversation turn by turn): the best cosine is a false hint when
  it clears the threshold, since a turn is a new utterance;
- false hints, durable: each LoCoMo observation (a fact about a speaker)
  against the other observations of its conversation;
- true near-duplicates, constructed: each observation and SciFact title +
  abstract rewritten as a writer restating it would (casing and punctuation
  changed, a lead-in added, 15% of the words dropped, sentences reordered,
  or cut to its first half), against its original.
For each model (the quantized default and the packaged file) it prints, per
threshold, the share of false hints and of duplicates caught, and the
threshold that catches the most duplicates while keeping false hints under
the target rate. Embedding texts are built as `recall.dedup` builds them.
The eval data is read from its shared directory, never copied.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall.embedders.onnx import OnnxEmbedder  # noqa: E402
from recall.types import MEMORY, Doc  # noqa: E402

THRESHOLDS = tuple(round(0.80 + 0.01 * i, 2) for i in range(20))
FALSE_HINT_TARGET = 0.01


def read(path: Path) -> list[dict[str, object]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def text(name: str, description: str) -> str:
    doc = Doc(id="", item=MEMORY, project=None, active=True, kind="", name=name, title=name,
              description=description[:150], body=description)  # fmt: skip
    return doc.embedding_text()


def restate(original: str, rng: random.Random) -> list[str]:
    """How a writer restates a fact: five constructed near-duplicates."""
    words = original.split()
    kept = [w for w in words if rng.random() > 0.15] or words
    sentences = [s for s in original.replace("? ", ". ").split(". ") if s]
    reordered = ". ".join(reversed(sentences)) if len(sentences) > 1 else original
    return [
        original.lower().replace(",", "").replace(".", ""),
        f"Note to self: {original}",
        " ".join(kept),
        reordered,
        " ".join(words[: max(4, len(words) // 2)]),
    ]


def best_earlier(vectors: np.ndarray, groups: list[str]) -> list[float]:
    """For each row, its best cosine to an earlier row of the same group."""
    out: list[float] = []
    by_group: dict[str, list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        earlier = by_group[group]
        out.append(float(np.max(vectors[earlier] @ vectors[i])) if earlier else -1.0)
        earlier.append(i)
    return out


def best_other(vectors: np.ndarray, groups: list[str]) -> list[float]:
    """For each row, its best cosine to any other row of the same group."""
    out: list[float] = []
    members: dict[str, list[int]] = defaultdict(list)
    for i, group in enumerate(groups):
        members[group].append(i)
    for i, group in enumerate(groups):
        others = [j for j in members[group] if j != i]
        out.append(float(np.max(vectors[others] @ vectors[i])) if others else -1.0)
    return out


def share(values: list[float], threshold: float) -> float:
    return sum(v >= threshold for v in values) / max(len(values), 1)


def calibrate(embedder: OnnxEmbedder, eval_dir: Path, rng: random.Random) -> dict[str, object]:
    turns = read(eval_dir / "locomo" / "memories.jsonl")
    observations = read(eval_dir / "locomo" / "memories_observation.jsonl")
    scifact = rng.sample(read(eval_dir / "scifact" / "memories.jsonl"), 300)

    def embed(texts: list[str]) -> np.ndarray:
        return np.vstack([embedder.embed(texts[i : i + 64]) for i in range(0, len(texts), 64)])

    turn_vectors = embed([text(str(r["name"]), str(r["description"])) for r in turns])
    episodic_false = best_earlier(turn_vectors, [str(r["project"]) for r in turns])
    obs_texts = [text(str(r["name"]), str(r["description"])) for r in observations]
    obs_vectors = embed(obs_texts)
    durable_false = best_other(obs_vectors, [str(r["project"]) for r in observations])
    originals = [(str(r["name"]), str(r["description"])) for r in observations[:300]]
    originals += [(str(r["name"]), str(r["description"])) for r in scifact]
    base = embed([text(n, d) for n, d in originals])
    dupes: list[float] = []
    for (name, description), vector in zip(originals, base, strict=True):
        variants = embed([text(name, v) for v in restate(description, rng)])
        dupes += [float(v @ vector) for v in variants]
    table = {
        t: {
            "false_episodic": share(episodic_false, t),
            "false_durable": share(durable_false, t),
            "caught": share(dupes, t),
        }
        for t in THRESHOLDS
    }

    def pick(key: str) -> float:
        ok = [t for t in THRESHOLDS if table[t][key] <= FALSE_HINT_TARGET]
        return min(ok) if ok else THRESHOLDS[-1]

    return {"table": table, "durable": pick("false_durable"), "episodic": pick("false_episodic")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eval", type=Path, default=Path("/work/shared/eval"))
    args = parser.parse_args()
    for quantized in (True, False):
        embedder = OnnxEmbedder(threads=2, quantized=quantized)
        found = calibrate(embedder, args.eval, random.Random(7))
        table = found["table"]
        assert isinstance(table, dict)
        print(f"\n{embedder.model}")
        print("threshold  false hints: episodic  durable   duplicates caught")
        for t, row in table.items():
            print(
                f"{t:9.2f}  {row['false_episodic']:20.3f}  {row['false_durable']:7.3f}"
                f"   {row['caught']:.3f}"
            )
        print(
            f"chosen (false hints <= {FALSE_HINT_TARGET:.0%}): durable {found['durable']:.2f}, "
            f"episodic {found['episodic']:.2f}"
        )


if __name__ == "__main__":
    main()
