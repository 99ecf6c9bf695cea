"""The planes cannot silently disagree with the database (issue 19, items 1 and 2).

`index_status` compares every plane row with its database row by fingerprint
and counts rows, not distinct ids; `repair` rewrites what differs; index jobs
are claimed so that two processes never apply the same one, and a claim dies
with its process.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from console import indexing, services, wiring
from console.models import IndexJob, Memory, Project
from recall.indexes.lance_index import LanceIndex
from recall.ports import KeepsWriter
from recall.requests import SearchRequest
from recall.types import Doc, Filter

pytestmark = pytest.mark.django_db


@pytest.fixture
def alpha(planes: Path) -> Project:
    return services.project_create(slug="alpha")


@pytest.fixture
def beta(planes: Path) -> Project:
    return services.project_create(slug="beta")


def remember(project: Project, name: str = "kraken-restart") -> Memory:
    memory = services.memory_create(
        project=project,
        kind="gotcha",
        name=name,
        description="The kraken queue must drain before a restart",
        body="Drain the kraken queue, then restart.",
    )
    indexing.apply_pending()
    return memory


def text_ids(query: str, project: str) -> list[str]:
    where = Filter(projects=(project,), include_global=False)
    return [c.id for c in wiring.text_index().search(query, where=where, limit=10)]


def search_ids(query: str, project: str) -> list[str]:
    request = SearchRequest(query, projects=(project,), include_global=False)
    return [h.id for h in wiring.engine().search(request).hits]


def test_a_row_changed_behind_the_services_is_content_drift(alpha: Project, beta: Project) -> None:
    memory = remember(alpha)
    assert indexing.status().drift == 0

    Memory.objects.filter(pk=memory.pk).update(project=beta)  # no index job queued

    status = indexing.status()
    assert status.text.stale == {memory.pk}
    assert status.vectors is not None and status.vectors.stale == {memory.pk}
    assert status.drift == 2
    assert text_ids("kraken", "alpha") == [memory.pk]  # the plane is stale ...
    assert search_ids("kraken", "alpha") == []  # ... and search still never shows it
    assert search_ids(memory.pk, "alpha") == []

    report = indexing.repair()

    assert (report.deleted, report.rewritten) == (0, 1)
    assert indexing.status().drift == 0
    assert text_ids("kraken", "alpha") == []
    assert search_ids("kraken", "beta") == [memory.pk]


def test_a_corrupted_text_row_is_seen_and_rewritten(alpha: Project) -> None:
    memory = remember(alpha)
    doc = indexing.memory_docs(Memory.objects.filter(pk=memory.pk))[0]
    wiring.text_index().upsert([replace(doc, body="tampered with")])

    assert indexing.status().text.stale == {memory.pk}
    indexing.repair()
    assert indexing.status().drift == 0
    assert text_ids("tampered", "alpha") == []


def test_missing_and_extra_rows_are_repaired(alpha: Project) -> None:
    kept, gone = remember(alpha, "kraken-one"), remember(alpha, "kraken-two")
    Memory.objects.filter(pk=gone.pk).delete()  # behind the services: planes keep it
    wiring.text_index().delete([kept.pk])

    status = indexing.status()
    assert (status.text.missing, status.text.extra) == ({kept.pk}, {gone.pk})
    assert status.vectors is not None and status.vectors.extra == {gone.pk}

    report = indexing.repair()

    assert (report.deleted, report.rewritten) == (2, 1)
    assert indexing.status().drift == 0


def test_duplicate_vector_rows_count_as_drift_and_are_repaired(alpha: Project) -> None:
    memory = remember(alpha)
    vectors = wiring.vector_plane()
    if not isinstance(vectors, LanceIndex):  # the PostgreSQL profile
        pytest.skip("a primary key on the vector table makes a second row for an id impossible")
    table = vectors._handle()
    table.add(table.search().where(f"id = '{memory.pk}'").limit(1).to_arrow())  # a second row

    status = indexing.status()
    assert status.vectors is not None
    assert (status.vectors.rows, status.vectors.duplicates, status.drift) == (2, 1, 1)

    indexing.repair()

    assert vectors.count() == 1
    assert indexing.status().drift == 0


def test_index_status_and_sync_indexes_repair_from_the_command_line(
    alpha: Project, beta: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    memory = remember(alpha)
    Memory.objects.filter(pk=memory.pk).update(project=beta)

    call_command("index_status")
    report = capsys.readouterr().out
    assert "drift         2" in report
    assert "text        0 missing, 0 extra, 1 stale, 0 duplicate rows" in report

    call_command("sync_indexes", "--repair")
    assert "0 extra rows deleted, 1 items rewritten" in capsys.readouterr().out
    call_command("index_status")
    assert "no drift" in capsys.readouterr().out


# -- claims -------------------------------------------------------------------


def queued(alpha: Project, count: int) -> list[str]:
    return [
        services.memory_create(project=alpha, kind="fact", name=f"fact-{i}", body=f"fact {i}").pk
        for i in range(count)
    ]


@pytest.mark.outbox
def test_jobs_another_live_process_claimed_are_left_to_it(alpha: Project) -> None:
    ids = queued(alpha, 3)
    later = timezone.now() + timedelta(minutes=5)
    IndexJob.objects.filter(item_id=ids[0]).update(
        claimed_by=f"elsewhere:{os.getppid()}:cafe", claimed_until=later
    )

    assert indexing.apply_pending().applied == 2
    assert list(IndexJob.objects.values_list("item_id", flat=True)) == [ids[0]]
    assert set(text_ids("fact", "alpha")) == set(ids[1:])


@pytest.mark.outbox
def test_the_kept_text_writer_is_let_go_for_whoever_holds_the_planes_lock(
    alpha: Project,
) -> None:
    # The index worker keeps the writer between batches; a reindex or an import (here a
    # thread) takes the planes' lock and then needs the writer. The worker's next batch
    # finds the lock taken, lets the writer go and waits its turn: nobody times out.
    if connection.vendor == "postgresql":  # and its thread would write on a connection of its own
        pytest.skip(
            "the PostgreSQL text plane is written in the database: no writer to keep "
            "(the embedded pass runs this test)"
        )
    text, holding, failures = wiring.text_index(), threading.Event(), list[Exception]()
    assert isinstance(text, KeepsWriter)
    elsewhere = Doc(id="elsewhere", item="memory", project="alpha", active=True, kind="fact",
                    name="elsewhere", title="", description="", body="fact, elsewhere")  # fmt: skip

    def other_writer() -> None:
        try:
            with indexing.plane_lock().held():
                holding.set()
                text.upsert([elsewhere])
        except Exception as exc:
            failures.append(exc)

    first = queued(alpha, 1)
    with indexing.writer_kept():
        assert indexing.apply_pending().applied == 1  # and the writer is kept
        other = threading.Thread(target=other_writer)
        other.start()
        assert holding.wait(10)
        second = [services.memory_create(project=alpha, kind="fact", name="late", body="fact").pk]
        assert indexing.apply_pending().applied == 1
        other.join()

    assert failures == []
    assert set(text_ids("fact", "alpha")) == {*first, *second, "elsewhere"}


@pytest.mark.outbox
def test_a_lapsed_claim_is_taken_over(alpha: Project) -> None:
    ids = queued(alpha, 2)
    IndexJob.objects.update(
        claimed_by=f"elsewhere:{os.getppid()}:cafe", claimed_until=timezone.now()
    )

    assert indexing.apply_pending().applied == 2
    assert set(text_ids("fact", "alpha")) == set(ids)


@pytest.mark.outbox
def test_the_claims_of_a_dead_process_on_this_host_are_released(alpha: Project) -> None:
    ids = queued(alpha, 2)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    claimer = f"{indexing.socket.gethostname()}:{int(dead.stdout)}:cafe"
    IndexJob.objects.update(claimed_by=claimer, claimed_until=timezone.now() + timedelta(hours=1))

    assert indexing.apply_pending().applied == 2
    assert set(text_ids("fact", "alpha")) == set(ids)


@pytest.mark.outbox
def test_a_claim_goes_to_one_process_only(alpha: Project) -> None:
    queued(alpha, 4)
    mine = indexing.claim(10)
    assert len(mine) == 4

    IndexJob.objects.update(claimed_by="other:1:x")  # as if another process won the race
    assert indexing.claim(10) == []


@pytest.mark.outbox
def test_applying_one_job_twice_leaves_one_row_per_plane(alpha: Project) -> None:
    memory = remember(alpha)
    services.index_sync()
    indexing.enqueue("memory", memory.pk, "upsert")
    indexing.enqueue("memory", memory.pk, "upsert")

    assert indexing.apply_pending().applied == 2
    status = indexing.status()
    assert (status.text.rows, status.vectors.rows if status.vectors else None) == (1, 1)
    assert status.drift == 0


@pytest.mark.outbox
def test_a_failed_batch_releases_its_claim(alpha: Project, monkeypatch: Any) -> None:
    queued(alpha, 1)

    def broken(docs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(indexing, "write_docs", broken)
    assert indexing.apply_pending().failed == 1
    job = IndexJob.objects.get()
    assert (job.claimed_by, job.claimed_until, job.attempts) == ("", None, 1)
