"""A process killed after its row commits but before the index write loses nothing.

Each step runs in its own process against one throwaway data directory, as a
real deployment would: the killed writer, then `index_status`, `sync_indexes`
(the next apply) or `reindex`, then a search.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from tests.console import api_server

pytestmark = pytest.mark.outbox  # each kills a process between its commit and the outbox apply

ROOT = Path(__file__).resolve().parents[2]

WRITER = textwrap.dedent(
    """
    import os, signal
    import django
    django.setup()
    from django.core.management import call_command
    from console import indexing, services

    call_command("migrate", verbosity=0)

    def die_before_index_write():
        os.kill(os.getpid(), signal.SIGKILL)

    indexing.apply_pending_quietly = die_before_index_write
    project = services.project_create(slug="ops")
    services.memory_create(
        project=project, kind="gotcha", name="kraken-restart",
        description="The kraken queue must drain before a restart",
        body="Drain the kraken queue, then restart.",
    )
    print("unreachable: the on-commit hook should have killed us")
    """
)

MID_APPLY = textwrap.dedent(
    """
    import os, signal
    import django
    django.setup()
    from django.core.management import call_command
    from console import indexing, services
    from console.models import IndexJob

    call_command("migrate", verbosity=0)
    project = services.project_create(slug="ops")

    def die_mid_batch(docs, **planes):
        assert IndexJob.objects.exclude(claimed_by="").count() == 1  # claimed, then killed
        os.kill(os.getpid(), signal.SIGKILL)

    indexing.write_docs = die_mid_batch
    services.memory_create(
        project=project, kind="gotcha", name="kraken-restart",
        description="The kraken queue must drain before a restart",
        body="Drain the kraken queue, then restart.",
    )
    print("unreachable: the apply should have killed us")
    """
)

TWO_MEMORIES = textwrap.dedent(
    """
    import django
    django.setup()
    from django.core.management import call_command
    from console import services

    call_command("migrate", verbosity=0)
    project = services.project_create(slug="ops")
    for name in ("kraken-restart", "kraken-drain"):
        services.memory_create(
            project=project, kind="gotcha", name=name,
            description="The kraken queue must drain before a restart", body="",
        )
    """
)

KILLED_REINDEX = textwrap.dedent(
    """
    import os, signal
    import django
    django.setup()
    from console import indexing

    indexing.REBUILD_BATCH = 1  # one memory a batch: killed after the first

    def die(items):
        os.kill(os.getpid(), signal.SIGKILL)

    indexing.rebuild(progress=die)
    print("unreachable: the rebuild should have killed us")
    """
)

SEARCH = textwrap.dedent(
    """
    import django
    django.setup()
    from console import wiring
    from recall.types import Filter
    hits = wiring.text_index().search("kraken", where=Filter(), limit=5)
    vectors = wiring.vector_index()
    print(len(hits), len(vectors.ids()))
    """
)

SEMANTIC = textwrap.dedent(
    """
    import django
    django.setup()
    from console import wiring
    from recall.types import Filter
    asked = wiring.embedder().embed(["drain the queue before restarting"])[0]
    print(len(wiring.vector_index().search(asked, where=Filter(), limit=5)))
    """
)


def run(data_dir: Path, *args: str, **extra: str) -> subprocess.CompletedProcess[str]:
    env = api_server.environment(data_dir, **extra)
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


def worker_over_two_queued_memories(data_dir: Path) -> subprocess.Popen[str]:
    """Two memories written with their index jobs left queued, then an index worker
    (keeping the text writer) started on them, its output piped."""
    queued = api_server.environment(data_dir, RECALL_SYNC_ON_COMMIT="0")
    made = subprocess.run([sys.executable, "-c", TWO_MEMORIES], cwd=ROOT, env=queued,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert made.returncode == 0, made.stderr
    return subprocess.Popen(
        [sys.executable, "manage.py", "index_worker", "--keep-writer", "600", "--interval", "0.05"],
        cwd=ROOT, env=queued, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def killed_writer(data_dir: Path) -> None:
    writer = run(data_dir, "-c", WRITER)
    assert writer.returncode == -signal.SIGKILL, writer.stderr
    assert "unreachable" not in writer.stdout


@pytest.mark.slow
def test_sigkill_after_commit_keeps_the_job_and_the_next_apply_reconverges(tmp_path: Path) -> None:
    killed_writer(tmp_path)

    before = run(tmp_path, "manage.py", "index_status")
    assert "pending jobs  1" in before.stdout and "drift         2" in before.stdout, before.stdout
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["0", "0"]

    synced = run(tmp_path, "manage.py", "sync_indexes")
    assert synced.stdout.startswith("applied 1 jobs\n"), synced.stderr

    after = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in after.stdout and "pending jobs  0" in after.stdout, after.stdout
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["1", "1"]


@pytest.mark.slow
def test_sigkill_after_commit_then_reindex_reconverges(tmp_path: Path) -> None:
    killed_writer(tmp_path)

    rebuilt = run(tmp_path, "manage.py", "reindex")
    assert "reindexed 1 items" in rebuilt.stdout, rebuilt.stderr

    after = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in after.stdout and "pending jobs  0" in after.stdout, after.stdout
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["1", "1"]


@pytest.mark.slow
def test_a_reindex_killed_midway_leaves_both_planes_whole_and_the_next_reconverges(
    tmp_path: Path,
) -> None:
    made = run(tmp_path, "-c", TWO_MEMORIES)
    assert made.returncode == 0, made.stderr
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["2", "2"]

    killed = run(tmp_path, "-c", KILLED_REINDEX)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    # Killed after the first memory's batch: the text plane commits once, at the end of
    # a rebuild, and the vector plane is rewritten in place, so both still hold both
    # memories, and a semantic search finds them without a repair.
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["2", "2"]
    assert run(tmp_path, "-c", SEMANTIC).stdout.split() == ["2"]
    synced = run(tmp_path, "manage.py", "sync_indexes")  # the next normal step
    assert synced.returncode == 0, synced.stderr
    status = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in status.stdout, status.stdout
    rebuilt = run(tmp_path, "manage.py", "reindex")
    assert "reindexed 2 items" in rebuilt.stdout, rebuilt.stderr
    after = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in after.stdout, after.stdout
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["2", "2"]


@pytest.mark.slow
def test_a_reindex_to_another_model_killed_midway_leaves_the_rest_queued(tmp_path: Path) -> None:
    made = run(tmp_path, "-c", TWO_MEMORIES)
    assert made.returncode == 0, made.stderr
    other = {"RECALL_EMBEDDER_QUANTIZED": "0"}  # another model: the vectors start empty

    killed = run(tmp_path, "-c", KILLED_REINDEX, **other)
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    # The vector table was cleared and holds the first memory alone, but both memories
    # were queued before it was cleared: the next apply writes the other.
    status = run(tmp_path, "manage.py", "index_status", **other)
    assert "pending jobs  2" in status.stdout, status.stdout
    synced = run(tmp_path, "manage.py", "sync_indexes", **other)  # the next normal step
    assert synced.returncode == 0, synced.stderr
    after = run(tmp_path, "manage.py", "index_status", **other)
    assert "no drift" in after.stdout and "pending jobs  0" in after.stdout, after.stdout
    assert run(tmp_path, "-c", SEARCH, **other).stdout.split() == ["2", "2"]
    assert run(tmp_path, "-c", SEMANTIC, **other).stdout.split() == ["2"]


@pytest.mark.slow
def test_sigkill_mid_batch_frees_the_claim_and_the_next_apply_reconverges(tmp_path: Path) -> None:
    writer = run(tmp_path, "-c", MID_APPLY)
    assert writer.returncode == -signal.SIGKILL, writer.stderr

    synced = run(tmp_path, "manage.py", "sync_indexes")  # the dead claimer's job is free again
    assert synced.stdout.startswith("applied 1 jobs\n"), synced.stderr
    after = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in after.stdout and "pending jobs  0" in after.stdout, after.stdout
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["1", "1"]


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get(api_server.SUBPROCESS_DATABASES) == "1",
    reason="the PostgreSQL profile writes its planes in the write's transaction: no job "
    "reaches the worker, and its text plane has no writer to keep (the embedded pass runs "
    "this test)",
)
def test_an_index_worker_killed_while_it_keeps_the_text_writer_leaves_no_lock(
    tmp_path: Path,
) -> None:
    worker = worker_over_two_queued_memories(tmp_path)
    stuck = threading.Timer(120, worker.kill)  # a worker that never applies fails the test
    stuck.start()
    applied = ""
    try:
        assert worker.stdout is not None
        for line in worker.stdout:  # it applies both jobs, then keeps the writer (idle < 600 s)
            if line.startswith("applied"):
                applied = line.strip()
                break
    finally:
        stuck.cancel()
        worker.kill()
        worker.wait()
    assert applied == "applied 2 jobs, 0 failed"
    assert worker.returncode == -signal.SIGKILL

    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["2", "2"]  # committed before the kill
    rebuilt = run(tmp_path, "manage.py", "reindex")  # needs the writer the worker kept
    assert "reindexed 2 items" in rebuilt.stdout, rebuilt.stderr
    after = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in after.stdout and "pending jobs  0" in after.stdout, after.stdout


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get(api_server.SUBPROCESS_DATABASES) == "1",
    reason="the PostgreSQL planes are tables, not folders one can delete (the embedded pass "
    "runs this test)",
)
@pytest.mark.parametrize("folder", ["text", "vectors"])
def test_a_plane_folder_deleted_under_the_index_worker_is_rebuilt_from_the_database(
    tmp_path: Path, folder: str
) -> None:
    # The worker went on writing into the deleted folder's open files: search kept
    # answering from them until `sync_indexes --repair`, and a restart found nothing.
    worker = worker_over_two_queued_memories(tmp_path)
    stuck = threading.Timer(180, worker.kill)  # a worker that never notices fails the test
    stuck.start()
    said = []
    try:
        assert worker.stdout is not None
        for line in worker.stdout:
            said.append(line)
            if line.startswith("applied 2 jobs"):  # both planes open, their folders made
                shutil.rmtree(tmp_path / folder)
            if line.startswith("rebuilt from the database"):
                break
    finally:
        stuck.cancel()
        worker.terminate()
        worker.wait()
    assert said[-2:] == [
        f"the {'full-text' if folder == 'text' else 'vector'} plane's folder was deleted or "
        "replaced: rebuilding\n",
        "rebuilt from the database: 2 items written\n",
    ], said
    assert run(tmp_path, "-c", SEARCH).stdout.split() == ["2", "2"]
    after = run(tmp_path, "manage.py", "index_status")
    assert "no drift" in after.stdout and "pending jobs  0" in after.stdout, after.stdout
