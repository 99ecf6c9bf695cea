"""Concurrent agent writes against the production server (issue 16's first row).

The `speed-writers` job starts what `make serve` starts, on the speed bench's
deployment and a free port: gunicorn (console/gunicorn.conf.py, 2 workers x
4 threads, preloaded) and `manage.py index_worker`, with writes answered at
commit (RECALL_SYNC_ON_COMMIT=0). `writers` client threads then POST
/api/v1/memories, each write on a connection of its own (so the kernel spreads
them over gunicorn's workers), until `writes` memories are written (after a
few untimed writes per thread: the workers warm up in the background).
Measured:
- each write's time as the agent sees it (request sent to reply read) and
  the errors (any answer but 201, or a failed connection);
- each acknowledged write's index lag: from its reply to the moment its index
  job left the outbox (the worker applied it to both planes), polled every
  `POLL_S`, so the figures are rounded up to that;
- after the outbox is empty and the vector copies' poll has passed: every
  acknowledged write found by a full-text Search through the API (each write
  carries a word of its own), and `selectors.index_status()`'s drift.

The writers above are a closed loop: each sends its next write the moment the
last one is answered, so the figures are those of a server kept saturated (on
2 cores about 80 writes/s, each embedded once for its dedup hint and once more
by the index worker, so a write's time is mostly its wait for a core). The
`paced` row then measures what a write costs when the server keeps up: the
same writers, each sending `PACED_PER_S` writes a second on a fixed schedule
(staggered between writers), `PACED_WRITES` in all (fewer when the closed
loop wrote fewer). A write's time there is counted from when it was due, not
when it was sent, so a server that falls behind shows in it (no coordinated
omission).
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

POLL_S = 0.025  # how often the outbox is read for the lag
WARM_WRITES = 5  # untimed writes per thread before the timed ones
SETTLE_S = 1.0  # after the outbox empties: the vector copies' poll (0.2 s) and more
DRAIN_TIMEOUT_S = 300.0
READY_TIMEOUT_S = 120.0
PACED_PER_S = 5.0  # each paced writer's writes a second: 40 a second for 8 writers
PACED_WRITES = 400


def run(spec: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The job: serve, write, measure, stop (see the module docstring)."""
    from django.conf import settings

    from console import selectors, services, tokens

    writes, writers = int(spec["writes"]), int(spec["writers"])
    pairs = json.loads(Path(spec["workload"]).read_text())["pairs"]
    texts = [text for text, _ in pairs] or ["a memory the bench writes"]
    project = services.project_get_or_create(slug="bench-writers")
    _, secret = tokens.token_create(agent="bench-writers", projects=[project.slug], may_write=True)
    drift_before = selectors.index_status().drift
    port = _free_port()
    base = Path(settings.BASE_DIR)
    env = {**os.environ, "RECALL_SYNC_ON_COMMIT": "0"}
    log = (root / "writers-server.log").open("wb")
    gunicorn = Path(sys.executable).with_name("gunicorn")
    server = subprocess.Popen(
        [str(gunicorn), "console.wsgi:application", "--config", "console/gunicorn.conf.py",
         "--bind", f"127.0.0.1:{port}", "--workers", "2", "--threads", "4", "--preload"],
        cwd=base, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "index_worker"],
        cwd=base, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    client = _Client(port, secret, project.slug, run=secrets.token_hex(3), texts=texts)
    try:
        _wait_ready(client, server)
        client.write_all(writers * WARM_WRITES, writers)  # untimed: the workers warm up
        client.results.clear()
        lag = _Lag()
        lag.start()
        started = time.perf_counter()
        client.write_all(writes, writers, on_ack=lag.acked)
        seconds = time.perf_counter() - started
        drained = lag.finish(DRAIN_TIMEOUT_S)
        time.sleep(SETTLE_S)
        found = client.findable()
        figures = _figures(client.results, lag, seconds, found, drained, writers)
        paced = _paced(client, min(writes, PACED_WRITES), writers)
        return figures | {"drift_before": drift_before, "paced": paced}
    finally:
        _stop(server, worker)
        log.close()


