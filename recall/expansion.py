"""The expand stage: channels that read the best fused memories join the fusion.

Expand channels (`recall.ports.EXPAND`, the graph) are asked with seeds: the
top `seeds` memories of the guarded, fused list of the rank channels, best
first, each with its fused score (fabriq expands the top GraphSeeds of the
pre-fused vector + search list). When any of them finds something, every
list (the rank channels' and theirs) is fused again by weight, so a
neighbour is one more channel's vote: a memory both a text channel and the
graph found rises, a graph-only one enters where its weight puts it. When
none finds anything the first fusion stands unchanged. Each graph
provenance carries its hop count and path. Expansion is skipped under a
kind filter (seamless: a kind filter is a targeted enumeration).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from recall.fusion import Fused, fuse
from recall.ports import MemoryStore
from recall.scoring import Scored, positive
from recall.types import MEMORY, Candidate, Filter


def seeds(scored: Sequence[Scored], *, limit: int) -> list[Candidate]:
    """The best `limit` memories of `scored`, as candidates, best first."""
    memories = [s for s in scored if s.record.item == MEMORY][:limit]
    return [Candidate(s.record.id, n, s.score) for n, s in enumerate(memories, 1)]


def wanted(where: Filter, *, limit: int) -> bool:
    """Whether expansion runs at all."""
    return limit > 0 and where.kinds is None


def _with_paths(fused: Fused, paths: Mapping[tuple[str, str], tuple[str, ...]]) -> Fused:
    sources = tuple(
        replace(p, hops=len(path) - 1, path=path)
        if (path := paths.get((p.channel, fused.id)))
        else p
        for p in fused.sources
    )
    return replace(fused, sources=sources)


def refuse(
    ranked: Mapping[str, Sequence[Candidate]],
    expanded: Mapping[str, Sequence[Candidate]],
    scored: Sequence[Scored],
    *,
    store: MemoryStore,
    method: str,
    weights: Mapping[str, float],
    k: int,
) -> list[Scored]:
    """`scored` again with the expand channels' lists fused in (see the module docstring).

    Records already hydrated are reused; new ids are hydrated once. The
    caller guards the result like every other hit.
    """
    if not any(expanded.values()):
        return list(scored)
    fused = fuse({**ranked, **expanded}, method=method, weights=weights, k=k)
    paths = {(ch, c.id): c.path for ch, found in expanded.items() for c in found if c.path}
    known = {s.record.id: s for s in scored}
    records = store.hydrate([f.id for f in fused if f.id not in known])
    records.update({i: s.record for i, s in known.items()})
    out: list[Scored] = []
    for f in fused:
        record = records.get(f.id)
        if record is None:
            continue
        f = _with_paths(f, paths)
        snippet = known[f.id].snippet if f.id in known else f.snippet
        out.append(Scored(record, positive(f.score, method), f.sources, f.source, snippet))
    return out
