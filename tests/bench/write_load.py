"""Concurrent writes against the production server: no duplicate plane rows, no lost write.

    .venv/bin/python tests/bench/write_load.py [--writes 2000] [--clients 8] [--workers 4]
        [--worker-kills 50] [--index-kills 20] [--data-dir DIR] [--keep]

Three phases over one fresh data directory (loopback only):

1. **Load.** As `make serve` runs: gunicorn at `--workers` workers x 4 threads
   with writes returning at commit, and `manage.py index_worker` beside it
   applying the queued jobs. `--clients` threads, each with its own write
   token, send `POST /api/v1/memories` (distinct texts, so every write
   creates a row). A probe writes a memory with a unique word every half
   second and searches for it until it is found: the index lag.
2. **Serving-worker kills.** The same load again while a gunicorn worker is
   SIGKILLed `--worker-kills` times (gunicorn starts a new one). A request the
   killed worker was serving fails; every write that was answered 201 must
   be in the database.
3. **Index-worker kills.** With applying on commit switched off, writes queue
   jobs while `manage.py index_worker` runs and is SIGKILLed `--index-kills`
   times (restarted after each kill); the script prints how many jobs the
   killed worker held claimed.

After each phase: the queue is drained (`sync_indexes`), then every plane is
counted directly (rows and distinct ids in tantivy and in the LanceDB table)
and `index_status` must report no drift. Prints the figures; exits 1 when any
acknowledged write is missing, any plane holds a duplicate row, or any drift
remains.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.bench.load_api import WORDS, percentile  # noqa: E402
from tests.console import api_server  # noqa: E402

PROJECT = "alpha"

COUNT_PLANES = """
import json
from collections import Counter
from console import indexing, wiring
from console.models import IndexJob, Memory
text = Counter(i for i, _ in wiring.text_index().fingerprints())
vectors = Counter(i for i, _ in wiring.vector_index().fingerprints())
status = indexing.status()
print(json.dumps({
    "rows": Memory.objects.count(),
    "ids": sorted(Memory.objects.values_list("pk", flat=True)),
    "text_rows": sum(text.values()), "text_ids": len(text),
    "vector_rows": sum(vectors.values()), "vector_ids": len(vectors),
    "pending": IndexJob.objects.count(), "drift": status.drift,
}))
"""


DEFERRED = {"RECALL_SYNC_ON_COMMIT": "0"}  # writes return at commit; the worker applies


@contextlib.contextmanager
def index_worker(data_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """`manage.py index_worker` beside the server, as `make serve` starts it."""
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "index_worker"],
        cwd=ROOT,
        env=api_server.environment(data_dir, **DEFERRED),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert worker.stdout is not None
        worker.stdout.readline()  # started
        yield worker
    finally:
        worker.terminate()
        worker.wait(timeout=60)


def probe_lag(port: int, secret: str, done: threading.Event, lags: list[float]) -> None:
    """Every half second: write a memory with a unique word, then search until it is found."""
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    n = 0
    while not done.wait(0.5):
        n += 1
        word = f"probeword{n}x{random.randrange(10**9)}"
        body = {"project": PROJECT, "kind": "fact", "name": f"probe-{n}",
                "description": f"lag probe {word}"}  # fmt: skip
        try:
            conn.request("POST", "/api/v1/memories", json.dumps(body), headers)
            reply = conn.getresponse()
            reply.read()
            if reply.status != 201:
                continue
            written = time.perf_counter()
            while time.perf_counter() - written < 60:
                conn.request("GET", f"/api/v1/search?q={word}&project={PROJECT}", None, headers)
                hits = json.loads(conn.getresponse().read()).get("hits", [])
                if hits:
                    lags.append((time.perf_counter() - written) * 1000)
                    break
                time.sleep(0.01)
        except (OSError, http.client.HTTPException, ValueError):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)


@dataclass
class Tally:
    acknowledged: list[str] = field(default_factory=list)  # ids answered 201
    failed: list[str] = field(default_factory=list)  # request errors (kills)
    latencies: list[float] = field(default_factory=list)
    lags: list[float] = field(default_factory=list)  # ms from a probe's 201 to its first hit
    lock: threading.Lock = field(default_factory=threading.Lock)


def prepare(data_dir: Path, clients: int) -> list[str]:
    """Migrate, create the project and one write token per client; their secrets."""
    code = (
        "from console import services, tokens\n"
        f"services.project_create(slug='{PROJECT}')\n"
        f"for i in range({clients}):\n"
        f"    print(tokens.token_create(agent=f'writer-{{i}}', projects=['{PROJECT}'],"
        " may_write=True)[1])\n"
    )
    return api_server.run_python(data_dir, code).split()[-clients:]


def write_body(tag: str, n: int, rng: random.Random, tail: str) -> dict[str, str]:
    """Write `n` of a phase: distinct text, so every write creates a row."""
    return {
        "project": PROJECT,
        "kind": "fact",
        "name": f"{tag}-{n}",
        "description": f"{tag} write {n}: " + " ".join(rng.sample(WORDS, 6)),
        "body": " ".join(rng.choice(WORDS) for _ in range(30)) + f" {tail}",
    }


def post_write(
    conn: http.client.HTTPConnection | None,
    port: int,
    headers: dict[str, str],
    body: dict[str, str],
    tally: Tally,
) -> tuple[http.client.HTTPConnection | None, str | None]:
    """POST one memory; tally it. The connection to reuse (None after a failure)
    and the new memory's id (None when the request failed)."""
    started = time.perf_counter()
    try:
        conn = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        conn.request("POST", "/api/v1/memories", json.dumps(body), headers)
        reply = conn.getresponse()
        payload = json.loads(reply.read())
        if reply.status != 201:
            raise RuntimeError(f"HTTP {reply.status}: {payload}")
        memory_id = str(payload["memory"]["id"])
        with tally.lock:
            tally.acknowledged.append(memory_id)
            tally.latencies.append((time.perf_counter() - started) * 1000)
        return conn, memory_id
    except Exception as exc:  # a killed worker drops its connections
        if conn is not None:
            conn.close()
        with tally.lock:
            tally.failed.append(f"{type(exc).__name__}: {exc}"[:200])
        return None, None


