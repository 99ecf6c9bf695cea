"""The expand stage: channels that read the best fused memories join the fusion.

Expand channels (`recall.ports.EXPAND`: the graph, the session
neighbourhood) are asked with seeds: the top memories of the guarded, fused
list of the rank channels, best first, each with its fused score (fabriq
expands the top GraphSeeds of the pre-fused vector + search list; each
channel reads its own count of them). When any of them finds something,
every list (the rank channels' and theirs) is fused again by weight and the
session prior applied again, so a neighbour is one more channel's vote: a
memory both a text channel and an expand channel found rises, one only an
expand channel found enters where its weight puts it, but never above the
seed that found it (Dakera: a neighbour ranks below its hit). When none
finds anything the first fusion stands unchanged. Each expand provenance
carries its distance (`hops`: graph edges, or session turns) and path.
Expansion is skipped under a kind filter (seamless: a kind filter is a
targeted enumeration).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from recall.fusion import Fused, fuse
from recall.ports import MemoryStore
from recall.scoring import Scored, positive, prior_and_asking
from recall.types import MEMORY, Candidate, Filter, asks


def seeds(scored: Sequence[Scored], *, limit: int) -> list[Candidate]:
    """The best `limit` memories of `scored`, as candidates, best first."""
    memories = [s for s in scored if s.record.item == MEMORY][:limit]
    return [Candidate(s.record.id, n, s.score) for n, s in enumerate(memories, 1)]


def wanted(where: Filter, *, limit: int) -> bool:
    """Whether expansion runs at all."""
    return limit > 0 and where.kinds is None


def _with_paths(fused: Fused, paths: Mapping[tuple[str, str], Candidate]) -> Fused:
    if not any((p.channel, fused.id) in paths for p in fused.sources):
        return fused
    sources = tuple(
        replace(p, hops=_hops(c), path=c.path) if (c := paths.get((p.channel, fused.id))) else p
        for p in fused.sources
    )
    return replace(fused, sources=sources)


def _hops(c: Candidate) -> int:
    """A graph path's edge count; a session neighbour's turns from its seed."""
    return c.distance if c.distance is not None else len(c.path) - 1


def refuse(
    ranked: Mapping[str, Sequence[Candidate]],
    expanded: Mapping[str, Sequence[Candidate]],
    scored: Sequence[Scored],
    *,
    store: MemoryStore,
    method: str,
    weights: Mapping[str, float],
    k: int,
    prior: float = 0.0,
    asking: float = 0.0,
) -> list[Scored]:
    """`scored` again with the expand channels' lists fused in (see the module docstring).

    Records already hydrated are reused; new ids are hydrated once. The
    session prior (`prior`, as `recall.scoring.hydrate` applies it to the
    first fusion) is applied again to the new fusion, and then the turns that
    ask are lowered (`asking`, `recall.fusion.asking_turns`): here and not
    before the expansion, where a lowered question would no longer be the seed
    that brings in the turn answering it. With `asking` and a turn among `scored`
    that asks, the lists are fused again even when the expansion found nothing
    (with none, `scored` is what that fusion would give: a Recall of memories that
    are no turns pays no second fusion). The caller guards the result like every
    other hit.
    """
    lowers = bool(asking) and any(asks(s.record) for s in scored)
    if not any(expanded.values()) and not lowers:
        return list(scored)
    fused = fuse({**ranked, **expanded}, method=method, weights=weights, k=k)
    paths = {(ch, c.id): c for ch, found in expanded.items() for c in found if c.path}
    known = {s.record.id: s for s in scored}
    records = store.hydrate([f.id for f in fused if f.id not in known])
    records.update({i: s.record for i, s in known.items()})
    fused = prior_and_asking(fused, records, prior=prior, asking=asking)
    pathed = {i for _, i in paths}
    out: list[Scored] = []
    for f in fused:
        record = records.get(f.id)
        if record is None:
            continue
        if f.id in pathed:
            f = _with_paths(f, paths)
        snippet = known[f.id].snippet if f.id in known else f.snippet
        out.append(Scored(record, positive(f.score, method), f.sources, f.source, snippet))
    return _below_their_seeds(out, paths, set(expanded))


def _below_their_seeds(
    out: list[Scored], paths: Mapping[tuple[str, str], Candidate], expanding: set[str]
) -> list[Scored]:
    """A hit only expand channels found ranks below the seed that found it
    (Dakera: a neighbour is ranked below its hit), whatever the weights."""
    score = {s.record.id: s.score for s in out}
    for s in out:
        if not s.sources or any(p.channel not in expanding for p in s.sources):
            continue
        seeds = [c.path[0] for p in s.sources if (c := paths.get((p.channel, s.record.id)))]
        held = [score[i] for i in seeds if i in score and i != s.record.id]
        if held and s.score >= min(held):
            s.score = math.nextafter(min(held), -math.inf)
    return sorted(out, key=lambda s: (-s.score, s.record.id))
