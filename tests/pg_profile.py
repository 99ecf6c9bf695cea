"""pytest plugin: run the suite on the PostgreSQL profile (`pytest -p tests.pg_profile`).

Django reads DATABASES once, when pytest-django loads the settings, before
any conftest or fixture runs; so this plugin, loaded with `-p`, points
DATABASE_URL at the test server first (`tests.pg`: RECALL_TEST_DATABASE_URL
or a private PostgreSQL 18 + pgvector) and selects the `postgres` profile.
pytest-django then creates its `test_...` database on that server, and the
console's rows, full-text rows and vectors all live in it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests import pg

PLANE_TABLES = ("recall_text", "recall_vectors")


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    os.environ["DATABASE_URL"] = pg.database_url()
    os.environ.pop("RECALL_DATABASE_URL", None)
    os.environ["RECALL_PROFILE"] = "postgres"
    os.environ["RECALL_TEST_SUBPROCESS_DATABASES"] = "1"  # tests/console/api_server.py


def pytest_report_header() -> str:
    return "profile: postgres (rows, full text and vectors in one PostgreSQL database)"


@pytest.fixture(autouse=True)
def _keep_the_test_transaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MCP tools call `close_old_connections()` before each call (a long-lived
    stdio server must drop stale connections). Inside pytest-django's per-test
    transaction that closes the connection and with it the test's data: on
    SQLite's in-memory test database `close()` does nothing, on PostgreSQL it
    closes. As Django's own test client does for its request signals, skip it
    while a test transaction is open."""
    from django.db import close_old_connections, connection

    from console import mcp

    def close_unless_in_a_test_transaction() -> None:
        if not connection.in_atomic_block:
            close_old_connections()

    monkeypatch.setattr(mcp, "close_old_connections", close_unless_in_a_test_transaction)


@pytest.fixture(autouse=True)
def _empty_planes_after_each_test(django_db_blocker: Any) -> Iterator[None]:
    """The plane tables are not Django models, so a `transaction=True` test's flush
    leaves their rows behind; empty them after every test (a `db` test's rows were
    rolled back already, and this runs after that rollback)."""
    yield
    from django.db import connection

    if not str(connection.settings_dict["NAME"]).startswith("test_"):
        return  # no test database yet: nothing of a test's can be there
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT string_agg(quote_ident(t), ', ') FROM unnest(%s::text[]) AS t"
            " WHERE to_regclass(t) IS NOT NULL",
            [list(PLANE_TABLES)],
        )
        (tables,) = cursor.fetchone()
        if tables:
            cursor.execute(f"TRUNCATE {tables}")


@pytest.fixture(autouse=True)
def _outbox_tests_use_the_outbox(request: pytest.FixtureRequest) -> None:
    """Tests marked `outbox` check the jobs queued between a commit and the planes
    (claims, retries, a process killed after its commit). The PostgreSQL planes
    can skip that queue, writing in the row's transaction; those tests run with
    RECALL_INDEX_IN_TRANSACTION off, so the outbox they test is PostgreSQL's too
    (claims are UPDATEs under PostgreSQL's row locks here)."""
    if request.node.get_closest_marker("outbox") is None:
        return
    settings = request.getfixturevalue("settings")
    settings.RECALL = {**settings.RECALL, "INDEX_IN_TRANSACTION": False}
    request.getfixturevalue("monkeypatch").setenv("RECALL_INDEX_IN_TRANSACTION", "0")
