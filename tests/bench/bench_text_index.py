"""Benchmark of the full-text plane (a plain script, not a pytest module).

Usage: .venv/bin/python tests/bench/bench_text_index.py [--size 20000]
       [--backends tantivy whoosh] [--queries 200]

Generates a synthetic corpus (a title and a 60-word body drawn from a fixed
vocabulary with Zipf-like frequencies, 5 projects, 10% inactive), indexes it
with each backend (docs/s), then reports p50/p95/p99 latency in ms for: a
one-word query with a project + active filter; 1- to 4-letter prefix queries
(prefix=True) with snippets; a 3-word query with snippets.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall.indexes.tantivy_index import TantivyIndex  # noqa: E402
from recall.indexes.whoosh_index import WhooshIndex  # noqa: E402
from recall.types import Doc, Filter  # noqa: E402

BACKENDS: dict[str, Callable[[Path], Any]] = {"tantivy": TantivyIndex, "whoosh": WhooshIndex}
PROJECTS = [f"proj{n}" for n in range(5)]
VOCABULARY = 4000
BODY_WORDS = 60
BATCH = 2000
LIMIT = 20
SEED = 7

_ONSETS = ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "ch", "st"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
_CODAS = ["", "n", "r", "s", "t", "l", "ck", "nd"]
_REAL = [
    "deploy",
    "database",
    "cache",
    "index",
    "query",
    "server",
    "client",
    "request",
    "response",
    "queue",
    "worker",
    "migration",
    "schema",
    "replica",
    "shard",
    "timeout",
    "retry",
    "latency",
    "memory",
    "vector",
    "token",
    "session",
    "release",
    "rollback",
    "pipeline",
    "container",
    "kubernetes",
    "postgres",
    "redis",
    "kafka",
    "chroma",
    "tantivy",
]


def vocabulary(rng: random.Random) -> list[str]:
    """A fixed list of distinct words: real software words, then made-up ones."""
    words = list(_REAL)
    seen = set(words)
    while len(words) < VOCABULARY:
        n = rng.choice((2, 2, 3))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                       for _ in range(n))  # fmt: skip
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


def corpus(size: int, words: list[str], rng: random.Random) -> list[Doc]:
    """`size` docs whose words follow a Zipf-like law (weight 1 / rank)."""
    weights = [1 / (rank + 1) for rank in range(len(words))]
    docs = []
    for n in range(size):
        drawn = rng.choices(words, weights=weights, k=BODY_WORDS + 5)
        docs.append(
            Doc(
                id=f"doc{n:07d}",
                item="memory" if n % 4 else "note",
                project=PROJECTS[n % len(PROJECTS)],
                active=rng.random() >= 0.10,
                kind="fact",
                name=f"{drawn[0]}-{drawn[1]}-{n}",
                title=" ".join(drawn[:5]).capitalize(),
                description="",
                body=" ".join(drawn[5:]) + ".",
            )
        )
    return docs


def percentiles(samples_ms: list[float]) -> str:
    cuts = statistics.quantiles(samples_ms, n=100, method="inclusive")
    return f"p50 {cuts[49]:7.3f}  p95 {cuts[94]:7.3f}  p99 {cuts[98]:7.3f} ms"


def timed(run: Callable[[str], object], texts: list[str]) -> list[float]:
    for text in texts[:5]:
        run(text)  # warm caches
    out = []
    for text in texts:
        started = time.perf_counter()
        run(text)
        out.append((time.perf_counter() - started) * 1000)
    return out


def bench(name: str, docs: list[Doc], words: list[str], queries: int) -> None:
    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory() as tmp:
        index = BACKENDS[name](Path(tmp) / "fts")
        started = time.perf_counter()
        for i in range(0, len(docs), BATCH):
            index.upsert(docs[i : i + BATCH])
        elapsed = time.perf_counter() - started
        rate = len(docs) / elapsed
        print(f"\n{name}: ingest {len(docs)} docs in {elapsed:.1f}s = {rate:,.0f} docs/s")

        scoped = Filter(projects=(PROJECTS[0],), include_global=False, active_only=True)
        mid = words[20:400]
        one = [rng.choice(mid) for _ in range(queries)]
        three = [" ".join(rng.sample(mid, 3)) for _ in range(queries)]

        def plain(text: str) -> object:
            return index.search(text, where=scoped, limit=LIMIT)

        def palette(text: str) -> object:
            return index.search(text, where=Filter(), limit=LIMIT, snippets=True, prefix=True)

        def snippets(text: str) -> object:
            return index.search(text, where=Filter(), limit=LIMIT, snippets=True)

        print(f"  1 word, project+active filter   {percentiles(timed(plain, one))}")
        for letters in (1, 2, 3, 4):
            prefixes = [rng.choice(words)[:letters] for _ in range(queries)]
            label = f"{letters}-letter prefix + snippets"
            print(f"  {label:<32} {percentiles(timed(palette, prefixes))}")
        print(f"  3 words + snippets               {percentiles(timed(snippets, three))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    args = parser.parse_args()
    rng = random.Random(SEED)
    words = vocabulary(rng)
    docs = corpus(args.size, words, rng)
    print(f"corpus: {len(docs)} docs, vocabulary {len(words)}, limit {LIMIT}")
    for name in args.backends:
        bench(name, docs, words, args.queries)


if __name__ == "__main__":
    main()
