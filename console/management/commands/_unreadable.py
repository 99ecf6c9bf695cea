"""What an index command says when a derived plane cannot be read (a damaged folder)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.core.management.base import CommandError

from console import selectors
from console.pgbackend import unreachable
from console.plane_health import Unreadable


@contextmanager
def told() -> Iterator[None]:
    """Turn a failure to read a plane into one line naming it and what to run; any
    other failure stays as it was."""
    try:
        yield
    except CommandError:
        raise
    except Exception:
        _database()
        bad = selectors.planes_unreadable()
        if not bad:
            raise
        raise CommandError(named(bad)) from None


def refused() -> None:
    """Raise that one line when a plane cannot be read now (the adapters open a damaged
    folder lazily, so a command that would only fail job after job asks first)."""
    _database()
    if bad := selectors.planes_unreadable():
        raise CommandError(named(bad))


def _database() -> None:
    """The database's own one line when it cannot be reached (a DATABASE_URL naming a
    database that is not there): every plane fails then, and their advice (create
    the extension, run sync_indexes) sent the operator the wrong way."""
    if said := unreachable():
        raise CommandError(said)


def named(bad: Sequence[Unreadable]) -> str:
    """The planes that cannot be read, then what to do about each kind (folder, table)."""
    advice = dict.fromkeys(b.advice for b in bad)
    return "; ".join(map(str, bad)) + ". " + "; ".join(advice)
