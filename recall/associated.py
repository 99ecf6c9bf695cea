"""The graph options of a Recall, and its associated memories (Dakera's COG-2 / KG-3).

- `walk` / `seeds`: the request's graph fields over the config's (`hops`,
  `graph_seeds`, `graph_reverse`, `graph_min_weight`, `graph_cap`; None =
  the config's value), as the graph channel's `Walk`;
- `validate`: QueryError naming a graph or associated field out of range;
- `find`: with `include_associated`, the memories within `associated_depth`
  hops of the PACKED items (edges of at least `associated_min_weight`, in
  the same scope, forward and, with `graph_reverse`, backward), best path
  first, at most `associated_cap` (default 10, max 10). None is ever a
  packed item; each carries its `depth` (hops), `via` (the packed item its
  best path starts from) and `rel` (the type of the edge that reached it).
  They are packed after the main items, within the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TypeVar

from recall.config import RecallConfig
from recall.errors import QueryError
from recall.graph import MAX_ASSOCIATED, MAX_CAP, MAX_HOPS, MAX_SEEDS, traverse
from recall.ports import MemoryStore
from recall.requests import RecallRequest
from recall.results import Hit, Provenance, to_hit
from recall.types import MEMORY, Filter, Record, Walk

T = TypeVar("T")

# The RecallRequest fields this module reads: what the edges pass through.
FIELDS = (
    "hops", "graph_seeds", "graph_reverse", "graph_min_weight", "graph_cap",
    "include_associated", "associated_cap", "associated_depth", "associated_min_weight",
)  # fmt: skip


def _pick(given: T | None, default: T) -> T:
    return default if given is None else given


def walk(req: RecallRequest, config: RecallConfig) -> Walk:
    """The graph channel's walk for this request."""
    return Walk(
        hops=_pick(req.hops, config.graph_hops),
        reverse=_pick(req.graph_reverse, config.graph_reverse),
        min_weight=_pick(req.graph_min_weight, config.graph_min_weight),
        cap=_pick(req.graph_cap, config.graph_cap),
        decay=config.graph_decay,
    )


def seeds(req: RecallRequest, config: RecallConfig) -> int:
    """How many top memories the graph expands from (0 when `hops` is 0)."""
    return 0 if walk(req, config).hops == 0 else _pick(req.graph_seeds, config.graph_seeds)


def _range(name: str, value: float | None, low: float, high: float) -> None:
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise QueryError(f"{name} must be within {low:g}..{high:g}, not {value}")


def validate(req: RecallRequest) -> None:
    """QueryError naming the first graph or associated field out of its range."""
    _range("hops", req.hops, 0, MAX_HOPS)
    _range("graph_seeds", req.graph_seeds, 0, MAX_SEEDS)
    _range("graph_min_weight", req.graph_min_weight, 0.0, 1.0)
    _range("graph_cap", req.graph_cap, 0, MAX_CAP)
    _range("associated_cap", req.associated_cap, 0, MAX_ASSOCIATED)
    _range("associated_depth", req.associated_depth, 1, MAX_HOPS)
    _range("associated_min_weight", req.associated_min_weight, 0.0, 1.0)


def find(
    store: MemoryStore,
    packed: Sequence[Hit],
    *,
    where: Filter,
    req: RecallRequest,
    config: RecallConfig,
    now: datetime,
) -> list[tuple[Hit, Record]]:
    """The associated memories of the packed items, best first (see the module docstring)."""
    main = [(h.id, h.score) for h in packed if h.kind == MEMORY]
    reached = traverse(
        store,
        main,
        where=where,
        hops=_pick(req.associated_depth, config.associated_depth),
        reverse=_pick(req.graph_reverse, config.graph_reverse),
        min_weight=_pick(req.associated_min_weight, config.associated_min_weight),
        cap=min(MAX_ASSOCIATED, _pick(req.associated_cap, config.associated_cap)),
        decay=config.graph_decay,
        exclude={h.id for h in packed},
    )
    records = store.hydrate([r.id for r in reached])
    out: list[tuple[Hit, Record]] = []
    for n, r in enumerate(reached, 1):
        record = records.get(r.id)
        if record is None or not where.admits_record(record):
            continue
        sources = (Provenance("graph", n, r.score, hops=r.hops, path=r.path),)
        hit = to_hit(record, now=now, source="graph", score=r.score, sources=sources)
        out.append((replace(hit, depth=r.hops, via=r.seed, rel=r.rel), record))
    return out
