"""Importance and Memory Worth: two per-memory signals that rescale a hit's score.

- **Importance** (0..1, default 0.5, set by the writer; Dakera seed 004's
  `importance_weighted`, default true): score x (1 + w_i (importance - 0.5)),
  so the default importance leaves a score as it is and w_i = 0.5 spans
  x0.75 .. x1.25.
- **Memory Worth** (memory_recall seed 003): how often a memory helped the
  agents it was recalled for, from their feedback (`POST /feedback`,
  `memory_feedback`). worth = (helpful + 1) / (helpful + harmful + 2): the
  mean of a Beta(1, 1) prior updated by the verdicts (Laplace's rule of
  succession), 0.5 with no feedback (as the seed's example hit shows), never
  0 or 1, so one verdict moves it only to 2/3 or 1/3. An item reported `used`
  but neither helpful nor harmful is counted as used and leaves worth as it
  is: using a memory says nothing yet about whether it was right. Blended as
  score x (1 + w_w (worth - 0.5)); with w_w <= 2 the factor stays > 0.

Both multiply positive scores after fusion, like the favourite and usage
boosts (`recall.scoring.boost`), so they reorder hits without changing which
hits were found. LoCoMo carries no importance or feedback, so the bench
table in README ("Importance, worth, decay") shows both leave R@10 / nDCG@10
unchanged there; their defaults follow the seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from recall.config import MAX_WORTH_WEIGHT
from recall.decay import Decay, decay_factor
from recall.errors import QueryError

if TYPE_CHECKING:
    from recall.config import RecallConfig
    from recall.requests import RecallRequest
    from recall.types import Record


class Weighed(Protocol):
    """A hit on its way to the reply (`recall.scoring.Scored`): a record and its score."""

    @property
    def record(self) -> Record: ...

    score: float


W = TypeVar("W", bound=Weighed)


def worth(helpful: int, harmful: int) -> float:
    """(helpful + 1) / (helpful + harmful + 2): Laplace's rule of succession."""
    return (helpful + 1) / (helpful + harmful + 2)


def worth_of(record: Record) -> float:
    return worth(record.helpful, record.harmful)


def importance_factor(importance: float, weight: float) -> float:
    """1 + weight x (importance - 0.5): 1 at the default importance."""
    return 1 + weight * (min(max(importance, 0.0), 1.0) - 0.5)


def worth_factor(value: float, weight: float) -> float:
    """1 + weight x (worth - 0.5): 1 for a memory without feedback."""
    return 1 + weight * (value - 0.5)


def weigh(
    scored: Sequence[W],
    *,
    now: datetime,
    importance: float = 0.0,
    worth_weight: float = 0.0,
    decay: Decay | None = None,
) -> list[W]:
    """Each memory's score x its importance, worth and decay factors (in place).

    `importance` and `worth_weight` 0 and `decay` None leave scores as they are;
    notes carry none of these signals and keep theirs.
    """
    for s in scored:
        record = s.record
        if record.item != "memory":
            continue
        if importance:
            s.score *= importance_factor(record.importance, importance)
        if worth_weight:
            s.score *= worth_factor(worth_of(record), worth_weight)
        if decay is not None:
            s.score *= decay_factor(record, now, decay)
    return list(scored)


def validate(req: RecallRequest) -> None:
    """QueryError for a worth weight outside 0..MAX_WORTH_WEIGHT."""
    w = req.worth_weight
    if w is not None and (
        not isinstance(w, int | float) or not math.isfinite(w) or not 0 <= w <= MAX_WORTH_WEIGHT
    ):
        raise QueryError(f"worth_weight must be a number within 0..{MAX_WORTH_WEIGHT}, not {w!r}")


def knobs(req: RecallRequest, config: RecallConfig) -> dict[str, Any]:
    """`weigh`'s keyword arguments for a request: its fields over the config's defaults."""
    weighted = (
        config.importance_weighted if req.importance_weighted is None else req.importance_weighted
    )
    decaying = config.decay if req.decay is None else req.decay
    return {
        "importance": config.importance_weight if weighted else 0.0,
        "worth_weight": config.worth_weight
        if req.worth_weight is None
        else float(req.worth_weight),
        "decay": Decay(config.decay_half_life_days, config.decay_floor) if decaying else None,
    }
