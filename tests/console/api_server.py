"""A live API server in a subprocess: the production command over a prepared data dir.

Used by the schemathesis run (tests/console/test_api_schema.py) and the load
script (tests/bench/load_api.py). Loopback only.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).with_name("gunicorn")
# Set by tests/pg_profile.py: each data directory gets a PostgreSQL database of its own.
SUBPROCESS_DATABASES = "RECALL_TEST_SUBPROCESS_DATABASES"


def environment(data_dir: Path, **extra: str) -> dict[str, str]:
    if os.environ.get(SUBPROCESS_DATABASES) == "1":  # the PostgreSQL profile's test run
        from tests import pg

        extra.setdefault("DATABASE_URL", pg.database_for(data_dir))
    return {
        **os.environ,
        "RECALL_DATA_DIR": str(data_dir),
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "DJANGO_DEBUG": "0",
        **extra,
    }


def run_python(data_dir: Path, code: str) -> str:
    """Run `code` with Django set up over `data_dir` (migrated first); its stdout."""
    env = environment(data_dir)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    setup = "import django\ndjango.setup()\n"
    done = subprocess.run(
        [sys.executable, "-c", setup + code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def gunicorn(
    data_dir: Path, *, workers: int = 2, threads: int = 4, log: Path | None = None
) -> Iterator[str]:
    """`make serve`'s command on a free loopback port; yields the base URL."""
    with gunicorn_process(data_dir, workers=workers, threads=threads, log=log) as (base, _):
        yield base


@contextmanager
def gunicorn_process(
    data_dir: Path,
    *,
    workers: int = 2,
    threads: int = 4,
    log: Path | None = None,
    env: dict[str, str] | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """As `gunicorn`, yielding the master process too (its children are the workers)."""
    port = free_port()
    command = [
        str(GUNICORN), "console.wsgi:application", "--bind", f"127.0.0.1:{port}",
        "--workers", str(workers), "--threads", str(threads), "--preload",
        "--config", "console/gunicorn.conf.py",
    ]  # fmt: skip
    out = open(log, "w") if log else subprocess.DEVNULL  # noqa: SIM115
    environ = environment(data_dir, **(env or {}))
    server = subprocess.Popen(command, cwd=ROOT, env=environ, stdout=out, stderr=out)
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(base, server)
        yield base, server
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if log:
            out.close()  # type: ignore[union-attr]


def _wait(base: str, server: subprocess.Popen[bytes], timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"gunicorn exited with {server.returncode}")
        try:
            with urllib.request.urlopen(f"{base}/api/v1/openapi.json", timeout=5) as reply:
                if reply.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    raise RuntimeError(f"gunicorn did not answer within {timeout:.0f} s")
