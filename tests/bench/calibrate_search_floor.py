"""Calibrate the Search page's floor for meaning-only hits (a plain script).

Usage (a data directory holding the LoCoMo turns, e.g. after
`manage.py import_memories ../shared/eval/locomo/memories.jsonl`):

    RECALL_DATA_DIR=/tmp/locomo .venv/bin/python tests/bench/calibrate_search_floor.py

The engine's `semantic_floor` (tests/bench/calibrate_floor.py) is set to keep
a gold memory for nearly every query, counting every gold pair. The Search
page needs something else: a hit that shares no word with the query (found
by meaning only) must be more like the query than what an unrelated query
finds. This runs the real Search (both channels, each query scoped to its
conversation) for the LoCoMo dev queries and for nonsense queries, and
prints, per candidate floor, the share of meaning-only gold hits kept, the
meaning-only hits that are not gold, and the nonsense queries that still
show a meaning-only hit.
"""

from __future__ import annotations

import json
import os
import random
import string
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django  # noqa: E402

django.setup()

from console import selectors  # noqa: E402
from console.models import Memory  # noqa: E402

FLOORS = (0.25, 0.3, 0.35, 0.4, 0.45, 0.5)
EVAL = Path(os.environ.get("RECALL_EVAL_DIR", "/work/shared/eval"))


def nonsense(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        words = rng.randint(1, 3)
        out.append(
            " ".join(
                "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 7)))
                for _ in range(words)
            )
        )
    return out


def main() -> None:
    external = dict(Memory.objects.exclude(external_id="").values_list("id", "external_id"))
    rows = [json.loads(line) for line in (EVAL / "locomo" / "queries.jsonl").open()]
    queries = [r for r in rows if r.get("split", "dev") == "dev" and r["gold"]]
    gold_sims: list[float] = []
    other_sims: list[float] = []
    for row in queries:
        result = selectors.memory_search(query=row["query"], projects=[row["project"]])
        gold = set(row["gold"])
        for hit in result.hits:
            if hit.source != "semantic" or hit.similarity is None:
                continue
            (gold_sims if external.get(hit.id) in gold else other_sims).append(hit.similarity)
    junk_best: list[float] = []
    for query in nonsense(200):
        hits = [h for h in selectors.memory_search(query=query).hits if h.source == "semantic"]
        junk_best.append(max((h.similarity or 0.0 for h in hits), default=0.0))
    print(
        f"{len(queries)} LoCoMo dev queries: {len(gold_sims)} meaning-only gold hits, "
        f"{len(other_sims)} meaning-only other hits; 200 nonsense queries"
    )
    print("floor  gold kept  others kept  nonsense queries still answered")
    for floor in FLOORS:
        kept = sum(s >= floor for s in gold_sims) / max(1, len(gold_sims))
        others = sum(s >= floor for s in other_sims) / max(1, len(other_sims))
        junk = sum(s >= floor for s in junk_best) / len(junk_best)
        print(f"{floor:5.2f}  {kept:9.1%}  {others:11.1%}  {junk:9.1%}")


if __name__ == "__main__":
    main()
