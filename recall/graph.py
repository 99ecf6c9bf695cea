"""Graph expansion: variable-length paths over the stored, typed, weighted edges.

The edges (`recall.types.Link`) are `[[links]]` (weight 1, derived from bodies),
explicit associations (a type and a weight 0..1, written by agents or people)
and supersessions (replacement -> replaced). `traverse` walks them breadth
first from scored seeds, one hop at a time:

    score(path) = seed score x product of edge weights x decay^(hops - 1)

A node keeps its best path (highest score; then fewest hops; then the path's
ids), as fabriq's graph channel keeps a node's shortest variable-length path
(`[:Rel*1..H]`). Why a breadth-first walk in Python and not a recursive CTE:
each hop is ONE batched, indexed read of the frontier's edges
(`MemoryStore.edges`), whose scope, validity and `min_weight` apply inside
the query, so a superseded, archived or out-of-scope memory is never reached
and never walked through; the frontier is pruned to the `beam` best nodes
between hops, so fan-out stays bounded by design, not by the data (hops <= 3
means at most 3 reads, 6 with `reverse`); and it runs the same on SQLite,
PostgreSQL and the in-memory store. A recursive CTE would enumerate paths
inside the database (exponential on dense or cyclic graphs unless each step
joins the memory table for scope and deduplicates by node, which SQLite's
recursive CTEs cannot do per level) and could not apply the per-hop beam.
Timing at 100k memories / 500k edges: tests/bench/graph_speed.py.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from recall.ports import MemoryStore
from recall.types import Filter

MAX_HOPS = 3
# An edge type: what an association is called (`caused`, `depends-on`, ...).
REL_RE = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
DEFAULT_DECAY = 0.5
MAX_SEEDS = 100
MAX_CAP = 100
MAX_ASSOCIATED = 10  # Dakera: associated_memories_cap default 10, max 10
# The graph channel's default fusion weight. Not measured: no set in
# ../shared/eval has edges (no `[[link]]` in any record), so the graph finds
# nothing there and the figures cannot move. Under z-score fusion a weight of
# 0.3 places a graph-only neighbour of a top hit mid-pack, not above the hits
# that found it; 1.0 would put it at the top.
GRAPH_WEIGHT = 0.3
# Frontier nodes carried into the next hop, best first (at least twice the
# cap): keeps a hub from multiplying the next read by its degree. A heuristic
# (beam search): a path's score only falls as it grows, so the best `cap`
# usually descend from the best nodes of the hop before; the beam trades that
# "usually" for a read of bounded size.
DEFAULT_BEAM = 16


@dataclass(frozen=True, slots=True)
class Step:
    """One traversed edge: where it went, its type, its weight, and its direction."""

    node: str
    rel: str
    weight: float
    reverse: bool = False


@dataclass(frozen=True, slots=True)
class Reached:
    """A memory the walk reached: its best path's score, hop count and path.

    `path` runs from the seed (`path[0]`) to this memory (`path[-1]`);
    `steps[i]` is the edge from `path[i]` to `path[i + 1]`; `seed_score` is
    the score the seed brought.
    """

    id: str
    score: float
    hops: int
    path: tuple[str, ...]
    steps: tuple[Step, ...]
    seed_score: float

    @property
    def seed(self) -> str:
        return self.path[0]

    @property
    def rel(self) -> str:
        """The type of the edge that reached it (the last step; "" for a seed)."""
        return self.steps[-1].rel if self.steps else ""

    def then(self, step: Step, decay: float) -> Reached:
        """This path one step longer, scored (see the module docstring)."""
        steps = (*self.steps, step)
        weights = 1.0
        for s in steps:
            weights *= s.weight
        score = self.seed_score * weights * decay ** (len(steps) - 1)
        return Reached(step.node, score, len(steps), (*self.path, step.node), steps,
                       self.seed_score)  # fmt: skip


# Each graph knob's bounds (least, most): a config holds its knobs within them
# (`recall.config.check_limits`), and the console says them (`recall.config.limits`).
GRAPH_LIMITS: dict[str, tuple[float, float]] = {
    "graph_seeds": (0, MAX_SEEDS),
    "graph_hops": (0, MAX_HOPS),
    "graph_min_weight": (0.0, 1.0),
    "graph_cap": (0, MAX_CAP),
    "graph_decay": (1e-9, 1.0),
    "associated_cap": (0, MAX_ASSOCIATED),
    "associated_depth": (1, MAX_HOPS),
    "associated_min_weight": (0.0, 1.0),
}


def _key(r: Reached) -> tuple[float, int, tuple[str, ...]]:
    return (-r.score, r.hops, r.path)


def _better(a: Reached, b: Reached | None) -> bool:
    return b is None or _key(a) < _key(b)


def traverse(
    store: MemoryStore,
    seeds: Sequence[tuple[str, float]],
    *,
    where: Filter,
    hops: int = 1,
    reverse: bool = False,
    min_weight: float = 0.0,
    cap: int = 10,
    decay: float = DEFAULT_DECAY,
    beam: int = DEFAULT_BEAM,
    exclude: Collection[str] = (),
) -> list[Reached]:
    """The best `cap` memories within `hops` of `seeds`, best first (see the module docstring).

    `seeds` are (id, score) pairs (the caller's scope-guarded hits). A seed
    another seed reaches is returned (as fabriq's graph channel votes for a
    neighbour that is also a hit), never one reached only through a cycle
    back to itself; `exclude`d ids are never returned (associated memories
    exclude the packed items). Each node is expanded once, so a cycle ends
    where it closes. Ties break on hop count, then on the path's ids.
    """
    if not 0 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be within 0..{MAX_HOPS}, not {hops}")
    if not 0.0 <= min_weight <= 1.0 or not 0.0 < decay <= 1.0:
        raise ValueError("min_weight must be within 0..1 and decay within (0, 1]")
    if hops == 0 or cap <= 0 or not seeds:
        return []
    starts: dict[str, Reached] = {}
    for node, score in seeds:
        start = Reached(node, score, 0, (node,), (), score)
        if _better(start, starts.get(node)):
            starts[node] = start
    reached: dict[str, Reached] = {}  # best path of one or more hops, per node
    expanded: set[str] = set()
    frontier = sorted(starts.values(), key=_key)
    for _ in range(hops):
        frontier = [r for r in frontier if r.id not in expanded][: max(beam, 2 * cap)]
        if not frontier:
            break
        expanded.update(r.id for r in frontier)
        edges = store.edges(
            [r.id for r in frontier], where=where, reverse=reverse, min_weight=min_weight
        )
        grown: dict[str, Reached] = {}
        for here in frontier:
            for link in edges.get(here.id, ()):
                if link.target in here.path:  # back onto its own path: a cycle
                    continue
                there = here.then(Step(link.target, link.rel, link.weight, link.reverse), decay)
                if _better(there, reached.get(there.id)) and _better(there, grown.get(there.id)):
                    grown[there.id] = there
        reached.update(grown)
        frontier = sorted(grown.values(), key=_key)
    found = sorted((r for r in reached.values() if r.id not in exclude), key=_key)
    return found[:cap]
