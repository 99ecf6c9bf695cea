"""Memory Worth feedback: an agent says what the items of a recalled pack were worth.

A recall recorded for a token carries a `pack_id` (its RetrievalEvent). The
agent answers per item: `used`, `helpful`, `harmful` (seed 003). One verdict
per (pack, memory, agent): a second one for the same item replaces the first,
so the memory's counters (`feedback_used`, `feedback_helpful`,
`feedback_harmful`) count each pack once. worth = (helpful + 1) /
(helpful + harmful + 2) (`recall.worth.worth`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ObjectDoesNotExist
from django.db import transaction
from django.db.models import F

from console import wiring
from console.models import Feedback, Memory, Note, RetrievalEvent
from console.services.memories import StateConflict
from recall.worth import worth

COUNTERS = ("used", "helpful", "harmful")


class PackNotFound(ObjectDoesNotExist):
    """No recalled pack has that id (404)."""


class ItemNotInPack(ObjectDoesNotExist):
    """Feedback names an item the pack did not hold (404)."""


class PackForbidden(PermissionError):
    """The pack was recalled in a project the token may not touch (403)."""


@dataclass(frozen=True, slots=True)
class Verdict:
    """An item's recorded verdict and the memory's worth after it."""

    id: str
    used: bool
    helpful: bool
    harmful: bool
    worth: float


def _check(event: RetrievalEvent, items: Sequence[Mapping[str, Any]]) -> list[str]:
    """The items' ids. ItemNotInPack (404) for an item the pack did not hold (or a note:
    only memories carry worth); StateConflict (409) for a repeated item or an item
    both helpful and harmful."""
    packed = set(event.ids or [])
    asked = [str(item["id"]) for item in items]
    named = dict(  # an item named as every other call takes a memory: by name too
        Memory.objects.filter(pk__in=packed, name__in=asked).values_list("name", "pk")
    )
    ids = [a.upper() if a.upper() in packed else named.get(a, a) for a in asked]
    if len(set(ids)) != len(ids):
        raise StateConflict("each item may appear once in one feedback call")
    for given, item_id, item in zip(asked, ids, items, strict=True):
        if item_id not in packed:
            raise ItemNotInPack(f"item {given!r} is not in pack {event.pack_id}")
        if item.get("helpful") and item.get("harmful"):
            raise StateConflict(f"item {item_id}: helpful and harmful cannot both be true")
    memories = set(Memory.objects.filter(pk__in=ids).values_list("pk", flat=True))
    notes = set(Note.objects.filter(pk__in=ids).values_list("pk", flat=True))
    for item_id in ids:
        if item_id in notes:
            raise ItemNotInPack(f"item {item_id} is a note (only memories carry worth)")
        if item_id not in memories:  # it was a memory of the pack: deleted since
            raise ItemNotInPack(f"item {item_id} was deleted since the recall")
    return ids


@transaction.atomic
def feedback_record(
    *,
    pack_id: str,
    agent: str,
    sees: Callable[[str | None], bool],
    items: Sequence[Mapping[str, Any]],
) -> list[Verdict]:
    """Record the verdicts on a pack's items; the memories' worth after them.

    `sees` says whether the caller may touch a project (slug; None = global).
    Raises PackNotFound, PackForbidden, or QueryError for an item not in the pack.
    """
    event = RetrievalEvent.objects.filter(pack_id=pack_id.upper()).exclude(pack_id="").first()
    if event is None:
        raise PackNotFound(f"no recalled pack with id {pack_id!r}")
    if not sees(event.project or None):
        raise PackForbidden(f"pack {pack_id} was recalled in a project this token may not touch")
    if event.agent != agent:
        raise PackForbidden(f"pack {pack_id} was recalled by another agent: rate your own packs")
    ids = _check(event, items)
    for memory_id, item in zip(ids, items, strict=True):
        new = {c: bool(item.get(c, False)) for c in COUNTERS}
        old, made = Feedback.objects.get_or_create(
            event=event, memory_id=memory_id, agent=agent, defaults=new
        )
        before = dict.fromkeys(COUNTERS, False) if made else {c: getattr(old, c) for c in COUNTERS}
        if not made:
            Feedback.objects.filter(pk=old.pk).update(**new)
        change = {
            f"feedback_{c}": F(f"feedback_{c}") + (int(new[c]) - int(before[c]))
            for c in COUNTERS
            if new[c] != before[c]
        }
        if change:
            Memory.objects.filter(pk=memory_id).update(**change)
            transaction.on_commit(wiring.forget_recalls)  # worth ranks: hot packs may be stale
    counts = Memory.objects.filter(pk__in=ids).values_list(
        "pk", "feedback_helpful", "feedback_harmful"
    )
    # Rounded as every other reply rounds its scores (to 4 places).
    worths = {pk: round(worth(helpful, harmful), 4) for pk, helpful, harmful in counts}
    return [
        Verdict(i, bool(it.get("used")), bool(it.get("helpful")), bool(it.get("harmful")),
                worths[i])
        for i, it in zip(ids, items, strict=True)
    ]  # fmt: skip
