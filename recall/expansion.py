"""The expand stage: neighbours of the best fused memories join the ranking.

Expand channels (`recall.ports.EXPAND`, e.g. `[[link]]` neighbours) are asked
with seeds: the top `seeds` memories of the guarded, fused list, best first.
Their candidates that are new (not already ranked) and still hydrate as
memories are numbered in discovery order, i = 1, 2, ..., and score
weight x candidate score / (k + i), seamless's 1 / (k + i) for a link of
weight 1 at channel weight 1. The caller guards them like every other hit.
Expansion is skipped under a kind filter (a neighbour of another kind would
violate it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from recall.ports import MemoryStore
from recall.results import Provenance
from recall.scoring import Scored
from recall.types import MEMORY, Candidate, Filter


def seeds(scored: Sequence[Scored], *, limit: int) -> list[Candidate]:
    """The best `limit` memories of `scored`, as candidates, best first."""
    memories = [s for s in scored if s.record.item == MEMORY][:limit]
    return [Candidate(s.record.id, n, s.score) for n, s in enumerate(memories, 1)]


def wanted(where: Filter, *, limit: int) -> bool:
    """Whether expansion runs at all."""
    return limit > 0 and where.kinds is None


def neighbours(
    lists: Mapping[str, Sequence[Candidate]],
    scored: Sequence[Scored],
    *,
    store: MemoryStore,
    weights: Mapping[str, float],
    k: int,
) -> list[Scored]:
    """New neighbours from each expand channel's list, scored (see the module docstring)."""
    taken = {s.record.id for s in scored}
    out: list[Scored] = []
    for channel, found in lists.items():
        fresh = [c for c in found if c.id not in taken]
        records = store.hydrate([c.id for c in fresh])
        weight = weights.get(channel, 1.0)
        i = 0
        for cand in fresh:
            record = records.get(cand.id)
            if record is None or record.item != MEMORY or record.id in taken:
                continue
            taken.add(record.id)
            i += 1
            score = weight * cand.score / (k + i)
            out.append(Scored(record, score, (Provenance(channel, i, score),), channel))
    return out
