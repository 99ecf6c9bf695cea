"""Bounded load run of the agent API under the production server.

    .venv/bin/python tests/bench/load_api.py [--memories 10000] [--requests 2000]
        [--concurrency 8] [--data-dir DIR] [--keep]

Generates a data directory with N synthetic memories (a JSON-lines file
through `manage.py import_memories`, which embeds and indexes them in
batches), creates a read-only token for one project, starts `make serve`'s
gunicorn command on a free loopback port, then sends the requests from
`concurrency` threads, alternating `POST /recall` and `GET /search` with
random 2-4 word queries. Prints p50/p95/p99 latency and error counts per
endpoint and exits 1 on any error. Loopback only; nothing leaves the host.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.console import api_server  # noqa: E402

PROJECTS = [f"proj-{i}" for i in range(5)]
KINDS = ["fact", "gotcha", "convention", "decision", "runbook", "reference", "preference"]
VOCABULARY = (
    "cache index deploy build queue worker schema migration token budget vector shard replica "
    "latency timeout retry backoff lock mutex thread process socket proxy gateway router "
    "bucket object storage snapshot backup restore rollback release canary flag toggle metric "
    "alert dashboard trace span log rotate compress archive parser lexer compiler linker "
    "kernel driver module package wheel lockfile pin upgrade patch hotfix branch merge rebase "
    "review pipeline runner container image registry volume mount secret vault certificate "
    "renewal dns resolver hostname port firewall tunnel vpn login session cookie header "
    "payload webhook callback cron scheduler batch stream consumer producer topic partition "
    "offset checkpoint watermark window join aggregate query planner statistics vacuum "
    "analyze embedding tokenizer model prompt context recall ranking fusion snippet"
)
WORDS = VOCABULARY.split()


def sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def write_corpus(path: Path, count: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    with path.open("w") as out:
        for i in range(count):
            project = None if rng.random() < 0.05 else rng.choice(PROJECTS)
            record = {
                "type": "memory",
                "project": project,
                "kind": rng.choice(KINDS),
                "name": f"{rng.choice(WORDS)}-{rng.choice(WORDS)}-{i}",
                "description": sentence(rng, rng.randint(6, 14))[:150],
                "body": sentence(rng, rng.randint(20, 60)),
                "tags": rng.sample(WORDS, 2),
            }
            out.write(json.dumps(record) + "\n")


def prepare(data_dir: Path, count: int) -> str:
    """Migrate, import `count` memories (indexed), return a read-only token's secret."""
    corpus = data_dir / "corpus.jsonl"
    write_corpus(corpus, count)
    env = api_server.environment(data_dir)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    started = time.perf_counter()
    subprocess.run([*manage, "import_memories", str(corpus)], cwd=ROOT, env=env, check=True)
    print(f"imported and indexed {count:,} memories in {time.perf_counter() - started:.1f} s")
    code = (
        "from console import tokens\n"
        f"print(tokens.token_create(agent='load', projects=['{PROJECTS[0]}'])[1])\n"
    )
    return api_server.run_python(data_dir, code).strip().splitlines()[-1]


class Client(threading.local):
    """One keep-alive connection per thread, reopened after any failure."""

    def __init__(self, host: str, port: int, secret: str) -> None:
        self.host, self.port, self.secret = host, port, secret
        self.conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: dict[str, object] | None) -> int:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        headers = {"Authorization": f"Bearer {self.secret}"}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, data, headers)
            reply = self.conn.getresponse()
            payload = reply.read()
            if reply.status == 200:
                json.loads(payload)
            return reply.status
        except Exception:
            self.conn.close()
            self.conn = None
            raise


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def run_load(base: str, secret: str, total: int, concurrency: int) -> bool:
    parsed = urllib.parse.urlparse(base)
    client = Client(parsed.hostname or "127.0.0.1", parsed.port or 80, secret)
    rng = random.Random(11)
    plan = []
    for i in range(total):
        query = sentence(rng, rng.randint(2, 4))
        if i % 2 == 0:
            plan.append(("recall", "POST", "/api/v1/recall", {"query": query}))
        else:
            q = urllib.parse.urlencode({"q": query})
            plan.append(("search", "GET", f"/api/v1/search?{q}", None))
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: dict[str, list[str]] = defaultdict(list)
    lock = threading.Lock()
    cursor = iter(plan)

    def worker() -> None:
        while True:
            with lock:
                item = next(cursor, None)
            if item is None:
                return
            name, method, path, body = item
            start = time.perf_counter()
            try:
                status = client.request(method, path, body)
                problem = None if status == 200 else f"HTTP {status}"
            except Exception as exc:
                problem = f"{type(exc).__name__}: {exc}"
            elapsed = (time.perf_counter() - start) * 1000
            with lock:
                latencies[name].append(elapsed)
                if problem:
                    errors[name].append(problem)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - started

    print(f"\n{total:,} requests, {concurrency} concurrent, {wall:.1f} s, {total / wall:.0f} req/s")
    print(
        f"{'endpoint':<10}{'n':>6}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}{'errors':>8}"
    )
    for name in ("recall", "search"):
        values = latencies[name]
        print(
            f"{name:<10}{len(values):>6}{statistics.median(values):>9.1f}"
            f"{percentile(values, 95):>9.1f}{percentile(values, 99):>9.1f}"
            f"{max(values):>9.1f}{len(errors[name]):>8}"
        )
        for problem in sorted(set(errors[name]))[:5]:
            print(f"    {problem}")
    return not any(errors.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--data-dir", type=Path, help="reuse or create this data directory")
    parser.add_argument("--keep", action="store_true", help="keep the generated data directory")
    args = parser.parse_args()

    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="recall-load-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    token_file = data_dir / "load-token"
    try:
        if token_file.exists():
            secret = token_file.read_text().strip()
        else:
            secret = prepare(data_dir, args.memories)
            token_file.write_text(secret)
        log = data_dir / "gunicorn.log"
        with api_server.gunicorn(data_dir, log=log) as base:
            print(f"gunicorn (2 workers x 4 threads, --preload) at {base}; warming up")
            warm = Client("127.0.0.1", int(base.rsplit(":", 1)[1]), secret)
            for _ in range(8):
                warm.request("POST", "/api/v1/recall", {"query": "cache deploy"})
                warm.request("GET", "/api/v1/search?q=cache+deploy", None)
            ok = run_load(base, secret, args.requests, args.concurrency)
        return 0 if ok else 1
    finally:
        if args.data_dir is None and not args.keep:
            shutil.rmtree(data_dir, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
