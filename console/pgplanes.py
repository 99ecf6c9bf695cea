"""The PostgreSQL planes on Django's own connection (the `postgres` profile).

`recall.indexes.pg_text_index` and `pg_vector_index` are plain Python; here
they are handed Django's live connection for every statement, so a memory's
row, its full-text row and its vector commit in one transaction, with no
outbox job in between (`console.indexing.enqueue` writes the planes at once
when both planes' classes set `JOINS_TRANSACTION`). Their tables are made
on a connection of their own, from the same settings, outside any request's
transaction.

The wiring fills a `path` option for every text and vector index (the
embedded planes' directories); these planes live in the database and ignore it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
from django.db import connection
from psycopg.conninfo import make_conninfo

from recall.errors import ConfigError
from recall.indexes.pg_text_index import PgTextIndex
from recall.indexes.pg_vector_index import PgVectorIndex

# Django-only OPTIONS keys: everything else in OPTIONS is a libpq parameter.
_DJANGO_OPTIONS = {
    "pool",
    "server_side_binding",
    "isolation_level",
    "assume_role",
    "cursor_factory",
    "context",
    "prepare_threshold",
}


def conninfo(settings_dict: dict[str, Any]) -> str:
    """A libpq connection string for a Django PostgreSQL `DATABASES` entry."""
    params = {
        "dbname": settings_dict.get("NAME") or "",
        "user": settings_dict.get("USER") or "",
        "password": settings_dict.get("PASSWORD") or "",
        "host": settings_dict.get("HOST") or "",
        "port": str(settings_dict.get("PORT") or ""),
    }
    options = settings_dict.get("OPTIONS") or {}
    params.update({k: str(v) for k, v in options.items() if k not in _DJANGO_OPTIONS})
    return make_conninfo(**{k: v for k, v in params.items() if v})


def django_connection() -> psycopg.Connection[Any]:
    """This thread's live Django connection (inside whatever transaction it has open)."""
    connection.ensure_connection()
    raw: psycopg.Connection[Any] = connection.connection
    return raw


def database_dsn() -> str:
    """The default database's connection string; ConfigError unless it is PostgreSQL."""
    if connection.vendor != "postgresql":
        raise ConfigError(
            f"the PostgreSQL planes need a PostgreSQL database, not {connection.vendor}: "
            "set DATABASE_URL=postgres://... (or RECALL_PROFILE=embedded)"
        )
    return conninfo(connection.settings_dict)


class DjangoPgTextIndex(PgTextIndex):
    """`PgTextIndex` whose writes join the Django transaction that writes the row."""

    JOINS_TRANSACTION = True

    def __init__(self, *, path: Path | str | None = None, **options: Any) -> None:
        super().__init__(dsn=database_dsn(), borrow=django_connection, **options)


class DjangoPgVectorIndex(PgVectorIndex):
    """`PgVectorIndex` whose writes join the Django transaction that writes the row."""

    JOINS_TRANSACTION = True

    def __init__(self, *, dims: int, path: Path | str | None = None, **options: Any) -> None:
        super().__init__(dims=dims, dsn=database_dsn(), borrow=django_connection, **options)
