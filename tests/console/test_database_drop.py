"""A request on a connection the database server dropped (a restart, a failover)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.db import close_old_connections, connection, connections

from tests.console.api_world import build_world, call


@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_answers_503_and_the_next_call_reconnects(
    planes: Path,
) -> None:
    """It answered 500 "server_error" (an unexpected crash, to an agent), though trying
    again is all it takes."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no server to drop a connection (the PostgreSQL pass runs this)")
    world = build_world()
    alpha = world.client("alpha")
    assert call(alpha, "post", "/recall", {"query": "deploy"}).status_code == 200
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        (pid,) = cur.fetchone()
    other = connections.create_connection("default")
    with other.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    other.close()

    dropped: Any = call(alpha, "post", "/recall", {"query": "deploy"})
    close_old_connections()  # a server does at each request's end (the test client does not)
    again = call(alpha, "post", "/recall", {"query": "deploy"})

    assert dropped.status_code == 503, dropped.content
    assert dropped.json()["detail"] == "the database cannot be used just now; try again shortly"
    assert again.status_code == 200
