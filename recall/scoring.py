"""The stages between fusion and packing: hydrate, guard, boost, rank.

- `hydrate`: fused ids become records from the source of truth; ids that no
  longer hydrate are dropped (fabriq's rule).
- `guard`: the post-fusion scope check against the hydrated row (a backstop
  for the channels' own filters, and the guard for expanded neighbours).
- `boost`: favourite x favorite_boost and usage x (1 + usage_boost * u)
  (seamless), multiplying positive scores.
- `rank`: best first, ties by id.

Boosts multiply scores, which needs positive scores: RRF scores are; z-score
fused scores go through the logistic function first (`positive`: monotonic,
into (0, 1), computed so that no weight the schema allows can overflow).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from recall.fusion import Fused, asking_turns, session_prior
from recall.ports import MemoryStore
from recall.results import Provenance
from recall.types import Filter, Record, asks, conversation


@dataclass(slots=True)
class Scored:
    """A hydrated hit on its way to the reply (mutable: boosts rescale it)."""

    record: Record
    score: float
    sources: tuple[Provenance, ...]
    source: str
    snippet: str | None = None


def positive(score: float, method: str) -> float:
    """z-score sums through the logistic function (stable for any magnitude); RRF as is."""
    if method != "zscore":
        return score
    if score >= 0:
        return 1 / (1 + math.exp(-score))
    e = math.exp(score)
    return e / (1 + e)


def hydrate(
    store: MemoryStore,
    fused: Sequence[Fused],
    *,
    method: str,
    prior: float = 0.0,
    asking: float = 0.0,
    expired: bool = False,
) -> list[Scored]:
    """Fused hits as records, in fused order; ids that no longer hydrate are dropped.

    With `prior` > 0 the fused scores first take the session prior
    (`recall.fusion.session_prior`), read from the hydrated rows' sessions;
    with `asking` > 0 the turns that ask are then lowered (`prior_and_asking`).
    `expired`: expired memories not yet purged hydrate too (`include_history`).
    """
    records = store.hydrate([f.id for f in fused], expired=expired)
    fused = prior_and_asking(fused, records, prior=prior, asking=asking)
    return [
        Scored(records[f.id], positive(f.score, method), f.sources, f.source, f.snippet)
        for f in fused
        if f.id in records
    ]


def prior_and_asking(
    fused: Sequence[Fused], records: Mapping[str, Record], *, prior: float, asking: float
) -> list[Fused]:
    """The session prior (`recall.fusion.session_prior`), then the turns that ask
    lowered (`recall.fusion.asking_turns`), both read from the hydrated rows."""
    if prior:
        sessions = {i: conversation(r) for i, r in records.items()}
        fused = session_prior(fused, sessions, weight=prior)
    if asking:
        fused = asking_turns(fused, {i for i, r in records.items() if asks(r)}, weight=asking)
    return list(fused)


def admits(where: Filter, record: Record) -> bool:
    return where.admits_record(record)


def guard(where: Filter, scored: Sequence[Scored]) -> list[Scored]:
    """Only hits whose hydrated row is in scope (and live, when the filter says so)."""
    return [s for s in scored if admits(where, s.record)]


def boost(
    store: MemoryStore, scored: Sequence[Scored], *, favorite: float, usage: float
) -> list[Scored]:
    """Favourite x `favorite` and usage x (1 + `usage` * u), after fusion (in place)."""
    used = store.usage([s.record.id for s in scored]) if scored else {}
    for s in scored:
        if s.record.favorite:
            s.score *= favorite
        s.score *= 1 + usage * used.get(s.record.id, 0.0)
    return list(scored)


def rank(scored: Sequence[Scored]) -> list[Scored]:
    """Best first; ties by id so results match across runs and backends."""
    return sorted(scored, key=lambda s: (-s.score, s.record.id))


def current_first(ranked: Sequence[Scored]) -> list[Scored]:
    """`ranked` with no past version ahead of a version that replaced it (a history
    recall, `include_history`): the newest ranked version of a chain takes the place
    of its best-ranked one, the older ones follow it newest first, so an agent reads
    what is true now before what was. Versions not ranked are not added."""
    at = {s.record.id: s for s in ranked}
    placed: set[str] = set()
    out: list[Scored] = []
    for scored in ranked:
        if scored.record.id in placed:
            continue
        chain = [scored]  # this version, then each ranked successor not yet placed
        placed.add(scored.record.id)
        successor = scored.record.superseded_by
        while successor in at and successor not in placed:  # a loop in bad data ends too
            placed.add(successor)
            chain.append(at[successor])
            successor = at[successor].record.superseded_by
        out.extend(reversed(chain))
    return out
