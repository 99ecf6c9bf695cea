"""The PostgreSQL profile: a write and its plane rows commit in one transaction.

Runs in `make test`'s PostgreSQL pass (`python -m pytest -p tests.pg_profile`),
where rows, full text and vectors live in one real PostgreSQL with pgvector.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from console import indexing, services, wiring
from console.models import IndexJob, Memory, Project
from recall.errors import EmbedderUnavailable
from recall.types import Filter
from tests.console import api_server

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(
        os.environ.get("RECALL_PROFILE") != "postgres",
        reason="runs in make test's PostgreSQL pass (python -m pytest -p tests.pg_profile)",
    ),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def project(planes: Path) -> Project:
    return services.project_create(slug="ops")


def remember(project: Project, name: str = "kraken-restart", **fields: Any) -> Memory:
    return services.memory_create(
        project=project,
        kind="gotcha",
        name=name,
        description=fields.pop("description", "The kraken queue must drain before a restart"),
        body=fields.pop("body", "Drain the kraken queue, then restart."),
        **fields,
    )


def plane_rows(memory_id: str) -> tuple[int, int]:
    """(full-text rows, vector rows) for an id, read straight from the tables."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM recall_text WHERE id = %s),"
            " (SELECT count(*) FROM recall_vectors WHERE id = %s)",
            [memory_id, memory_id],
        )
        text, vectors = cursor.fetchone()
    return int(text), int(vectors)


def test_the_planes_are_postgresql_tables_on_the_same_database() -> None:
    assert connection.vendor == "postgresql"
    assert wiring.text_index().joins_caller  # type: ignore[attr-defined]
    assert wiring.vector_index().joins_caller  # type: ignore[union-attr]


def test_a_write_commits_with_its_plane_rows_and_queues_nothing(project: Project) -> None:
    memory = remember(project)

    assert IndexJob.objects.count() == 0
    assert plane_rows(memory.pk) == (1, 1)
    hits = wiring.text_index().search("kraken", where=Filter(), limit=5)
    assert [h.id for h in hits] == [memory.pk]
    assert indexing.status().drift == 0


def test_a_rolled_back_write_leaves_no_plane_row(project: Project) -> None:
    class Abandon(Exception):
        pass

    with pytest.raises(Abandon), transaction.atomic():
        memory = remember(project)
        assert plane_rows(memory.pk) == (1, 1)  # written, in the transaction
        raise Abandon

    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert plane_rows(memory.pk) == (0, 0)


def test_an_edit_archive_and_delete_reach_the_planes_at_once(project: Project) -> None:
    memory = remember(project)

    services.memory_update(memory=memory, body="Drain the walrus queue instead.")
    assert [h.id for h in wiring.text_index().search("walrus", where=Filter(), limit=5)] == [
        memory.pk
    ]
    services.memory_archive(memory=Memory.objects.get(pk=memory.pk))
    assert wiring.text_index().search("walrus", where=Filter(), limit=5) == []
    services.memory_delete(memory=Memory.objects.get(pk=memory.pk))
    assert plane_rows(memory.pk) == (0, 0)
    assert IndexJob.objects.count() == 0