def write_all(port: int, secrets: list[str], total: int, tag: str, tally: Tally) -> None:
    """Send `total` writes from one thread per secret."""
    plan = iter(range(total))
    plan_lock = threading.Lock()

    def client(secret: str, seed: int) -> None:
        rng = random.Random(seed)
        conn: http.client.HTTPConnection | None = None
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        while True:
            with plan_lock:
                n = next(plan, None)
            if n is None:
                return
            conn, _ = post_write(
                conn, port, headers, write_body(tag, n, rng, f"({tag} {n})"), tally
            )

    threads = [
        threading.Thread(target=client, args=(secret, i)) for i, secret in enumerate(secrets)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def workers_of(master: subprocess.Popen[bytes]) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(master.pid)], capture_output=True, text=True)
    return [int(pid) for pid in found.stdout.split()]


def kill_workers(
    master: subprocess.Popen[bytes],
    kills: int,
    done: threading.Event,
    every: tuple[float, float] = (2.0, 6.0),  # spread over the run, not its first seconds
) -> int:
    """SIGKILL a random serving worker every `every` seconds while writes run; kills made."""
    rng = random.Random(5)
    made = 0
    while made < kills and not done.is_set():
        time.sleep(rng.uniform(*every))
        pids = workers_of(master)
        if not pids or done.is_set():
            continue
        os.kill(rng.choice(pids), signal.SIGKILL)
        made += 1
    return made


