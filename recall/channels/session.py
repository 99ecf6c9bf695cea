"""The session channel: the session neighbours of the best hits (Dakera 004).

Its seeds are the top `session_seeds` memories of the pre-expansion fused
list, best first, with their fused scores; only the episodic ones
(`recall.types.EPISODIC_KINDS`) are read. The store returns each seed's
neighbours (`MemoryStore.session_neighbours`, the rule in
`recall.neighbourhood`: same session, within +-5 minutes by `occurred_at`
and +-2 turns by session order, in scope and live, capped per seed). A
neighbour scores seed score x decay per turn away, so it ranks below the
hit that found it in this list, and keeps its best seed; the pipeline fuses
the list with the others by the channel's weight (`recall.expansion`). Its
provenance is `session`, with `hops` the distance in turns and `path`
(seed, neighbour).
"""

from __future__ import annotations

from collections.abc import Sequence

from recall.errors import ChannelOff
from recall.planes import Planes
from recall.ports import EXPAND
from recall.types import Candidate, ChannelQuery, Filter


class Session:
    """Expands seeds to their session neighbourhood (`recall.neighbourhood`)."""

    name = "session"
    role = EXPAND
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._store = planes.store

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        reach = query.nearby
        if reach is None:
            raise ChannelOff("session_neighbours is off")
        chosen = list(seeds[: reach.seeds])
        if not chosen or reach.cap == 0:
            return []
        found = self._store.session_neighbours(
            [s.id for s in chosen], where=where, minutes=reach.minutes, turns=reach.turns,
            cap=reach.cap, kinds=reach.kinds,
        )  # fmt: skip
        best: dict[str, tuple[float, int, str]] = {}
        for seed in chosen:
            for n in found.get(seed.id, ()):
                score = seed.score * reach.decay**n.steps
                held = best.get(n.id)
                if held is None or score > held[0]:
                    best[n.id] = (score, n.steps, seed.id)
        ranked = sorted(best.items(), key=lambda kv: (-kv[1][0], kv[0]))[:depth]
        return [
            Candidate(i, rank, score, path=(seed, i), distance=steps)
            for rank, (i, (score, steps, seed)) in enumerate(ranked, 1)
        ]
