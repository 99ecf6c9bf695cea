"""DATABASE_URL -> Django's DATABASES entry (console/database_url.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from console import database_url
from console.pgplanes import conninfo
from tests import pg

ROOT = Path(__file__).resolve().parents[2]


def test_a_postgres_url_becomes_a_pooled_psycopg_entry() -> None:
    entry = database_url.parse("postgres://app:s%40cret@db.internal:6432/recall?sslmode=require")

    assert entry["ENGINE"] == "console.pgbackend"
    assert (entry["NAME"], entry["USER"], entry["PASSWORD"]) == ("recall", "app", "s@cret")
    assert (entry["HOST"], entry["PORT"]) == ("db.internal", "6432")
    assert entry["OPTIONS"]["sslmode"] == "require"
    assert entry["OPTIONS"]["pool"] == {"min_size": 1, "max_size": 8, "timeout": 20}
    assert entry["CONN_MAX_AGE"] == 0  # Django refuses persistent connections with a pool


def test_without_a_pool_connections_persist() -> None:
    entry = database_url.parse("postgresql://u@h/d", pool_size=0, conn_max_age=30)

    assert "pool" not in entry["OPTIONS"]
    assert entry["CONN_MAX_AGE"] == 30


def test_a_unix_socket_directory_comes_from_the_query() -> None:
    entry = database_url.parse("postgresql://postgres:@/postgres?host=/tmp/pg")

    assert (entry["NAME"], entry["HOST"], entry["PASSWORD"]) == ("postgres", "/tmp/pg", "")
    assert "host" not in entry["OPTIONS"]


@pytest.mark.parametrize(
    ("url", "name"),
    [("sqlite:///var/recall.sqlite3", Path("var/recall.sqlite3")),
     ("sqlite:////srv/recall.sqlite3", Path("/srv/recall.sqlite3"))],
)  # fmt: skip
def test_sqlite_urls(url: str, name: Path) -> None:
    assert database_url.parse(url) == {"ENGINE": "console.sqlitebackend", "NAME": name}


@pytest.mark.parametrize("url", ["mysql://u@h/d", "postgres://u:pw@h", "sqlite://", "nonsense"])
def test_bad_urls_are_refused_without_showing_the_password(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        database_url.parse(url)

    assert ":pw@" not in str(caught.value)


def test_the_planes_connect_with_the_same_parameters_minus_djangos_own() -> None:
    entry = database_url.parse("postgres://app:pw@db:5433/recall?sslmode=require")

    assert conninfo(entry) == "dbname=recall user=app password=pw host=db port=5433 sslmode=require"


def test_the_postgresql_planes_need_a_postgresql_database(settings: Any) -> None:
    from django.db import connection

    from console.checks import recall_settings

    backends = settings.RECALL["BACKENDS"]
    settings.RECALL = {
        **settings.RECALL,
        "BACKENDS": {**backends, "TEXT_INDEX": {"BACKEND": "console.pgplanes.DjangoPgTextIndex"}},
    }

    found = [e.id for e in recall_settings()]

    assert ("recall.E008" in found) == (connection.vendor != "postgresql")


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (("/postgres?", "/no_such_db?"), 'database "no_such_db" does not exist'),
        (("postgres:@", "nobody:@"), 'role "nobody" does not exist'),
    ],
)
def test_a_database_that_cannot_be_reached_is_one_line_naming_why(
    change: tuple[str, str], said: str, tmp_path: Path
) -> None:
    """Not the pool's "couldn't get a connection after 20.00 sec" after waiting for it,
    with a traceback: the server's own reason, at the first connection."""
    url = pg.database_url()
    assert change[0] in url
    env = {**os.environ, "DATABASE_URL": url.replace(*change), "RECALL_DATA_DIR": str(tmp_path)}

    # index_status and sync_indexes named each plane and advised the vector extension
    # and sync_indexes itself, the command failing (an operator's walk).
    for command in ("migrate", "index_status", "sync_indexes"):
        run = subprocess.run(
            [sys.executable, "manage.py", command], cwd=ROOT, env=env, capture_output=True,
            text=True, timeout=120,
        )  # fmt: skip

        assert run.returncode == 1, (command, run.stderr)
        last = run.stderr.strip().splitlines()[-1]
        assert "cannot connect to the database" in last, (command, run.stderr)
        assert said in last and "Traceback" not in run.stderr, (command, run.stderr)
