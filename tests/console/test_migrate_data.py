"""`manage.py migrate_data` moves an embedded deployment onto PostgreSQL, losslessly.

Each step is a process of its own over its own data directory, as an
operator would run it: the SQLite deployment (demo data, a login, an agent
token), then `migrate_data` into an empty PostgreSQL database, then export on
both sides. Runs in `make test`'s PostgreSQL pass.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests import pg
from tests.console import api_server
from tests.console.test_commands import MOVED_TABLES, SMALL_DEPLOYMENT, sqlite_counts

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(
        os.environ.get("RECALL_PROFILE") != "postgres",
        reason="runs in make test's PostgreSQL pass (python -m pytest -p tests.pg_profile)",
    ),
    pytest.mark.slow,
]

SQLITE_SIDE = """
import django; django.setup()
from console import services, tokens
from console.models import Digest
ops = services.project_create(slug="ops")
m = services.memory_create(project=ops, name="pager", description="The pager rotates weekly")
services.retrieval_record(kind="recalled", ids=[m.pk], query="pager", project="ops",
                          agent="mover", pack_id="01JPACK0000000000000000000")
services.feedback_record(pack_id="01JPACK0000000000000000000", agent="mover",
                         sees=lambda slug: True, items=[{"id": m.pk, "helpful": True}])
Digest.objects.create(key="ops", project=ops, edited=True, edited_by="admin",
                      sentences=[{"text": "The pager rotates weekly.", "covers": [m.pk]}])
print(tokens.token_create(agent="mover", projects=["ops"], may_write=True)[1])
"""

COUNTS = """
import django; django.setup()
from console.models import Digest, Feedback
print(Feedback.objects.count(), Digest.objects.count())
"""

CHECK_TOKEN = """
import sys
import django; django.setup()
from console import tokens
print(tokens.token_verify(sys.argv[1]) is not None)
"""


def sqlite_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "RECALL_DATABASE_URL", "RECALL_PROFILE"}}  # fmt: skip
    return {**env, "RECALL_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "console.settings"}


def run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_sqlite_deployment_moves_to_postgresql_byte_for_byte(tmp_path: Path) -> None:
    old, new = sqlite_env(tmp_path / "old"), api_server.environment(tmp_path / "new")
    run(old, "manage.py", "migrate", "-v0")
    run(old, "manage.py", "demo")
    run(old, "manage.py", "ensure_login")
    secret = run(old, "-c", SQLITE_SIDE).split()[-1]
    run(old, "manage.py", "export_memories", "--out", str(tmp_path / "old.jsonl"))

    sqlite_url = f"sqlite:///{tmp_path / 'old' / 'recall.sqlite3'}"
    vectors = str(tmp_path / "old" / "vectors")
    moved = run(new, "manage.py", "migrate_data", "--from", sqlite_url, "--vectors-from", vectors)
    run(new, "manage.py", "export_memories", "--out", str(tmp_path / "new.jsonl"))

    assert "reindexed" in moved
    assert "embedded 0 texts" in moved  # every vector copied from the old LanceDB table
    assert (tmp_path / "new.jsonl").read_bytes() == (tmp_path / "old.jsonl").read_bytes()
    assert run(new, "-c", CHECK_TOKEN, secret).strip() == "True"  # agents keep their secrets
    assert run(new, "-c", COUNTS).split() == run(old, "-c", COUNTS).split() == ["1", "1"]
    run(new, "manage.py", "index_status", "--fail-on-drift")
    again = subprocess.run(
        [sys.executable, "manage.py", "migrate_data", "--from", sqlite_url],
        cwd=ROOT, env=new, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert again.returncode != 0 and "not empty" in again.stderr


def test_a_sqlite_deployment_moves_to_the_postgresql_database_given_by_to(tmp_path: Path) -> None:
    # `--to postgres://...` from a SQLite deployment ran the target's data migrations on
    # SQLite ("NOT NULL constraint failed: console_memoryrevision.changed_by").
    old = sqlite_env(tmp_path / "old")
    run(old, "manage.py", "migrate", "-v0")
    run(old, "-c", SMALL_DEPLOYMENT)
    source = tmp_path / "old" / "recall.sqlite3"
    target = pg.database_for(tmp_path / "new")

    moved = run(old, "manage.py", "migrate_data", "--from", f"sqlite:///{source}", "--to", target)

    assert "planes not rebuilt" in moved and "--vectors-from" in moved
    with psycopg.connect(target) as db:
        counts = [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in MOVED_TABLES]
    assert counts == sqlite_counts(source) == [1, 2, 2, 1]
