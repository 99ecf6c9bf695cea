"""The SQLite backend reads stored moments aware, as Django's own conversion would."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils.dateparse import parse_datetime

from console.sqlitebackend.base import DatabaseWrapper, moment


def wrapper(path: Path, **extra: Any) -> DatabaseWrapper:
    settings = {
        "NAME": str(path),
        "OPTIONS": {},
        "TIME_ZONE": None,
        "AUTOCOMMIT": True,
        "ATOMIC_REQUESTS": False,
        "CONN_MAX_AGE": 0,
        "CONN_HEALTH_CHECKS": False,
        "TEST": {},
        **extra,
    }
    return DatabaseWrapper(settings, alias="moments")


@pytest.mark.parametrize(
    "stored",
    [
        "2026-12-05 21:45:27.123456",  # as Django writes a moment with USE_TZ
        "2026-12-05 21:45:27",
        "2026-12-05 21:45:27+00:00",
        "2026-12-05T23:45:27.5+02:00",
        "2026-12-05 21:45:27Z",
        "2026-12-05 21:45:27,123",  # a comma fraction only Django's parser reads
    ],
)
def test_a_stored_moment_reads_as_djangos_conversion_gives_it(stored: str) -> None:
    django = parse_datetime(stored)
    assert django is not None
    expected = django if django.tzinfo else django.replace(tzinfo=UTC)

    read = moment(stored.encode())

    assert read == expected
    assert read is not None and read.utcoffset() == expected.utcoffset()


def test_text_that_is_no_moment_reads_as_none() -> None:
    assert moment(b"yesterday") is None


def test_a_datetime_column_comes_back_aware_from_the_driver(tmp_path: Path) -> None:
    """The driver itself gives the zone: no `replace(tzinfo=...)` after it."""
    db = wrapper(tmp_path / "moments.sqlite3")
    raw = db.get_new_connection(db.get_connection_params())  # the driver's, as Django opens it
    try:
        raw.execute("CREATE TABLE t (at datetime)")
        raw.execute("INSERT INTO t VALUES ('2026-12-05 21:45:27.123456')")
        (read,) = raw.execute("SELECT at FROM t").fetchone()
    finally:
        raw.close()

    assert read == datetime(2026, 12, 5, 21, 45, 27, 123456, tzinfo=UTC)
    assert read.tzinfo is not None


def test_a_database_in_another_zone_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured, match="reads stored moments as UTC"):
        wrapper(tmp_path / "paris.sqlite3", TIME_ZONE="Europe/Paris")
