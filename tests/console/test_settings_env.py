"""A bad environment value stops start-up naming its variable and value.

A typo in a whole number was a bare `int()` traceback naming nothing, and any
unknown word in a switch read as false: `RECALL_SYNC_ON_COMMIT=maybe` turned
indexing on commit off without a word.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("RECALL_JOB_CLAIM_SECONDS", "abc", "expected a whole number (default 120)"),
        # It passed the checks, then every call answered 500, writes after committing.
        ("RECALL_PG_EF_SEARCH", "0", "expected a whole number >= 1 (default 100)"),
        ("RECALL_SYNC_ON_COMMIT", "maybe", "expected 1/0, true/false, yes/no or on/off"),
        ("RECALL_EMBEDDER_QUANTIZED", "false-ish", "expected 1/0, true/false, yes/no or on/off"),
        ("RECALL_LOG_LEVEL", "LOUD", "expected DEBUG, INFO, WARNING, ERROR or CRITICAL"),
        ("DATABASE_URL", "postgress://x", "must be postgres://... or sqlite:///..."),
    ],
)
def test_a_bad_value_stops_start_up_naming_it(
    tmp_path: Path, variable: str, value: str, said: str
) -> None:
    env = {**os.environ, "RECALL_DATA_DIR": str(tmp_path), variable: value}

    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert said in last and variable in last


def test_words_for_a_switch_read_in_any_case(tmp_path: Path) -> None:
    env = {**os.environ, "RECALL_DATA_DIR": str(tmp_path), "RECALL_SYNC_ON_COMMIT": " Yes "}
    env["RECALL_LOG_LEVEL"] = "info"

    done = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr


def test_a_server_started_without_manage_py_refuses_a_bad_retrieval_setting(
    tmp_path: Path,
) -> None:
    # gunicorn on console.wsgi (the README's Deployment line) started, and then
    # answered 503 on every search naming the setting; `make serve` was safe only
    # because its `migrate` runs the checks first.
    env = {**os.environ, "RECALL_DATA_DIR": str(tmp_path), "RECALL_SEARCH_LIMIT": "abc"}

    done = subprocess.run(
        [sys.executable, "-c", "import console.wsgi"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode != 0
    assert "ImproperlyConfigured" in done.stderr and "RECALL_SEARCH_LIMIT" in done.stderr


def test_a_server_started_on_a_database_it_cannot_reach_stops_in_one_line(
    tmp_path: Path,
) -> None:
    # gunicorn started, logged a traceback from its warm-up thread and went on
    # listening: the login page answered 200 and every API call 500.
    env = {**os.environ, "RECALL_DATA_DIR": str(tmp_path)}
    env["DATABASE_URL"] = "postgres://recall@127.0.0.1:9/recall?connect_timeout=5"

    done = subprocess.run(
        [sys.executable, "-c", "import console.wsgi"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("django.core.exceptions.ImproperlyConfigured: cannot connect to")
    assert "'recall'" in last, last


def test_recall_https_keeps_the_cookies_off_plain_http(tmp_path: Path) -> None:
    # Behind the README's load balancer the session cookie travelled over plain HTTP:
    # nothing set SESSION_COOKIE_SECURE, and no variable could (a security review).
    env = {**os.environ, "RECALL_DATA_DIR": str(tmp_path), "RECALL_HTTPS": "1"}
    probe = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS, "
        "s.SECURE_PROXY_SSL_HEADER)"
    )

    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**env, "DJANGO_SETTINGS_MODULE": "console.settings"},
    )  # fmt: skip

    assert done.stdout.split(None, 3) == [
        "True", "True", "31536000", "('HTTP_X_FORWARDED_PROTO', 'https')\n",
    ], done.stderr  # fmt: skip


def test_a_preloaded_server_forks_with_nothing_connected(tmp_path: Path) -> None:
    # console.wsgi connects once to say at start-up that the database cannot be
    # reached; on PostgreSQL that made a connection pool in gunicorn's master
    # (--preload), whose sockets the forked workers then shared: a worker's warm-up
    # read another's reply ("the last operation didn't produce records").
    from tests.console import api_server

    probe = (
        "import console.wsgi\nfrom django.db import connections\n"
        "d = connections['default']\n"
        "print(d.connection is None, bool(getattr(d, '_connection_pools', {})))\n"
    )

    shown = api_server.run_python(tmp_path, probe)

    assert shown.split() == ["True", "False"]
