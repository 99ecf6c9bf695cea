"""Django's PostgreSQL backend with a first connection that says why it failed.

With Django's psycopg pool, a DATABASE_URL naming a missing database, a
wrong password or a server that is down waited the pool's whole timeout
(20 s) and then said only "couldn't get a connection after 20.00 sec".
`base.DatabaseWrapper` connects once directly before a process first uses
the pool: a failure is then `DatabaseUnreachable` at once, carrying the
server's own words ('database "recal" does not exist'), and `manage.py`
prints it as one line. `DATABASE_URL` selects this backend
(`console.database_url.POSTGRES_ENGINE`).
"""

from __future__ import annotations

from django.db.utils import OperationalError


class DatabaseUnreachable(OperationalError):
    """The database a process was configured with cannot be connected to."""


def unreachable() -> str | None:
    """Why the configured database cannot be connected to, in one line (None: it can):
    what a server says before it starts and an index command before it blames a plane."""
    from django.db import connections  # settings are loaded by then

    try:
        connections["default"].ensure_connection()
    except DatabaseUnreachable as exc:  # the pool's probe names the database
        return str(exc)
    except OperationalError as exc:  # no pool (RECALL_DB_POOL_SIZE=0)
        return "cannot connect to the database: " + " ".join(str(exc).split())
    return None
