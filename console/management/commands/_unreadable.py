"""What an index command says when a derived plane cannot be read (a damaged folder)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
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
        raise CommandError(_named(bad)) from None


def refused() -> None:
    """Raise that one line when a plane cannot be read now (the adapters open a damaged
    folder lazily, so a command that would only fail job after job asks first)."""
    if bad := selectors.planes_unreadable():
        raise CommandError(_named(bad))


def _named(bad: Sequence[object]) -> str:
    return "; ".join(map(str, bad)) + ". " + ADVICE
