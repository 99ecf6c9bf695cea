"""What an index command says when a derived plane cannot be read (a damaged folder)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError

from console import selectors

ADVICE = (
    "`manage.py reindex` sets a damaged folder aside (renamed, not deleted) and rebuilds "
    "the plane from the database"
)


@contextmanager
def told() -> Iterator[None]:
    """Turn a failure to read a plane into one line naming it and what to run; any
    other failure stays as it was."""
    try:
        yield
    except CommandError:
        raise
    except Exception:
        bad = selectors.planes_unreadable()
        if not bad:
            raise
        raise CommandError("; ".join(map(str, bad)) + ". " + ADVICE) from None
