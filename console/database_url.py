"""`DATABASE_URL` to a Django `DATABASES` entry (read by settings, so no Django imports).

Accepted: `postgres://` or `postgresql://user:password@host:port/name?opt=v`
(a Unix socket directory as `?host=/path`, any other query option passed to
libpq, e.g. `sslmode=require`), and `sqlite:///relative/path`,
`sqlite:////absolute/path`. A PostgreSQL entry uses psycopg 3 with its
connection pool (`pool_size` connections per process at most; 0 = no pool,
one connection per thread kept `conn_max_age` seconds).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

POSTGRES_ENGINE = "console.pgbackend"  # Django's, saying why a first connection failed
SQLITE_ENGINE = "console.sqlitebackend"  # Django's, reading moments aware in one parse


def parse(url: str, *, pool_size: int = 8, conn_max_age: int = 60) -> dict[str, Any]:
    """The `DATABASES["default"]` entry for `url` (ValueError names what is wrong)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "sqlite":
        name = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        if not name:
            raise ValueError(f"a sqlite URL needs a path (sqlite:///var/recall.sqlite3): {url!r}")
        return {"ENGINE": SQLITE_ENGINE, "NAME": Path(name)}
    if scheme not in {"postgres", "postgresql", "pgsql"}:
        raise ValueError(f"DATABASE_URL must be postgres://... or sqlite:///...: {_hidden(url)!r}")
    if pool_size < 0:
        raise ValueError(f"the pool size must be >= 0, got {pool_size}")
    options: dict[str, Any] = dict(parse_qsl(parts.query))
    host = options.pop("host", "") or unquote(parts.hostname or "")
    name = unquote(parts.path.lstrip("/")) or options.pop("dbname", "")
    if not name:
        raise ValueError(f"DATABASE_URL names no database: {_hidden(url)!r}")
    entry: dict[str, Any] = {
        "ENGINE": POSTGRES_ENGINE,
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(parts.port or options.pop("port", "") or ""),
        "CONN_HEALTH_CHECKS": True,
    }
    if pool_size:
        # Django's psycopg pool: a thread borrows a connection per request and
        # returns it; persistent connections are then off (Django refuses both).
        options["pool"] = {"min_size": 1, "max_size": pool_size, "timeout": 20}
        entry["CONN_MAX_AGE"] = 0
    else:
        entry["CONN_MAX_AGE"] = conn_max_age
    entry["OPTIONS"] = options
    return entry


def _hidden(url: str) -> str:
    """The URL without its password (for error messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    return url.replace(f":{parts.password}@", ":***@", 1)
