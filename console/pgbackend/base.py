"""`DatabaseWrapper`: Django's PostgreSQL wrapper, probing before its pool (see the package)."""

from __future__ import annotations

import threading
from typing import Any, ClassVar

import psycopg
from django.db.backends.postgresql import base

from console.pgbackend import DatabaseUnreachable

PROBE_TIMEOUT_S = 20  # libpq's connect_timeout for the probe when the URL sets none


class DatabaseWrapper(base.DatabaseWrapper):
    """Connects once without the pool before the first pooled connection of a process."""

    _probed: ClassVar[set[str]] = set()  # "host/port/name" this process reached
    _probing = threading.Lock()

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        if self.pool:
            self._probe(conn_params)
        return super().get_new_connection(conn_params)

    def _probe(self, conn_params: dict[str, Any]) -> None:
        where = "/".join(str(conn_params.get(k, "")) for k in ("host", "port", "dbname"))
        if where in self._probed:
            return
        with self._probing:
            if where in self._probed:
                return
            params = {"connect_timeout": PROBE_TIMEOUT_S, **conn_params}
            try:
                psycopg.connect(**params).close()
            except psycopg.OperationalError as exc:
                name = conn_params.get("dbname", "")
                cause = " ".join(str(exc).split())
                raise DatabaseUnreachable(
                    f"cannot connect to the database {name!r}: {cause}"
                ) from exc
            self._probed.add(where)
