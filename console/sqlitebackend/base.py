"""`DatabaseWrapper`: Django's SQLite wrapper, with moments read aware (see the package)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.sqlite3 import base
from django.utils.dateparse import parse_datetime


def moment(stored: bytes) -> datetime | None:
    """A stored "datetime" column as an aware datetime: naive text is UTC."""
    text = stored.decode()
    try:
        return datetime.fromisoformat(text + "+00:00")
    except ValueError:  # text with its own offset, or a form only Django's parser reads
        parsed = parse_datetime(text)
    if parsed is not None and parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    return parsed


# After Django's own registration (importing `base` made it): the names are global.
sqlite3.register_converter("datetime", moment)
sqlite3.register_converter("timestamp", moment)


class DatabaseWrapper(base.DatabaseWrapper):
    """Refuses a database whose stored moments would not be UTC."""

    # Every "datetime" column reads as an aware datetime (`moment`) or None:
    # `console.prepared` leaves them as read (about 800 values a Recall).
    moments_aware = True

    def __init__(self, settings_dict: dict[str, Any], *args: Any, **kwargs: Any) -> None:
        zone = settings_dict.get("TIME_ZONE")
        if not settings.USE_TZ or zone not in (None, "UTC"):
            raise ImproperlyConfigured(
                f"{__package__} reads stored moments as UTC: it needs USE_TZ = True and "
                f"no TIME_ZONE for the database, not {zone!r}"
            )
        super().__init__(settings_dict, *args, **kwargs)
