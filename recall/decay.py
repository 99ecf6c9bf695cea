"""Recency decay and expiry: what time does to a memory.

**Decay** (Dakera seed 004): a memory's score x floor + (1 - floor) x
2^(-age / half-life). The half-life is one week divided by its kind's rate
(`RATES`: Dakera's working memory decays 3x faster, procedural 0.3x; kinds
that hold durable knowledge, such as a constraint or a decision, do not
decay at all), and divided by 1.5 more for a memory no agent has read yet
("never-accessed 50% faster"). The access boost: an agent's read restarts
the clock, so age runs from when the memory's event happened (`occurred_at`,
else its creation) or from its last read, whichever is later. The floor keeps an old
memory findable: decay reorders near-equals, it never buries a strong match.

The clock is injected (`Planes.clock`), so tests pin "now". Off by default,
set by `manage.py bench quality` (README, "Importance, worth, decay,
expiry"): every LoCoMo memory is an episode, and decaying them from each
conversation's own last day loses 0.055 nDCG@10 / 0.008 R@10 on the turns
and 0.099 / 0.023 on the observations (against the wall clock every 2023
turn is at the floor: no change); the
other kinds have no evaluation data. A request turns it on with `decay: true`.

**Expiry**: a memory written with `ttl_seconds` / `expires_at` is gone from
that instant: the store no longer hydrates, lists or counts it (see
`recall.ports.MemoryStore`), and `expired` is the one rule every reader uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from recall.types import Record

MAX_TTL_SECONDS = 100 * 365 * 86_400  # a century: longer is "never", so leave it unset
BASE_HALF_LIFE_DAYS = 7.0  # Dakera: one week
NEVER_ACCESSED_RATE = 1.5  # Dakera: a memory never read decays 50% faster

# Decay rate per kind (x the base rate; 0 = never decays). Dakera's four types
# mapped to this product's kinds: working -> working (3x), procedural ->
# runbook, protocol (0.3x), episodic -> episode, stage, semantic -> fact.
# Durable kinds (rules, decisions, preferences, references) keep their rank.
RATES: dict[str, float] = {
    "working": 3.0,
    "episode": 1.0,
    "stage": 1.0,
    "fact": 1.0,
    "runbook": 0.3,
    "protocol": 0.3,
    "constraint": 0.0,
    "convention": 0.0,
    "gotcha": 0.0,
    "decision": 0.0,
    "refuted": 0.0,
    "reference": 0.0,
    "preference": 0.0,
}


@dataclass(frozen=True, slots=True)
class Decay:
    """How decay applies: the base half-life in days and the floor (0..1)."""

    half_life_days: float = BASE_HALF_LIFE_DAYS
    floor: float = 0.5


def half_life(kind: str, *, accessed: bool, base_days: float = BASE_HALF_LIFE_DAYS) -> float | None:
    """The half-life in days of a memory of `kind`, or None when the kind does not decay."""
    rate = RATES.get(kind, 1.0)
    if rate <= 0:
        return None
    if not accessed:
        rate *= NEVER_ACCESSED_RATE
    return base_days / rate


def anchor(record: Record) -> datetime | None:
    """Where a memory's age runs from: when its event happened (else its creation), or
    its last read when that is later (the access boost)."""
    times = [t for t in (record.occurred_at or record.created, record.last_accessed_at) if t]
    return max(times) if times else None


def decay_factor(record: Record, now: datetime, decay: Decay) -> float:
    """floor + (1 - floor) x 2^(-age / half-life); 1 for a kind that does not decay."""
    days = half_life(record.kind, accessed=record.access_count > 0, base_days=decay.half_life_days)
    since = anchor(record)
    if days is None or since is None:
        return 1.0
    age = max((now - since) / timedelta(days=1), 0.0)
    return decay.floor + (1 - decay.floor) * 2 ** (-age / days)


def expired(record: Record, now: datetime) -> bool:
    """Whether the memory's expiry has come (`expires_at` at or before `now`)."""
    return passed(record.expires_at, now)


def passed(expires_at: datetime | None, now: datetime) -> bool:
    """Whether an expiry has come by `now`: a memory stored with it is gone from every
    read (`expired`); a write that asks for one is refused (the API and the console)."""
    return expires_at is not None and expires_at <= now
