"""Meaning in context: a conversation turn read with the turns said before it.

A turn like "Yes, last Tuesday, after the race" means little on its own; the
turns before it say what it is about. The full-text plane indexes those
turns as context fields (recall/bm25.py); this is the same for the meaning
channel, at query time. The semantic channel reads its top `pool`
candidates (`Context`) and scores each

    score = (1 - mix) * cos(q, turn) + mix * cos(q, window)
    window = turn + the turns at distance 1..`turns` before it in its session

where `window` is the sum of those turns' stored vectors (its cosine
normalises it), the turns found by the store (`MemoryStore.earlier_turns`: same session,
by session order, live and in scope; one read) and
their vectors read from the plane (`VectorIndex.vectors`). Nothing is
embedded twice and nothing extra is stored, so the window is always the
session as it is now. A candidate with no earlier turn keeps its cosine.

Chosen on the development sets (`manage.py bench quality`, README
"Retrieval"): on LoCoMo turns, R@10 / nDCG@10 of the fused default 0.800 /
0.605 without, 0.810 / 0.614 with mix 0.5 over the top 50 (a pool of 100:
0.808 / 0.615 for 5 ms more per Recall at 100k; mix 0.3: 0.810 / 0.610);
at 100k the pool of 50 adds 2.0 ms to Recall's p50.
Offline, on the same legs: the two turns before beat one (0.810 / 0.607),
both sides (0.806 / 0.610) and three (0.807 / 0.609); embedding the window's
text as a second vector per turn (twice the embedding work at every write)
measured 0.813 / 0.616. Sets without turn order (LoCoMo observations and
summaries, SciFact) do not change.

Before the window, a long memory is read by its best sentence (`by_passages`,
`Context.passages`, recall/passages.py): the same pool, its stored sentence
vectors read in one store query (`MemoryStore.passages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

from recall import passages
from recall.config import RecallConfig
from recall.ports import MemoryStore, VectorIndex
from recall.types import Candidate, Context, Filter


def reading(config: RecallConfig) -> Context | None:
    """How Recall's semantic channel reads its pool under `config` (None: plain cosine)."""
    windows = config.context_mix > 0 and config.context_turns > 0
    if not windows and config.passage_mix == 0:
        return None
    mix = config.context_mix if windows else 0.0
    return Context(mix, config.context_turns, config.context_pool, config.passage_mix)


Turn = tuple[str, str, int]  # (id, session_id, session_order)


def turns_before(
    seeds: Iterable[Turn], rows: Iterable[Turn], turns: int
) -> dict[str, tuple[str, ...]]:
    """Each seed's turns at distance 1..`turns` before it in its session among `rows`,
    nearest first (the rule every store applies; a seed with none is absent)."""
    at = {(session, order): id_ for id_, session, order in rows}
    out = {}
    for id_, session, order in seeds:
        found = tuple(
            at[(session, order - d)] for d in range(1, turns + 1) if (session, order - d) in at
        )
        if found:
            out[id_] = found
    return out


def rescore(
    found: Sequence[Candidate],
    query: npt.NDArray[np.float32],
    *,
    store: MemoryStore,
    vectors: VectorIndex,
    where: Filter,
    context: Context,
) -> list[Candidate]:
    """`found` (cosine, best first) scored by its passages and in context and
    ranked again (ties by id)."""
    if context.passages > 0:
        found = by_passages(found, query, store=store, mix=context.passages)
    if not found or context.mix == 0 or context.turns == 0:
        return list(found)
    before = store.earlier_turns([c.id for c in found], where=where, turns=context.turns)
    if not before:
        return list(found)
    wanted = {i for c in found if c.id in before for i in (c.id, *before[c.id])}
    stored = vectors.vectors(sorted(wanted))
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    placed: list[int] = []  # positions in `found` that have a window
    windows = []
    for n, c in enumerate(found):
        parts = [stored[i] for i in before.get(c.id, ()) if i in stored]
        if parts and c.id in stored:
            placed.append(n)
            windows.append(sum(parts, stored[c.id]))
    scores = [c.score for c in found]
    if windows:
        block = np.stack(windows)
        norms = np.linalg.norm(block, axis=1)
        cosines = (block @ q) / np.where(norms > 0, norms, 1.0)
        for n, cosine, norm in zip(placed, cosines.tolist(), norms.tolist(), strict=True):
            if norm > 0:
                scores[n] = (1 - context.mix) * scores[n] + context.mix * cosine
    return _ranked(found, scores)


def by_passages(
    found: Sequence[Candidate], query: npt.NDArray[np.float32], *, store: MemoryStore, mix: float
) -> list[Candidate]:
    """`found` with each long memory's cosine mixed with its best sentence's
    (`recall.passages`; one store read) and ranked again (ties by id)."""
    top = passages.best(query, store.passages([c.id for c in found]))
    if not top:
        return list(found)
    scores = [(1 - mix) * c.score + mix * top[c.id] if c.id in top else c.score for c in found]
    return _ranked(found, scores)


def _ranked(found: Sequence[Candidate], scores: Sequence[float]) -> list[Candidate]:
    order = sorted(range(len(found)), key=lambda n: (-scores[n], found[n].id))
    return [
        Candidate(found[n].id, rank, scores[n], found[n].snippet, found[n].path, found[n].distance)
        for rank, n in enumerate(order, 1)
    ]
