"""What the graph channel adds to a Recall at 100k memories and 500k edges.

    .venv/bin/python tests/bench/graph_speed.py [--memories 100000] [--edges 500000]
        [--runs 300] [--data-dir DIR] [--keep]

Builds a fresh SQLite database (migrated) with `--memories` memories in 10
projects (5% archived, 2% superseded) and `--edges` random typed edges of
weight 0.1..1 inside each project, then times what a Recall runs between
`hops: 0` and `hops: 3`: the graph channel's walk (`recall.graph.traverse`
through `console.store.DjangoStore.edges`, one indexed read per hop) from 8
seeds (graph_seeds) plus the second fusion with the fts and semantic lists
(50 candidates each) and the hydration of the new ids (`recall.expansion.refuse`).
`hops: 0` runs neither, so the difference between the two Recalls is this
figure. Prints p50 / p95 ms per variant; exits 1 when hops 3 costs more than
10 ms at p95.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setup(data_dir: Path) -> None:
    os.environ["RECALL_DATA_DIR"] = str(data_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _build(memories: int, edges: int, rng: random.Random) -> dict[str, list[str]]:
    from django.db import connection, transaction
    from django.utils import timezone

    from console.models import Edge, Memory, Project, new_id

    projects = [Project.objects.create(slug=f"p{i}", name=f"p{i}") for i in range(10)]
    now = timezone.now()
    ids: dict[str, list[str]] = {p.slug: [] for p in projects}
    rows = []
    for n in range(memories):
        project = projects[n % 10]
        pk = new_id()
        ids[project.slug].append(pk)
        archived = rng.random() < 0.05
        rows.append(Memory(id=pk, project=project, name=f"m-{n}", description=f"memory {n}",
                           invalid_at=now if archived else None))  # fmt: skip
    with transaction.atomic():
        Memory.objects.bulk_create(rows, batch_size=5000)
    superseded = [(ids[p][i + 1], ids[p][i]) for p in ids for i in range(0, len(ids[p]) - 1, 50)]
    with transaction.atomic(), connection.cursor() as cur:
        cur.executemany(
            "UPDATE console_memory SET superseded_by_id = %s, invalid_at = %s WHERE id = %s",
            [(new, now, old) for new, old in superseded],
        )
    rels = ("related", "caused", "depends-on", "links")
    made: set[tuple[str, str, str]] = set()
    batch: list[Edge] = []
    slugs = list(ids)
    while len(made) < edges:
        members = ids[rng.choice(slugs)]
        src, dst, rel = rng.choice(members), rng.choice(members), rng.choice(rels)
        if src == dst or (src, dst, rel) in made:
            continue
        made.add((src, dst, rel))
        origin = "wikilink" if rel == "links" else "explicit"
        weight = 1.0 if rel == "links" else round(rng.uniform(0.1, 1.0), 2)
        batch.append(Edge(src_id=src, dst_id=dst, rel=rel, origin=origin, weight=weight))
        if len(batch) >= 20_000:
            Edge.objects.bulk_create(batch, batch_size=5000)
            batch = []
    Edge.objects.bulk_create(batch, batch_size=5000)
    return ids


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--edges", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="graph-speed-"))
    rng = random.Random(13)
    try:
        _setup(data_dir)
        from console.models import Memory

        start = time.perf_counter()
        if Memory.objects.exists():  # a kept --data-dir: measure again without rebuilding
            ids = {}
            for pk, slug in Memory.objects.values_list("id", "project__slug").iterator():
                ids.setdefault(slug, []).append(pk)
        else:
            ids = _build(args.memories, args.edges, rng)
        print(f"{args.memories} memories, {args.edges} edges "
              f"ready in {time.perf_counter() - start:.1f} s ({data_dir})")  # fmt: skip
        return _measure(ids, args.runs, rng)
    finally:
        if not args.keep and args.data_dir is None:  # a given --data-dir is kept
            shutil.rmtree(data_dir, ignore_errors=True)


def _measure(ids: dict[str, list[str]], runs: int, rng: random.Random) -> int:
    from console.store import DjangoStore
    from recall.expansion import refuse
    from recall.graph import traverse
    from recall.results import Provenance
    from recall.scoring import Scored
    from recall.types import Candidate, Filter

    store = DjangoStore()
    variants = {"hops 1": (1, False), "hops 2": (2, False), "hops 3": (3, False),
                "hops 3 reverse": (3, True)}  # fmt: skip
    timings: dict[str, list[float]] = {name: [] for name in variants}
    reached: dict[str, list[int]] = {name: [] for name in variants}
    for i in range(runs + 20):
        slug = rng.choice(list(ids))
        pool = rng.sample(ids[slug], 80)
        where = Filter(projects=(slug,), include_global=True)
        lists = {
            "fts": [Candidate(m, n, 10.0 - n / 10) for n, m in enumerate(pool[:50], 1)],
            "semantic": [Candidate(m, n, 0.9 - n / 100) for n, m in enumerate(pool[30:80], 1)],
        }
        records = store.hydrate(pool)
        scored = [Scored(records[m], 1 / n, (Provenance("fts", n, 1.0),), "fts")
                  for n, m in enumerate(pool, 1) if m in records]  # fmt: skip
        seeds = [(s.record.id, s.score) for s in scored if s.record.active][:8]
        for name, (hops, reverse) in variants.items():
            start = time.perf_counter()
            found = traverse(store, seeds, where=where, hops=hops, reverse=reverse, cap=10)
            graph = [Candidate(r.id, n, r.score, path=r.path) for n, r in enumerate(found, 1)]
            refuse(lists, {"graph": graph}, scored, store=store, method="zscore",
                   weights={"fts": 0.6, "semantic": 0.4, "graph": 0.3}, k=60)  # fmt: skip
            if i >= 20:  # warm-up done
                timings[name].append((time.perf_counter() - start) * 1000)
                reached[name].append(len(found))
    print(f"{'variant':<16} {'p50 ms':>8} {'p95 ms':>8} {'found':>6}")
    for name, values in timings.items():
        found_mean = sum(reached[name]) / len(reached[name])
        print(f"{name:<16} {_pct(values, 0.5):>8.2f} {_pct(values, 0.95):>8.2f} {found_mean:>6.1f}")
    print("hops 0: no walk, no second fusion (0 ms added)")
    return 0 if _pct(timings["hops 3"], 0.95) <= 10.0 else 1


if __name__ == "__main__":
    sys.exit(main())
