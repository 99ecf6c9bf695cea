"""Session neighbourhood (Dakera 004): the memories around a top hit in its session.

An episodic memory (a conversation turn, a working note) is often only half
of what was said: the question's answer sits in the turn before or after the
one that matched. `near` is the one rule every store applies (the Django
store narrows its read with the same bounds first):

- a neighbour shares the seed's non-empty `session_id`, is not the seed, and
  is in scope and live (`Filter.admits`);
- it is within `minutes` of the seed by `occurred_at` when both have one and
  within `turns` by `session_order` when both have one; at least one of the
  two must be known for both (a session-level date alone, as in LoCoMo where
  every turn carries its session's date, leaves the turns to decide);
- each seed keeps its `cap` nearest (fewest turns, then fewest minutes, then id).

`nearby` / `validate` read the request's fields over the config's
(`session_neighbours`, `session_window_minutes`, `session_turns`,
`session_cap`; None = the config's value) into the channel's `Nearby`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypeVar

from recall.config import (
    MAX_SESSION_CAP,
    MAX_SESSION_TURNS,
    MAX_SESSION_WINDOW_MINUTES,
    RecallConfig,
)
from recall.errors import QueryError
from recall.requests import RecallRequest
from recall.types import Filter, Nearby, Neighbour, Record

T = TypeVar("T")

# The RecallRequest fields this module reads.
FIELDS = ("session_neighbours", "session_window_minutes", "session_turns", "session_cap")


def _pick(given: T | None, default: T) -> T:
    return default if given is None else given


def nearby(req: RecallRequest, config: RecallConfig) -> Nearby | None:
    """The session channel's reach for this request (None: it does not run)."""
    if not _pick(req.session_neighbours, config.session_neighbours):
        return None
    return Nearby(
        seeds=config.session_seeds,
        minutes=_pick(req.session_window_minutes, config.session_window_minutes),
        turns=_pick(req.session_turns, config.session_turns),
        cap=_pick(req.session_cap, config.session_cap),
        decay=config.session_decay,
    )


def seeds(req: RecallRequest, config: RecallConfig) -> int:
    """How many top memories the session channel reads (0 when it is off)."""
    reach = nearby(req, config)
    return 0 if reach is None or reach.cap == 0 else reach.seeds


def _range(name: str, value: float | None, low: float, high: float) -> None:
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise QueryError(f"{name} must be within {low:g}..{high:g}, not {value}")


def validate(req: RecallRequest) -> None:
    """QueryError naming the first session-neighbourhood field out of its range."""
    # A request's bounds are the setting's (`RecallConfig.LIMITS`).
    _range("session_window_minutes", req.session_window_minutes, 0, MAX_SESSION_WINDOW_MINUTES)
    _range("session_turns", req.session_turns, 0, MAX_SESSION_TURNS)
    _range("session_cap", req.session_cap, 0, MAX_SESSION_CAP)


def _minutes(seed: Record, other: Record) -> float | None:
    if seed.occurred_at is None or other.occurred_at is None:
        return None
    return abs((other.occurred_at - seed.occurred_at).total_seconds()) / 60


def _turns(seed: Record, other: Record) -> int | None:
    if seed.session_order is None or other.session_order is None:
        return None
    return abs(other.session_order - seed.session_order)


def near(
    seeds: Sequence[Record],
    found: Sequence[Record],
    *,
    where: Filter,
    minutes: float,
    turns: int,
    cap: int,
) -> dict[str, tuple[Neighbour, ...]]:
    """Each seed's neighbours among `found` (see the module docstring); a seed
    with none is absent."""
    by_session: dict[str, list[Record]] = {}
    for r in found:
        if r.session_id and where.admits(
            project=r.project, active=r.active, item=r.item, kind=r.kind
        ):
            by_session.setdefault(r.session_id, []).append(r)
    out: dict[str, tuple[Neighbour, ...]] = {}
    for seed in seeds:
        kept: list[Neighbour] = []
        for other in by_session.get(seed.session_id, []) if seed.session_id else []:
            if other.id == seed.id:
                continue
            gap, steps = _minutes(seed, other), _turns(seed, other)
            if gap is None and steps is None:
                continue
            if (gap is not None and gap > minutes) or (steps is not None and steps > turns):
                continue
            kept.append(Neighbour(other.id, steps, gap))
        kept.sort(key=lambda n: (n.turns is None, n.turns or 0, n.minutes or 0.0, n.id))
        if kept[:cap]:
            out[seed.id] = tuple(kept[:cap])
    return out
