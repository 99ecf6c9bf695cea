"""Per-stage latency of Search (fast and hybrid) and Recall, from the engine's own timings.

A plain script (not collected by pytest), run against a data directory that
already holds memories, for example the bench corpus:

    RECALL_DATA_DIR=/tmp/s10k .venv/bin/python manage.py migrate -v0
    RECALL_DATA_DIR=/tmp/s10k .venv/bin/python manage.py import_memories corpus.jsonl
    RECALL_DATA_DIR=/tmp/s10k DJANGO_SETTINGS_MODULE=console.settings PYTHONPATH=. \\
        .venv/bin/python tests/bench/stage_latency.py

Prints p50/p95 ms per stage (embed, fts, vector, fusion, hydrate, links, pack, total).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

import django

django.setup()

from console import selectors  # noqa: E402
from console.models import Memory  # noqa: E402


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def table(name: str, runs: Sequence[Mapping[str, float]]) -> None:
    keys = sorted({k for r in runs for k in r})
    cells = [
        f"{k} {pct([r.get(k, 0.0) for r in runs], 0.5):.2f}/"
        f"{pct([r.get(k, 0.0) for r in runs], 0.95):.2f}"
        for k in keys
    ]
    print(f"{name}: " + "; ".join(cells))


def main() -> None:
    rng = random.Random(5)
    rows = Memory.objects.order_by("?").values_list("description", "project__slug")[:400]
    queries = [(" ".join(d.split()[: rng.randint(3, 7)]), p) for d, p in rows]
    for q, _ in queries[:20]:
        selectors.memory_search(query=q + " warm")
    fast = [selectors.memory_search(query=q, semantic=False).timings for q, _ in queries[:200]]
    table("search fast path", fast)
    hybrid = [selectors.memory_search(query=q + " x").timings for q, _ in queries[:200]]
    table("hybrid search", hybrid)
    recall = [
        selectors.memory_recall(query=q + " y", project=p, debug=True).debug["timings_ms"]
        for q, p in queries[200:400]
    ]
    table("recall", recall)


if __name__ == "__main__":
    main()