def manage(data_dir: Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=api_server.environment(data_dir, **(env or {})),
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


def planes(data_dir: Path) -> dict[str, object]:
    manage(data_dir, "sync_indexes")
    counted: dict[str, object] = json.loads(
        api_server.run_python(data_dir, COUNT_PLANES).strip().splitlines()[-1]
    )
    return counted


def check(name: str, data_dir: Path, tally: Tally, wall: float) -> bool:
    counted = planes(data_dir)
    stored = set(counted.pop("ids"))  # type: ignore[arg-type]
    lost = [i for i in tally.acknowledged if i not in stored]
    duplicates = (counted["text_rows"] - counted["text_ids"]) + (  # type: ignore[operator]
        counted["vector_rows"] - counted["vector_ids"]  # type: ignore[operator]
    )
    acked = len(tally.acknowledged)
    lat = tally.latencies
    print(f"\n{name}: {acked} acknowledged, {len(tally.failed)} failed requests, {wall:.1f} s")
    if lat:
        print(
            f"  write latency p50 {percentile(lat, 50):.1f} ms, p95 {percentile(lat, 95):.1f} ms,"
            f" p99 {percentile(lat, 99):.1f} ms; {acked / wall:.0f} writes/s"
        )
    if tally.lags:
        lags = tally.lags
        print(
            f"  index lag (write answered -> found by search) p50 {percentile(lags, 50):.0f} ms,"
            f" p95 {percentile(lags, 95):.0f} ms, max {max(lags):.0f} ms ({len(lags)} probes)"
        )
    for problem in sorted(set(tally.failed))[:3]:
        print(f"  e.g. {problem}")
    print(
        f"  database {counted['rows']} memories; full text {counted['text_rows']} rows / "
        f"{counted['text_ids']} ids; vectors {counted['vector_rows']} rows / "
        f"{counted['vector_ids']} ids; pending {counted['pending']}; drift {counted['drift']}"
    )
    print(f"  acknowledged but lost: {len(lost)}; duplicate plane rows: {duplicates}")
    return not lost and duplicates == 0 and counted["drift"] == 0


def under_load(
    data_dir: Path, secrets: list[str], writes: int, workers: int, tag: str, kills: int = 0
) -> tuple[Tally, float, int]:
    """Writes from every client but the last, whose token probes the index lag."""
    tally = Tally()
    made: list[int] = [0]
    log = data_dir / f"{tag}.log"
    with (
        index_worker(data_dir),
        api_server.gunicorn_process(data_dir, workers=workers, log=log, env=DEFERRED) as (
            base,
            master,
        ),
    ):
        port = int(base.rsplit(":", 1)[1])
        done = threading.Event()
        probe = threading.Thread(target=probe_lag, args=(port, secrets[-1], done, tally.lags))
        killer = threading.Thread(
            target=lambda: made.__setitem__(0, kill_workers(master, kills, done))
        )
        started = time.perf_counter()
        probe.start()
        if kills:
            killer.start()
        write_all(port, secrets[:-1], writes, tag, tally)
        done.set()
        probe.join()
        if kills:
            killer.join()
        wall = time.perf_counter() - started
    return tally, wall, made[0]


def phase_load(data_dir: Path, secrets: list[str], writes: int, workers: int) -> bool:
    tally, wall, _ = under_load(data_dir, secrets, writes, workers, "load")
    clients = len(secrets) - 1
    name = f"load ({writes} writes, {clients} clients, {workers} workers x 4 threads)"
    return check(name, data_dir, tally, wall) and not tally.failed


def phase_worker_kills(
    data_dir: Path, secrets: list[str], writes: int, workers: int, kills: int
) -> bool:
    tally, wall, made = under_load(data_dir, secrets, writes, workers, "kills", kills)
    return check(f"serving-worker kills ({made} SIGKILLs)", data_dir, tally, wall)


def phase_index_kills(data_dir: Path, secrets: list[str], writes: int, kills: int) -> bool:
    tally = Tally()
    rng = random.Random(9)
    with api_server.gunicorn_process(
        data_dir, workers=2, log=data_dir / "index.log", env=DEFERRED
    ) as (base, _):
        started = time.perf_counter()
        port = int(base.rsplit(":", 1)[1])
        writers = secrets[:-1]
        writing = threading.Thread(target=write_all, args=(port, writers, writes, "queued", tally))
        writing.start()  # jobs keep arriving while the index worker is killed and restarted
        env = api_server.environment(data_dir, **DEFERRED)
        made, mid_batch = 0, 0
        for _ in range(kills):
            worker = subprocess.Popen(
                [sys.executable, "manage.py", "index_worker"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                text=True,
            )
            assert worker.stdout is not None
            worker.stdout.readline()  # started
            time.sleep(rng.uniform(1.0, 4.0))  # model loading, then somewhere in a batch
            claimed = queue(data_dir)[1]
            worker.kill()
            worker.wait()
            made += 1
            mid_batch += claimed > 0
            print(f"  kill {made}: {queue(data_dir)[0]} jobs queued, {claimed} claimed when killed")
        writing.join()
        wall = time.perf_counter() - started
    name = f"index-worker kills ({made} SIGKILLs, {mid_batch} holding a claimed batch)"
    return check(name, data_dir, tally, wall)


def queue(data_dir: Path) -> tuple[int, int]:
    """(jobs queued, jobs claimed), read straight from the SQLite file."""
    with sqlite3.connect(data_dir / "recall.sqlite3", timeout=30) as db:
        total, claimed = db.execute(
            "SELECT COUNT(*), COALESCE(SUM(claimed_by != ''), 0) FROM console_indexjob"
        ).fetchone()
    return int(total), int(claimed)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8, help="writers (a probe comes on top)")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--worker-kills", type=int, default=50)
    parser.add_argument("--index-kills", type=int, default=20)
    parser.add_argument("--data-dir", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    args = parser.parse_args()

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="recall-writes-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        secrets = prepare(data_dir, args.clients + 1)
        results = [phase_load(data_dir, secrets, args.writes, args.workers)]
        if args.worker_kills:
            results.append(
                phase_worker_kills(data_dir, secrets, args.writes, args.workers, args.worker_kills)
            )
        if args.index_kills:
            results.append(phase_index_kills(data_dir, secrets, args.writes, args.index_kills))
        print("\nall phases clean" if all(results) else "\nFAILED: see above")
        return 0 if all(results) else 1
    finally:
        if args.data_dir is None and not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
