"""The bench's view of importance, Memory Worth and recency decay (recall/worth.py).

The quality harness ranks with the candidate-and-fusion core; Recall then
multiplies each hydrated hit by its importance, worth and decay factors
(`recall.worth.weigh`, after the favourite and usage boosts, which eval data
does not exercise). `weighed` applies that same stage to a fused list, so a
variant such as `{"decay": true}` or `{"importance_weighted": false}` measures
what it does to Recall's order. "now" is the harness key `clock`: "now" (the
wall clock) or "latest" (each project's newest memory, as if its conversation
were happening today: LoCoMo's conversations date from 2023, so against the
wall clock every turn is equally old and decay cannot reorder them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max

from console.models import Memory
from recall import worth
from recall.config import RecallConfig
from recall.fusion import Fused
from recall.ports import MemoryStore
from recall.requests import RecallRequest
from recall.scoring import positive
from recall.types import Record

CLOCKS = ("now", "latest")


def latest_by_project() -> dict[str | None, datetime]:
    """Each project's newest memory time (occurred_at, else created): "now" for `latest`."""
    rows = Memory.objects.values_list("project__slug").annotate(
        occurred=Max("occurred_at"), created=Max("created")
    )
    return {slug: occurred or created for slug, occurred, created in rows}


def active(config: RecallConfig) -> bool:
    """Whether the config weighs anything (else the fused order stands as it is)."""
    knobs = worth.knobs(RecallRequest("", None), config)
    return bool(knobs["importance"] or knobs["worth_weight"] or knobs["decay"])


def weighed(
    fused: list[Fused], config: RecallConfig, *, store: MemoryStore, now: datetime
) -> list[Fused]:
    """`fused` reordered as Recall's weigh stage orders it (ids that do not hydrate dropped)."""
    if not active(config):
        return fused
    knobs = worth.knobs(RecallRequest("", None), config)
    records = store.hydrate([f.id for f in fused])
    # Not `recall.scoring.hydrate`: the bench's session neighbours carry no provenance.
    items = [
        _Item(records[f.id], positive(f.score, config.fusion)) for f in fused if f.id in records
    ]
    weighed = worth.weigh(items, now=now, **knobs)
    by_id: Mapping[str, Fused] = {f.id: f for f in fused}
    return [by_id[i.record.id] for i in sorted(weighed, key=lambda i: (-i.score, i.record.id))]


@dataclass(slots=True)
class _Item:
    record: Record
    score: float
