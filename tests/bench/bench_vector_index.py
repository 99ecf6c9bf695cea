"""Benchmark of the LanceDB vector plane (a plain script, not a pytest module).

Usage: .venv/bin/python tests/bench/bench_vector_index.py [--sizes 10000 100000]

For each size: ingest random unit vectors (rows/s), then search with a
project + active prefilter at limit 24 and 60 (p50/p95 ms) with an exact
scan, build the IVF_HNSW_SQ index, and search again, reporting the ANN
results' recall against the exact ones and whether a row upserted after the
index was built is found at once. Then the in-process copy the server
searches (recall/indexes/hot_vectors.py): its load time and memory, its
searches and recall against the exact scan, and the time it takes to pick
up one row written through another handle.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from recall.indexes.hot_vectors import HotVectorIndex  # noqa: E402
from recall.indexes.lance_index import LanceIndex  # noqa: E402
from recall.types import Filter, VectorRow  # noqa: E402

DIMS = 384
PROJECTS = 20
BATCH = 2000
QUERIES = 200


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    """n random unit vectors."""
    v = rng.standard_normal((n, DIMS)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def rows(vectors: np.ndarray, start: int, rng: np.random.Generator) -> list[VectorRow]:
    """VectorRows over 20 projects (5% global, 10% inactive)."""
    out = []
    for offset, vector in enumerate(vectors):
        n = start + offset
        project = None if rng.random() < 0.05 else f"p{n % PROJECTS:02d}"
        out.append(
            VectorRow(
                id=f"m{n:08d}",
                item="memory",
                project=project,
                active=rng.random() > 0.1,
                kind="fact",
                vector=tuple(vector.tolist()),
                model="bench",
            )
        )
    return out


def percentiles(samples: list[float]) -> str:
    """p50 / p95 in ms."""
    ordered = sorted(samples)
    p95 = ordered[int(0.95 * (len(ordered) - 1))]
    return f"p50 {statistics.median(ordered) * 1000:6.2f} ms  p95 {p95 * 1000:6.2f} ms"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def searches(
    index: LanceIndex | HotVectorIndex, queries: np.ndarray, limit: int
) -> tuple[list[float], list[list[str]]]:
    """Timed searches with a one-project + global + active prefilter."""
    times, results = [], []
    for n, query in enumerate(queries):
        where = Filter(projects=(f"p{n % PROJECTS:02d}",), include_global=True)
        start = time.perf_counter()
        found = index.search(query, where=where, limit=limit)
        times.append(time.perf_counter() - start)
        results.append([c.id for c in found])
    return times, results


def recall(approx: list[list[str]], exact: list[list[str]]) -> float:
    """Mean overlap of the ANN top-k with the exact top-k."""
    shares = [len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approx, exact, strict=True)]
    return statistics.mean(shares)


def run(size: int, rng: np.random.Generator, directory: Path) -> None:
    """Benchmark one table size."""
    index = LanceIndex(directory / f"v{size}", dims=DIMS, index_threshold=10**9)
    data = unit(rng, size)
    start = time.perf_counter()
    for offset in range(0, size, BATCH):
        index.upsert(rows(data[offset : offset + BATCH], offset, rng))
    elapsed = time.perf_counter() - start
    print(f"\n== {size} rows: ingest {size / elapsed:,.0f} rows/s (batches of {BATCH})")
    index.optimize()
    # Queries near stored rows, so each has true neighbours to find.
    # Query n's prefilter keeps project p{n % 20}; row i belongs to p{i % 20}.
    slots = rng.integers(0, size // PROJECTS, QUERIES) * PROJECTS + np.arange(QUERIES) % PROJECTS
    picks = data[slots]
    queries = picks + 0.5 * unit(rng, QUERIES) / np.sqrt(DIMS) * 4
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    exact = {}
    for limit in (10, 24, 60):
        times, exact[limit] = searches(index, queries, limit)
        print(f"exact scan   limit {limit}: {percentiles(times)}")
    hot_copy(index, queries, exact, directory / f"v{size}", rng, size)
    start = time.perf_counter()
    index.build_index()
    print(f"IVF_HNSW_SQ + bitmap indexes built in {time.perf_counter() - start:.1f} s")
    for limit in (24, 60):
        times, approx = searches(index, queries, limit)
        print(
            f"ANN index    limit {limit}: {percentiles(times)}  "
            f"recall@{limit} {recall(approx, exact[limit]):.3f}"
        )
    fresh = unit(rng, 1)
    index.upsert(rows(fresh, size, rng))
    found = index.search(fresh[0], where=Filter(projects=None, active_only=False), limit=1)
    print(f"row upserted after the index is found at once: {found[0].id == f'm{size:08d}'}")
    times, _ = searches(index, queries, 24)
    print(f"ANN + 1 unindexed row limit 24: {percentiles(times)}")


def hot_copy(
    index: LanceIndex,
    queries: np.ndarray,
    exact: dict[int, list[list[str]]],
    path: Path,
    rng: np.random.Generator,
    size: int,
) -> None:
    """The in-process copy over the same table: as configured, then HNSW everywhere."""
    for label, options in (("in-process", {}), ("in-process, HNSW", {"exact_below": 0})):
        before = rss_mb()
        start = time.perf_counter()
        plane = LanceIndex(path, dims=DIMS)
        hot = HotVectorIndex(plane, poll_seconds=0, warm=True, **options)  # type: ignore[arg-type]
        print(
            f"{label}: copy loaded in {time.perf_counter() - start:.1f} s, "
            f"+{rss_mb() - before:.0f} MB RSS"
        )
        for limit in (10, 24, 60):
            times, approx = searches(hot, queries, limit)
            print(
                f"{label:<18} limit {limit}: {percentiles(times)}  "
                f"recall@{limit} {recall(approx, exact[limit]):.3f}"
            )
        del hot, plane
    hot = HotVectorIndex(LanceIndex(path, dims=DIMS), poll_seconds=0, warm=True)
    index.upsert(rows(unit(rng, 1), size + 10**6, rng))  # another handle's write
    start = time.perf_counter()
    changed = hot.refresh()
    print(f"picking up {changed} row written elsewhere: {time.perf_counter() - start:.3f} s")


def main() -> None:
    """Parse arguments and run each size."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            run(size, rng, Path(tmp))


if __name__ == "__main__":
    main()
