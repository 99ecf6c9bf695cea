"""Altitude digests under a budget: what `altitude=auto` packs next to `entity`.

One project of `size` generated memories (console/bench/corpus.py, every
memory moved into that project, 10% superseded), imported through the normal
path and indexed, its digest built once through the outbox job
(`indexing.apply_digests`); then each query recalls at each budget, at
altitude entity and auto. Per budget and altitude the table gives the mean
rows packed, the share of packs that carry the digest, the mean rows the
digest stands for, the mean tokens of the reply, and the mean rows omitted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from statistics import mean
from typing import Any

from console import digesting, indexing, selectors
from console.bench import corpus as synthetic
from console.bench import loading, report
from console.models import Digest

BUDGETS = (100, 300, 1000, 4000)
ALTITUDES = ("entity", "auto")
PROJECT = "proj-0"


def load(size: int, root: Path) -> synthetic.Corpus:
    """`size` memories in one project, imported and indexed; its digest queued."""
    made = synthetic.generate(size, projects=1)
    for record in made.memories:
        record["project"] = PROJECT
    loading.import_path(made.write(root / "altitude.jsonl"))
    digesting.queue([PROJECT])
    return made


def measure(
    *, size: int, queries: int, root: Path, budgets: Sequence[int] = BUDGETS
) -> dict[str, Any]:
    """Load, build the digest, recall every query at each budget and altitude."""
    started = time.perf_counter()
    made = load(size, root)
    loaded = time.perf_counter()
    built = indexing.apply_digests()
    row = Digest.objects.get(key=PROJECT)
    asked = [q for q, _ in synthetic.queries(made, queries)]
    rows = []
    for budget in budgets:
        for altitude in ALTITUDES:
            packs = [_recall(q, budget, altitude) for q in asked]
            rows.append({"budget": budget, "altitude": altitude, **_summary(packs)})
    return {
        "size": size, "queries": len(asked), "load_s": round(loaded - started, 1),
        "digest": {
            "built": built.applied, "sentences": len(row.sentences), "tokens": row.tokens,
            "covers": len({i for s in row.sentences for i in s["covers"]}),
            "build_s": round(time.perf_counter() - loaded, 1),
        },
        "rows": rows,
    }  # fmt: skip


def _recall(query: str, budget: int, altitude: str) -> Any:
    return selectors.memory_recall(
        query=query, project=PROJECT, budget=budget, altitude=altitude, visible=[PROJECT],
        debug=True,
    )  # fmt: skip


def _summary(packs: Sequence[Any]) -> dict[str, float]:
    def avg(value: Callable[[Any], float]) -> float:
        return round(mean(value(p) for p in packs), 2) if packs else 0.0

    def covered(p: Any) -> int:
        return len((p.debug or {}).get("altitude", {}).get("covered", []))

    return {
        "rows": avg(lambda p: sum(1 for h in p.items if h.kind != "digest")),
        "digest": avg(lambda p: any(h.kind == "digest" for h in p.items)),
        "covered": avg(covered),
        "tokens": avg(lambda p: p.tokens),
        "omitted": avg(lambda p: p.omitted),
    }


def table(body: dict[str, Any]) -> str:
    """The figures as a text table."""
    d = body["digest"]
    head = (
        f"altitude: {body['size']} memories in one project, {body['queries']} queries; "
        f"digest {d['sentences']} sentences, {d['tokens']} tokens, covers {d['covers']} rows "
        f"(built in {d['build_s']} s; load {body['load_s']} s)"
    )
    keys = ("budget", "altitude", "rows", "digest", "covered", "tokens", "omitted")
    rows = [[f"{r[k]:.0%}" if k == "digest" else r[k] for k in keys] for r in body["rows"]]
    return head + "\n" + report.table(keys, rows)
