"""Many writers on the PostgreSQL profile: no error, every write findable at once, none lost.

    .venv/bin/python tests/bench/pg_write_load.py [--writes 5000] [--writers 8] [--readers 8]
        [--workers 4] [--threads 4] [--kills 20] [--keep]

The PostgreSQL twin of tests/bench/write_load.py (whose pieces it reuses),
over a fresh database on RECALL_TEST_DATABASE_URL's server or a private
PostgreSQL 18 + pgvector (tests/pg.py); loopback or a Unix socket only.

1. **Load.** `make serve`'s gunicorn command at `--workers` x `--threads`;
   `--writers` threads send `POST /api/v1/memories`, each write carrying a
   word no other write has. As each write is answered 201, one of
   `--readers` threads asks for it at once: `GET /api/v1/search` for its
   word (the full-text plane through the API), and its rows in the text and
   vector tables read straight from the database on a connection of its own.
   The plane rows commit in the row's transaction, so there is no "later":
   any miss is a failure.
2. **SIGKILL trials.** The same load while a serving worker is SIGKILLed
   `--kills` times, spread over the run (gunicorn starts a new one). Requests
   the killed worker held fail; every write answered 201 must then be in the
   database and in both planes, and no plane may hold a row the database
   lacks (a killed transaction leaves nothing half-written).

After each phase every plane is counted directly (rows and distinct ids),
`index_status` must report no drift and no index job may be queued. Exits 1
on any error, miss, loss, duplicate or drift.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import random
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import pg  # noqa: E402
from tests.bench.load_api import percentile  # noqa: E402
from tests.bench.write_load import (  # noqa: E402
    PROJECT,
    Tally,
    kill_workers,
    planes,
    post_write,
    prepare,
    write_body,
)
from tests.console import api_server  # noqa: E402


@dataclass
class Reads:
    checked: int = 0
    misses: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def marker(tag: str, n: int) -> str:
    """A word only this write contains (letters and digits: one word to every plane)."""
    return f"mark{tag}{n}x"


def write_and_read(
    port: int, secrets: list[str], total: int, tag: str, readers: int, dsn: str
) -> tuple[Tally, Reads]:
    """`total` writes from one thread per secret; each acknowledged one read back at once."""
    tally, reads = Tally(), Reads()
    plan = iter(range(total))
    plan_lock = threading.Lock()
    acked: queue.Queue[tuple[str, str] | None] = queue.Queue()

    def writer(secret: str, seed: int) -> None:
        rng = random.Random(seed)
        conn: http.client.HTTPConnection | None = None
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        while True:
            with plan_lock:
                n = next(plan, None)
            if n is None:
                return
            word = marker(tag, n)
            conn, memory_id = post_write(conn, port, headers, write_body(tag, n, rng, word), tally)
            if memory_id is not None:
                acked.put((memory_id, word))

    def reader(secret: str) -> None:
        http_conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        headers = {"Authorization": f"Bearer {secret}"}
        with psycopg.connect(dsn, autocommit=True) as db:
            while (job := acked.get()) is not None:
                memory_id, word = job
                started = time.perf_counter()
                query = urllib.parse.urlencode(
                    {"q": word, "project": PROJECT, "semantic": "false", "limit": 5}
                )
                problem = ""
                try:
                    http_conn.request("GET", f"/api/v1/search?{query}", headers=headers)
                    reply = http_conn.getresponse()
                    hits = json.loads(reply.read()).get("hits", [])
                    if reply.status != 200 or memory_id not in [h["id"] for h in hits]:
                        problem = f"search for {word} (HTTP {reply.status}) missed {memory_id}"
                except (OSError, http.client.HTTPException) as exc:  # its worker was killed
                    http_conn.close()
                    http_conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                    problem = f"search for {word} failed: {exc}"[:200]
                text, vector = db.execute(
                    "SELECT (SELECT count(*) FROM recall_text WHERE id = %s),"
                    " (SELECT count(*) FROM recall_vectors WHERE id = %s)",
                    (memory_id, memory_id),
                ).fetchone() or (0, 0)
                if (text, vector) != (1, 1):
                    problem += f" {memory_id}: {text} text rows, {vector} vector rows"
                with reads.lock:
                    reads.checked += 1
                    reads.latencies.append((time.perf_counter() - started) * 1000)
                    if problem:
                        reads.misses.append(problem.strip())

    writers = [threading.Thread(target=writer, args=(s, i)) for i, s in enumerate(secrets)]
    reading = [threading.Thread(target=reader, args=(secrets[0],)) for _ in range(readers)]
    for t in [*writers, *reading]:
        t.start()
    for t in writers:
        t.join()
    for _ in reading:
        acked.put(None)
    for t in reading:
        t.join()
    return tally, reads


def orphans(dsn: str) -> tuple[int, int]:
    """Plane rows whose database row does not exist (text, vectors)."""
    with psycopg.connect(dsn) as db:
        found = db.execute(
            "SELECT (SELECT count(*) FROM recall_text t WHERE NOT EXISTS"
            " (SELECT 1 FROM console_memory m WHERE m.id = t.id)),"
            " (SELECT count(*) FROM recall_vectors v WHERE NOT EXISTS"
            " (SELECT 1 FROM console_memory m WHERE m.id = v.id))"
        ).fetchone()
    return (int(found[0]), int(found[1])) if found else (0, 0)


def report(name: str, data_dir: Path, dsn: str, tally: Tally, reads: Reads, wall: float) -> bool:
    counted = planes(data_dir)
    stored = set(counted.pop("ids"))  # type: ignore[arg-type]
    lost = [i for i in tally.acknowledged if i not in stored]
    duplicates = (counted["text_rows"] - counted["text_ids"]) + (  # type: ignore[operator]
        counted["vector_rows"] - counted["vector_ids"]  # type: ignore[operator]
    )
    stray = orphans(dsn)
    acked, lat = len(tally.acknowledged), tally.latencies
    print(f"\n{name}: {acked} acknowledged, {len(tally.failed)} failed requests, {wall:.1f} s")
    if lat:
        print(
            f"  write latency p50 {percentile(lat, 50):.1f} ms, p95 {percentile(lat, 95):.1f} ms,"
            f" p99 {percentile(lat, 99):.1f} ms; {acked / wall:.0f} writes/s"
        )
    if reads.latencies:
        print(
            f"  read-back of each write at once: {reads.checked} checked, {len(reads.misses)} "
            f"missed; p50 {percentile(reads.latencies, 50):.1f} ms"
        )
    for problem in [*sorted(set(tally.failed))[:3], *reads.misses[:3]]:
        print(f"  e.g. {problem}")
    print(
        f"  database {counted['rows']} memories; full text {counted['text_rows']} rows / "
        f"{counted['text_ids']} ids; vectors {counted['vector_rows']} rows / "
        f"{counted['vector_ids']} ids; index jobs queued {counted['pending']}; "
        f"drift {counted['drift']}; plane rows without a memory {stray[0]} + {stray[1]}"
    )
    print(f"  acknowledged but lost: {len(lost)}; duplicate plane rows: {duplicates}")
    return (
        not lost
        and duplicates == 0
        and counted["drift"] == 0
        and counted["pending"] == 0
        and stray == (0, 0)
        and counted["text_ids"] == counted["vector_ids"] == counted["rows"]
    )


def run_phase(
    data_dir: Path, secrets: list[str], args: argparse.Namespace, tag: str, kills: int, dsn: str
) -> tuple[Tally, Reads, float, int]:
    """One phase under a fresh gunicorn: (writes, read-backs, seconds, workers killed)."""
    with api_server.gunicorn_process(
        data_dir, workers=args.workers, threads=args.threads, log=data_dir / f"{tag}.log"
    ) as (base, master):
        done = threading.Event()
        made: list[int] = []
        killer = threading.Thread(
            target=lambda: made.append(kill_workers(master, kills, done, every=(0.5, 2.5)))
        )
        started = time.perf_counter()
        killer.start()
        tally, reads = write_and_read(
            int(base.rsplit(":", 1)[1]), secrets, args.writes, tag, args.readers, dsn
        )
        done.set()
        killer.join()
        wall = time.perf_counter() - started
    return tally, reads, wall, made[0]


def fresh_database(server: str) -> str:
    """A new, empty database on the server; its URL."""
    name = f"recall_load_{os.getpid()}_{int(time.time())}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urllib.parse.urlsplit(server)
    return urllib.parse.urlunsplit(parts._replace(path=f"/{name}"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=5000)
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--readers", type=int, default=8)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()

    dsn = fresh_database(pg.database_url())
    os.environ.update({"DATABASE_URL": dsn, "RECALL_PROFILE": "postgres"})
    os.environ.pop("RECALL_DATABASE_URL", None)
    data_dir = Path(tempfile.mkdtemp(prefix="recall-pg-writes-"))
    print(f"database {urllib.parse.urlsplit(dsn).path[1:]}, data directory {data_dir}")
    try:
        secrets = prepare(data_dir, args.writers)
        results = []
        phases = [("load", 0), ("kills", args.kills)] if args.kills else [("load", 0)]
        for tag, kills in phases:
            tally, reads, wall, made = run_phase(data_dir, secrets, args, tag, kills, dsn)
            shape = f"{args.writes} writes, {args.writers} writers, {args.readers} readers, "
            shape += f"{args.workers} workers x {args.threads} threads"
            if tag == "load":
                ok = report(f"load ({shape})", data_dir, dsn, tally, reads, wall)
                results.append(ok and not tally.failed and not reads.misses)
            else:
                name = f"SIGKILL trials ({made} serving workers killed mid-run; {shape})"
                kill_misses = [m for m in reads.misses if "failed:" not in m]
                ok = report(name, data_dir, dsn, tally, reads, wall)
                results.append(ok and made == kills and not kill_misses)
        print("\nall phases clean" if all(results) else "\nFAILED: see above")
        return 0 if all(results) else 1
    finally:
        if not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
