"""Stars and the console's override rows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction
from django.utils import timezone

from console import wiring
from console.models import Memory, Note, Setting


def favorite_toggle(*, item: Memory | Note, value: bool | None = None) -> bool:
    """Star or unstar; never bumps `updated` (a star is not an edit)."""
    new = (not item.favorite) if value is None else value
    type(item).objects.filter(pk=item.pk).update(favorite=new)
    item.favorite = new
    transaction.on_commit(wiring.forget_recalls)  # a star boosts: hot packs may be stale
    return new


def setting_save(*, key: str, value: Mapping[str, Any], user: str = "") -> Setting:
    row, _ = Setting.objects.update_or_create(
        key=key, defaults={"value": dict(value), "updated": timezone.now(), "updated_by": user}
    )
    return row


def setting_reset(*, key: str) -> None:
    Setting.objects.filter(key=key).delete()
