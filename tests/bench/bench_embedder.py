"""Benchmark of the ONNX embedder (a plain script, not a pytest module).

Usage: .venv/bin/python tests/bench/bench_embedder.py

For threads = 1 and 2: load time, single short query latency (p50/p95 over
200 calls, cache off) and batch throughput (1000 texts of about 40 words).
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall.embedders.onnx import OnnxEmbedder  # noqa: E402

VOCABULARY = (
    "deploy database cache index query server client request response queue worker "
    "migration schema replica shard timeout retry latency memory vector token session "
    "release rollback pipeline container postgres redis restart config secret backup "
    "the a of to and in on for with after before when never always must should"
)
WORDS = VOCABULARY.split()
QUERIES = [
    "how do I restart the database server",
    "why did the deploy fail on friday",
    "redis timeout settings",
    "who owns the backup job",
]


def texts(n: int, words: int, seed: int = 1) -> list[str]:
    """n pseudo-sentences of `words` words each."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) + f" #{i}" for i in range(n)]


def latency(embedder: OnnxEmbedder, calls: int = 200) -> tuple[float, float, float]:
    """p50 and p95 wall ms of single short queries, and mean CPU ms per query.

    CPU time shows the cost on a loaded machine, where wall time includes
    waiting for a core.
    """
    samples = []
    cpu = time.process_time()
    for n in range(calls):
        query = f"{QUERIES[n % len(QUERIES)]} {n}"
        start = time.perf_counter()
        embedder.embed([query])
        samples.append(time.perf_counter() - start)
    cpu_ms = (time.process_time() - cpu) / calls * 1000
    samples.sort()
    return statistics.median(samples) * 1000, samples[int(0.95 * (calls - 1))] * 1000, cpu_ms


def throughput(embedder: OnnxEmbedder, n: int = 1000) -> tuple[float, float]:
    """Texts per wall second and per CPU second, one call of n ~40-word texts."""
    corpus = texts(n, 40)
    start, cpu = time.perf_counter(), time.process_time()
    embedder.embed(corpus)
    return n / (time.perf_counter() - start), n / (time.process_time() - cpu)


def main() -> None:
    """Measure threads=1 and threads=2."""
    for threads in (1, 2):
        embedder = OnnxEmbedder(threads=threads, cache_size=0)
        start = time.perf_counter()
        embedder.load()
        loaded = (time.perf_counter() - start) * 1000
        embedder.embed(["warm up"])
        p50, p95, cpu_ms = latency(embedder)
        rate, cpu_rate = throughput(embedder)
        print(
            f"threads={threads}: load {loaded:.0f} ms; single query p50 {p50:.2f} ms, "
            f"p95 {p95:.2f} ms, {cpu_ms:.2f} CPU ms; batch {rate:,.0f} texts/s "
            f"({cpu_rate:,.0f} per CPU second), 1000 x ~40 words"
        )


if __name__ == "__main__":
    main()
