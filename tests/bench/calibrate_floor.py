"""Calibrate the semantic floor of the local embedder (a plain script).

Usage: .venv/bin/python tests/bench/calibrate_floor.py [--eval /work/shared/eval]

With the real OnnxEmbedder, compares the cosine similarity of related pairs
(an eval query and one of its gold memories) with unrelated pairs (the query
and random memories of the same project that are not gold), on LoCoMo
(memory text = description) and SciFact (first 200 queries; text = title +
abstract). Prints percentiles of both and, for each candidate floor, the
share of related pairs kept, of queries that keep at least one gold memory,
and of unrelated pairs dropped.

The eval data carries non-commercial licences: it is read from its shared
directory at run time and never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall.embedders.onnx import OnnxEmbedder  # noqa: E402

FLOORS = (0.2, 0.25, 0.3, 0.35, 0.4)
PERCENTILES = (10, 25, 50, 75, 90)
UNRELATED_PER_QUERY = 5


@dataclass
class Pairs:
    """Cosines of related and unrelated pairs, and per query the best related."""

    related: list[float] = field(default_factory=list)
    unrelated: list[float] = field(default_factory=list)
    best_related: list[float] = field(default_factory=list)


def read_jsonl(path: Path) -> list[dict[str, object]]:
    """Rows of a JSON lines file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def measure(
    embedder: OnnxEmbedder,
    queries: list[dict[str, object]],
    texts: dict[str, str],
    projects: dict[str, str],
    seed: int = 13,
) -> Pairs:
    """Related and unrelated cosines for queries against memory texts."""
    rng = random.Random(seed)
    by_project: dict[str, list[str]] = {}
    for memory_id, project in projects.items():
        by_project.setdefault(project, []).append(memory_id)
    plans = []
    for query in queries:
        gold = [g for g in query["gold"] if g in texts]  # type: ignore[attr-defined]
        if not gold:
            continue
        pool = [m for m in by_project[str(query["project"])] if m not in set(gold)]
        plans.append((str(query["query"]), gold, rng.sample(pool, UNRELATED_PER_QUERY)))
    needed = sorted({m for _, gold, others in plans for m in [*gold, *others]})
    memory_vectors = dict(zip(needed, embedder.embed([texts[m] for m in needed]), strict=True))
    query_vectors = embedder.embed([q for q, _, _ in plans])
    pairs = Pairs()
    for (_, gold, others), q in zip(plans, query_vectors, strict=True):
        related = [float(q @ memory_vectors[g]) for g in gold]
        pairs.related += related
        pairs.best_related.append(max(related))
        pairs.unrelated += [float(q @ memory_vectors[m]) for m in others]
    return pairs


def locomo(embedder: OnnxEmbedder, root: Path) -> Pairs:
    """LoCoMo turns: memory text is the description."""
    memories = read_jsonl(root / "locomo" / "memories.jsonl")
    texts = {str(m["id"]): str(m["description"]) for m in memories}
    projects = {str(m["id"]): str(m["project"]) for m in memories}
    return measure(embedder, read_jsonl(root / "locomo" / "queries.jsonl"), texts, projects)


def scifact(embedder: OnnxEmbedder, root: Path, limit: int = 200) -> Pairs:
    """SciFact claims against abstracts (title + abstract), first `limit` queries."""
    memories = read_jsonl(root / "scifact" / "memories.jsonl")
    texts = {str(m["id"]): f"{m['name']}\n{m['description']}" for m in memories}
    projects = {str(m["id"]): str(m["project"]) for m in memories}
    queries = read_jsonl(root / "scifact" / "queries.jsonl")[:limit]
    return measure(embedder, queries, texts, projects)


def report(name: str, pairs: Pairs) -> None:
    """Print percentiles and the floor table for one dataset."""
    print(
        f"\n== {name}: {len(pairs.related)} related pairs over {len(pairs.best_related)} "
        f"queries, {len(pairs.unrelated)} unrelated pairs"
    )
    header = "  ".join(f"p{p:<5}" for p in PERCENTILES)
    print(f"{'':10}{header}")
    for label, values in (("related", pairs.related), ("unrelated", pairs.unrelated)):
        cells = "  ".join(f"{v:6.3f}" for v in np.percentile(values, PERCENTILES))
        print(f"{label:10}{cells}")
    print("floor   related kept   queries keeping a gold   unrelated dropped")
    related = np.asarray(pairs.related)
    best = np.asarray(pairs.best_related)
    unrelated = np.asarray(pairs.unrelated)
    for floor in FLOORS:
        print(
            f"{floor:5.2f}   {np.mean(related >= floor):12.1%}   "
            f"{np.mean(best >= floor):22.1%}   {np.mean(unrelated < floor):17.1%}"
        )


def main() -> None:
    """Embed, measure and print both datasets."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--eval", type=Path, default=Path("/work/shared/eval"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    embedder = OnnxEmbedder(threads=args.threads, cache_size=0)
    print(f"model {embedder.model}, max_tokens {embedder.max_tokens}")
    report("LoCoMo (turns)", locomo(embedder, args.eval))
    report("SciFact (first 200 claims)", scifact(embedder, args.eval))


if __name__ == "__main__":
    main()