def _paced(client: _Client, writes: int, writers: int) -> dict[str, Any]:
    """The `paced` row (module docstring): its writes' times and index lag."""
    from console.bench.metrics import percentiles

    client.results.clear()
    lag = _Lag()
    lag.start()
    started = time.perf_counter()
    client.write_all(writes, writers, on_ack=lag.acked, every=1 / PACED_PER_S)
    seconds = time.perf_counter() - started
    drained = lag.finish(DRAIN_TIMEOUT_S)
    ms = [r[0] for r in client.results if r[2] is None]
    return {
        "per_writer_per_s": PACED_PER_S,
        "writes": len(client.results),
        "errors": sum(r[2] is not None for r in client.results),
        "per_s": round(len(client.results) / seconds, 1),
        "write_ms": percentiles(ms) if ms else None,
        "lag_ms": percentiles(lag.lags) if lag.lags else None,
        "drained": drained,
    }


def _figures(
    results: Sequence[tuple[float, str | None, str | None]],
    lag: _Lag,
    seconds: float,
    found: tuple[int, int],
    drained: bool,
    writers: int,
) -> dict[str, Any]:
    from console import selectors
    from console.bench.metrics import percentiles

    ms = [r[0] for r in results if r[2] is None]
    errors = [r[2] for r in results if r[2] is not None]
    status = selectors.index_status()
    return {
        "writers": writers,
        "writes": len(results),
        "errors": len(errors),
        "first_errors": errors[:3],
        "per_s": round(len(results) / seconds, 1),
        "write_ms": percentiles(ms) if ms else None,
        "lag_ms": percentiles(lag.lags) if lag.lags else None,
        "lag_unseen": lag.unseen(),
        "drained": drained,
        "findable": found[0],
        "acknowledged": found[1],
        "pending_jobs": status.pending,
        "drift": status.drift,
        "server": "gunicorn, 2 workers x 4 threads, --preload; manage.py index_worker; "
        "a connection per write",
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(client: _Client, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode} before it served")
        try:
            if client.get("/api/v1/search", {"q": "warm", "semantic": "false"})[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"gunicorn did not answer within {READY_TIMEOUT_S} s")


def _stop(*processes: subprocess.Popen[bytes]) -> None:
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _word(n: int) -> str:
    """A word of letters no corpus word is: each write's own, to find it by."""
    letters = ""
    while True:
        n, at = divmod(n, 26)
        letters += "abcdefghijklmnopqrstuvwxyz"[at]
        if n == 0:
            return "qzx" + letters


class _Client:
    """The agents: POST /api/v1/memories from several threads, results kept in order."""

    def __init__(self, port: int, secret: str, project: str, *, run: str, texts: Sequence[str]):
        self.port, self.project, self.run, self.texts = port, project, run, texts
        self.headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        self.results: list[tuple[float, str | None, str | None]] = []  # (ms, id, error)
        self.words: dict[str, str] = {}  # memory id -> its word
        self._next = 0
        self._lock = threading.Lock()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)

    def get(self, path: str, query: Mapping[str, str]) -> tuple[int, bytes]:
        connection = self._connect()
        try:
            connection.request("GET", f"{path}?{urlencode(query)}", headers=self.headers)
            reply = connection.getresponse()
            return reply.status, reply.read()
        finally:
            connection.close()

    def write_all(
        self,
        total: int,
        writers: int,
        on_ack: Callable[[str], None] | None = None,
        every: float = 0.0,
    ) -> None:
        """`total` writes from `writers` threads: each sends its next write when its last
        is answered, or (`every` > 0) on a schedule of one each `every` seconds, the
        writers staggered, a write's time counted from when it was due."""
        with self._lock:
            end = self._next + total
        start = time.perf_counter()
        threads = [
            threading.Thread(
                target=self._writer,
                args=(
                    end,
                    on_ack,
                    _schedule(start + i * every / writers, every) if every else None,
                ),
            )
            for i in range(writers)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def _take(self, end: int) -> int | None:
        with self._lock:
            if self._next >= end:
                return None
            self._next += 1
            return self._next - 1

    def _writer(
        self, end: int, on_ack: Callable[[str], None] | None, due: Iterator[float] | None
    ) -> None:
        """Each write on a connection of its own: with 8 kept-alive connections the two
        workers' shares were left to chance (one served 36 s of CPU and the other 7 in
        one run, 20 and 23 in the next), and the runs fell in two camps (write p50
        about 90 or about 45 ms, index lag p95 about 1.0 or 1.6-2.7 s)."""
        while (n := self._take(end)) is not None:
            word = _word(n)
            text = self.texts[n % len(self.texts)]
            body = json.dumps({
                "project": self.project, "name": f"writer-{self.run}-{n}", "kind": "fact",
                "description": f"{text[:150]} {word}", "force": True,
            })  # fmt: skip
            started = time.perf_counter()
            if due is not None:
                started = next(due)
                time.sleep(max(0.0, started - time.perf_counter()))
            connection = self._connect()
            try:
                connection.request("POST", "/api/v1/memories", body, self.headers)
                reply = connection.getresponse()
                content = reply.read()
            except (OSError, http.client.HTTPException) as exc:
                self._keep((time.perf_counter() - started) * 1000, None, repr(exc))
                continue
            finally:
                connection.close()
            ms = (time.perf_counter() - started) * 1000
            if reply.status != 201:
                self._keep(ms, None, f"{reply.status} {content[:200]!r}")
                continue
            memory_id = json.loads(content)["memory"]["id"]
            if on_ack is not None:
                on_ack(memory_id)
            with self._lock:
                self.words[memory_id] = word
            self._keep(ms, memory_id, None)

    def _keep(self, ms: float, memory_id: str | None, error: str | None) -> None:
        with self._lock:
            self.results.append((ms, memory_id, error))

    def findable(self) -> tuple[int, int]:
        """(acknowledged writes a full-text Search finds by their word, acknowledged)."""
        acked = [r[1] for r in self.results if r[1] is not None]
        found = 0
        for memory_id in acked:
            query = {"q": self.words[memory_id], "semantic": "false", "project": self.project}
            status, content = self.get("/api/v1/search", query)
            if status == 200 and memory_id in {h["id"] for h in json.loads(content)["hits"]}:
                found += 1
        return found, len(acked)


class _Lag:
    """Each acknowledged write's time until its index job left the outbox."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._waiting: dict[str, float] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="writers-lag", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def acked(self, memory_id: str) -> None:
        with self._lock:
            self._waiting[memory_id] = time.perf_counter()

    def unseen(self) -> int:
        with self._lock:
            return len(self._waiting)

    def finish(self, timeout: float) -> bool:
        """Wait until every acknowledged write's job is applied (or `timeout`); True if so."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.unseen():
            time.sleep(POLL_S)
        self._done.set()
        self._thread.join()
        return self.unseen() == 0

    def _poll(self) -> None:
        from django.db import connection

        from console.models import IndexJob

        try:
            while not self._done.is_set():
                with self._lock:
                    waiting = list(self._waiting)
                if waiting:
                    queued = set(
                        IndexJob.objects.filter(item_id__in=waiting).values_list(
                            "item_id", flat=True
                        )
                    )
                    now = time.perf_counter()
                    with self._lock:
                        for memory_id in waiting:
                            if memory_id not in queued:
                                acked = self._waiting.pop(memory_id)
                                self.lags.append((now - acked) * 1000)
                time.sleep(POLL_S)
        finally:
            connection.close()


def summary(b: Mapping[str, Any]) -> str:
    """One line for the speed tables."""
    return (
        f"{b['writers']} concurrent writers, {b['writes']} POST /memories ({b['server']}): "
        f"{_said(b.get('write_ms'), 'p50', 'p95', 'p99')} ms, "
        f"{b['per_s']} writes/s, {b['errors']} errors{_first(b)}; index lag (reply to job "
        f"applied, read every {int(POLL_S * 1000)} ms) {_said(b.get('lag_ms'), 'p50', 'p95')} "
        f"ms; findable by full-text Search {b['findable']} of "
        f"{b['acknowledged']}; pending jobs {b['pending_jobs']}, drift {b['drift']} "
        f"(before the writes {b.get('drift_before', '-')}){_paced_line(b.get('paced'))}"
    )


def _paced_line(paced: Mapping[str, Any] | None) -> str:
    if not paced:
        return ""
    return (
        f"; paced, each writer {paced['per_writer_per_s']:g} writes/s ({paced['writes']} "
        f"writes, {paced['per_s']} writes/s in all): "
        f"{_said(paced.get('write_ms'), 'p50', 'p95', 'p99')} ms from when due, "
        f"{paced['errors']} errors, index lag {_said(paced.get('lag_ms'), 'p50', 'p95')} ms"
    )


def _said(figures: Mapping[str, Any] | None, *quantiles: str) -> str:
    """'p50 1.2 / p95 3.4': the quantiles asked ('-' where missing)."""
    return " / ".join(f"{q} {(figures or {}).get(q, '-')}" for q in quantiles)


def _schedule(first: float, every: float) -> Iterator[float]:
    """When a paced writer's writes are due: `first`, then one each `every` seconds."""
    k = 0
    while True:
        yield first + k * every
        k += 1


def _first(b: Mapping[str, Any]) -> str:
    return f" (first: {b['first_errors']})" if b.get("first_errors") else ""