def test_with_the_embedder_down_the_row_and_its_words_commit_and_vectors_wait(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = wiring.embedder()
    assert embedder is not None

    def down(texts: Any) -> Any:
        raise EmbedderUnavailable("model process crashed")

    monkeypatch.setattr(embedder, "embed", down)
    memory = remember(project)

    assert plane_rows(memory.pk) == (1, 0)  # findable by its words at once
    assert list(IndexJob.objects.values_list("item_id", flat=True)) == [memory.pk]
    monkeypatch.undo()
    assert indexing.apply_pending().applied == 1
    assert plane_rows(memory.pk) == (1, 1)
    assert indexing.status().drift == 0


KILLED_MID_TRANSACTION = textwrap.dedent(
    """
    import os, signal
    import django
    django.setup()
    from django.core.management import call_command
    from django.db import connection, transaction
    from console import services

    call_command("migrate", verbosity=0)
    project = services.project_create(slug="ops")
    with transaction.atomic():
        memory = services.memory_create(
            project=project, kind="gotcha", name="kraken-restart",
            description="The kraken queue must drain before a restart",
        )
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM recall_text WHERE id = %s", [memory.pk])
            print(memory.pk, cursor.fetchone()[0], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # before the commit
    """
)

COUNT = textwrap.dedent(
    """
    import json
    import django
    django.setup()
    from console import indexing, wiring
    from console.models import IndexJob, Memory
    print(json.dumps({
        "memories": Memory.objects.count(), "jobs": IndexJob.objects.count(),
        "text": wiring.text_index().count(), "vectors": wiring.vector_index().count(),
        "drift": indexing.status().drift,
    }))
    """
)


@pytest.mark.slow
def test_a_process_killed_before_its_commit_leaves_neither_row_nor_plane_rows(
    tmp_path: Path,
) -> None:
    env = api_server.environment(tmp_path)
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_TRANSACTION],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    memory_id, written = killed.stdout.split()
    assert written == "1"  # the text row was in the open transaction when it died

    counted = subprocess.run(
        [sys.executable, "-c", COUNT],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    after = json.loads(counted.stdout.strip().splitlines()[-1])
    assert after == {"memories": 0, "jobs": 0, "text": 0, "vectors": 0, "drift": 0}, memory_id


def test_background_rebuild_threads_give_their_pooled_connections_back(planes: Path) -> None:
    """More stale PromptRecall rebuilds than the pool has connections, each on a thread of
    its own that reads the database: every connection comes back (before aa25ab6 each
    dead thread kept one, and the next reader waited out the pool's timeout)."""
    import threading
    from datetime import timedelta

    from recall.prompt import build_corpus

    pool = getattr(connection, "pool", None)
    if pool is None:
        # An operator may run the PostgreSQL pass with RECALL_DB_POOL_SIZE=0: without a
        # pool there are no pooled connections for this test to count.
        pytest.skip("RECALL_DB_POOL_SIZE=0: no connection pool to give connections back to")
    corpora = wiring.engine().corpora
    now = [wiring.planes().clock()]
    corpora._clock = lambda: now[0]  # the cache's own clock, moved on below
    rebuilt: list[str] = []

    def build() -> Any:
        rebuilt.append(threading.current_thread().name)
        Project.objects.count()  # a read on this thread's own connection
        return build_corpus([])

    keys = [("leak", n) for n in range(pool.max_size + 4)]
    for key in keys:
        corpora.get(key, build, ttl=60)  # the first build runs on this thread
    now[0] += timedelta(minutes=5)
    first = len(rebuilt)
    for key in keys:
        corpora.get(key, build, ttl=60)  # stale: one background rebuild each
    for _ in range(500):
        if len(rebuilt) == first + len(keys):
            break
        threading.Event().wait(0.02)

    assert len(rebuilt) == first + len(keys)
    threading.Event().wait(0.2)  # the last threads' `finished` hooks
    stats = pool.get_stats()
    assert stats.get("pool_size", 0) - stats.get("pool_available", 0) <= 1  # only this thread's


def race(count: int, write: Any) -> list[Any]:
    """`write(i)` from `count` threads let go at once; each result or exception."""
    gate = threading.Barrier(count)
    results: list[Any] = [None] * count

    def run(i: int) -> None:
        gate.wait()
        try:
            results[i] = write(i)
        except Exception as exc:  # what the caller asserts on
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_writes_of_one_name_leave_one_active_memory(project: Project) -> None:
    # At READ COMMITTED every writer passed the name check before any inserted:
    # eight writes of one name left up to seven active memories of it.
    results = race(8, lambda i: services.memory_write(
        project=project, kind="fact", name="race", body=f"Variant {i} of the pool size",
    ))  # fmt: skip

    made = [r for r in results if isinstance(r, services.Outcome) and r.created]
    refused = [r for r in results if isinstance(r, services.StateConflict)]
    assert (len(made), len(refused)) == (1, 7), results
    assert Memory.objects.filter(name="race", invalid_at__isnull=True).count() == 1


def test_concurrent_batches_of_one_text_store_it_once(project: Project) -> None:
    item = {"kind": "fact", "name": "same", "body": "The pool holds 20 connections."}
    results = race(8, lambda i: services.memory_write_batch(project=project, items=[item]))

    created = [o.created for r in results for o in r]
    assert sorted(created) == [False] * 7 + [True], results
    assert Memory.objects.filter(name="same").count() == 1


def test_an_edit_during_a_reindex_commits_without_waiting_for_it_and_stays(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reindex was one transaction that deleted every plane row first: an edit made
    meanwhile waited for the whole rebuild. Now each batch commits on its own; an
    edit waits for one batch at most, and the rebuild does not write over it."""
    memories = [remember(project, name=f"fact-{i}") for i in range(5)]
    monkeypatch.setattr(indexing, "BATCH", 2)
    edited: list[str] = []

    def edit_from_another_connection() -> None:
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET LOCAL lock_timeout = '5s'")
                memory = Memory.objects.get(pk=memories[0].pk)
                services.memory_update(memory=memory, description="Edited during the reindex")
            edited.append("done")
        except Exception as exc:  # the lock timeout, when the edit had to wait for the rebuild
            edited.append(repr(exc))
        finally:
            connection.close()

    def between_batches(count: int) -> None:
        if not edited:  # after the first batch, which held memories[0]
            worker = threading.Thread(target=edit_from_another_connection)
            worker.start()
            worker.join()

    rebuilt = indexing.rebuild(progress=between_batches)

    assert edited == ["done"]
    assert rebuilt.items == 5
    hits = wiring.text_index().search("during", where=Filter(projects=("ops",)), limit=5)
    assert [h.id for h in hits] == [memories[0].pk]
    assert IndexJob.objects.count() == 0  # its plane rows were written with it, not queued
    assert indexing.status().drift == 0
