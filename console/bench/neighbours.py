"""The session neighbourhood in the quality core (Dakera 004; `recall.neighbourhood`).

`expand` is what Recall's expand stage does with the session channel, on the
core's fused list: the top `session_seeds` hits (scores through
`recall.scoring.positive`, as hydrated hits carry them) seed the real
channel (`recall.channels.session.Session`) over the real store; when it
finds something every list is fused again by weight and the session prior
applied again (`recall.expansion.refuse`). `below` is the other way to use
the same neighbours: as associated items, no vote in fusion, each listed
right below the hit that found them (what an agent reading each item with
its associated memories sees), the rest of the list after.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from console import wiring
from recall.channels import SESSION
from recall.channels.session import Session
from recall.config import RecallConfig
from recall.fusion import Fused, asking_turns, fuse, session_prior
from recall.neighbourhood import nearby
from recall.requests import RecallRequest
from recall.scoring import positive
from recall.types import Candidate, ChannelQuery, Filter, Nearby

MODES = ("channel", "associated")


def _reach(config: RecallConfig) -> Nearby | None:
    reach = nearby(RecallRequest(query="", project=None), config)
    return None if reach is None or reach.cap == 0 or reach.seeds == 0 else reach


def _neighbours(
    fused: Sequence[Fused], config: RecallConfig, reach: Nearby, where: Filter
) -> list[Candidate]:
    seeds = [
        Candidate(f.id, n, positive(f.score, config.fusion))
        for n, f in enumerate(fused[: reach.seeds], 1)
    ]
    channel = Session(wiring.planes())
    return channel.candidates(ChannelQuery("", nearby=reach), where, config.depth, seeds)


def expand(
    fused: list[Fused],
    lists: Mapping[str, Sequence[Candidate]],
    config: RecallConfig,
    *,
    where: Filter,
    sessions: Mapping[str, str],
    asking: Collection[str] = frozenset(),
) -> list[Fused]:
    """`fused` with the session channel's list fused in (the channel mode), the
    turns in `asking` then lowered (`recall.fusion.asking_turns`), as
    `recall.expansion.refuse` does."""
    reach = _reach(config)
    weights = dict(config.channel_weights)
    if reach is None or weights.get(SESSION, 0) <= 0 or not fused:
        return asking_turns(fused, asking, weight=config.asking_turns)
    found = _neighbours(fused, config, reach, where)
    if not found:
        return asking_turns(fused, asking, weight=config.asking_turns)
    again = fuse({**lists, SESSION: found}, method=config.fusion, weights=weights, k=config.k)
    again = session_prior(again, sessions, weight=config.session_prior)
    again = asking_turns(again, asking, weight=config.asking_turns)
    seed_of = {c.id: c.path[0] for c in found}
    score = {f.id: f.score for f in again}
    capped = [  # a neighbour only the session found stays below its seed (recall.expansion)
        replace(f, score=math.nextafter(score[seed_of[f.id]], -math.inf))
        if f.channels == (SESSION,) and score.get(seed_of[f.id], math.inf) <= f.score
        else f
        for f in again
    ]
    return sorted(capped, key=lambda f: (-f.score, f.id))


def below(fused: list[Fused], config: RecallConfig, *, where: Filter) -> list[Fused]:
    """`fused` with each seed's neighbours right after it (the associated mode)."""
    reach = _reach(config)
    if reach is None or not fused:
        return fused
    found = _neighbours(fused, config, reach, where)
    by_seed: dict[str, list[str]] = {}
    for c in found:
        by_seed.setdefault(c.path[0], []).append(c.id)
    out: list[Fused] = []
    seen: set[str] = set()
    rest = {f.id: f for f in fused}
    for f in fused:
        for i in [f.id, *by_seed.get(f.id, ())]:
            if i not in seen:
                seen.add(i)
                out.append(rest.get(i) or replace(f, id=i, sources=()))
    return out
