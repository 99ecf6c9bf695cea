"""Usage utility: how much agents have used a memory lately, in [0, 1).

seamless's formula: retrieval events decay exponentially (half-life 14
days), weighted by how strong a signal each is (a read 3.0, a recall hit
1.5, a prompt match 1.0); the decayed sum is normalised raw / (raw + 4).
Recall multiplies a hit's score by (1 + 0.1 u). The store computes u from
its RetrievalEvent rows with `utility` and serves it through
`MemoryStore.usage`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime

EVENT_WEIGHTS: Mapping[str, float] = {"read": 3.0, "recalled": 1.5, "prompt": 1.0}
HALF_LIFE_DAYS = 14.0
SATURATION = 4.0


def utility(
    events: Iterable[tuple[str, datetime]],
    now: datetime,
    *,
    weights: Mapping[str, float] = EVENT_WEIGHTS,
    half_life_days: float = HALF_LIFE_DAYS,
) -> float:
    """u = raw / (raw + 4), raw = sum of weight(kind) * 0.5 ** (age_days / half_life).

    Event kinds without a weight (searched, miss, ...) count 0; an event in
    the future counts as happening now.
    """
    raw = 0.0
    for kind, at in events:
        weight = weights.get(kind, 0.0)
        if weight:
            age_days = max(0.0, (now - at).total_seconds() / 86400)
            raw += weight * 0.5 ** (age_days / half_life_days)
    return raw / (raw + SATURATION)
