"""Management commands at their edges: what an operator types wrong is refused clearly."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection, connections

from console import indexing, migrating, services, tokens
from console.models import IndexJob, Project

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db


@pytest.fixture
def project(planes: Path) -> Project:
    return services.project_create(slug="billing-api", name="Billing API")


def test_manage_search_marks_matches_apart_from_wiki_brackets(project: Project) -> None:
    # Matches in [brackets] ran into the links: "[[[rollback]-billing".
    services.memory_create(
        project=project, name="deploy-notes", description="Deploy", body="See [[rollback-billing]]."
    )
    indexing.apply_pending()
    out = StringIO()

    call_command("search", "rollback", "--no-semantic", stdout=out)

    assert "[[«rollback»-billing" in out.getvalue() and "[[[" not in out.getvalue()


def test_manage_search_indents_every_snippet_line_and_says_starred(project: Project) -> None:
    # A snippet of a list began its second line at the margin, where it read as the
    # next hit; a starred hit came first above higher scores with nothing said why.
    body = "Steps:\n\n- tag the rollout\n- watch the rollout dashboards\n- page on-call"
    services.memory_create(project=project, name="rollout-steps", description="How", body=body)
    starred = services.memory_create(project=project, name="rollout-star", description="Rollout")
    services.favorite_toggle(item=starred, value=True)
    indexing.apply_pending()
    out = StringIO()

    call_command("search", "rollout", "--no-semantic", stdout=out)

    lines = out.getvalue().splitlines()
    assert re.match(r"\s+1\. rollout-star \[fact, billing-api\] starred ", lines[0]), lines
    stepped = next(n for n, line in enumerate(lines) if "2. rollout-steps" in line)
    snippet = lines[stepped + 1 : -1]
    assert len(snippet) > 1 and all(line.startswith("       ") for line in snippet), lines
    assert "starred" not in lines[stepped]


def test_manage_search_says_when_more_hits_follow_the_ones_it_counted(
    project: Project,
) -> None:
    # "hits 1-3 of 3" when the full-text channel had stopped at its depth.
    for n in range(70):
        services.memory_create(project=project, name=f"tern-{n}", description=f"tern {n}")
    indexing.apply_pending()
    out = StringIO()

    call_command("search", "tern", "--no-semantic", "--limit", "3", stdout=out)
    call_command("search", "tern", "--no-semantic", "--offset", "60", stdout=out)

    counted = [line for line in out.getvalue().splitlines() if line.startswith("hits ")]
    assert counted == ["hits 1-3 of 61 or more (--offset reads on)", "hits 61-70 of 70"]


@pytest.mark.parametrize("command", ["recall", "search"])
def test_manage_recall_and_search_refuse_a_project_no_one_has(
    command: str, project: Project
) -> None:
    # They answered with the global memories and exit code 0.

    with pytest.raises(CommandError, match="no project with slug 'nosuch'"):
        call_command(command, "deploy", "--project", "nosuch")
    call_command(command, "deploy", "--project", project.slug, stdout=StringIO())


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--interval", "-1", "give at least 0.01 seconds"),  # crashed the loop's sleep
        ("--interval", "0", "give at least 0.01 seconds"),  # a busy loop
        ("--maintain-every", "-5", "give at least 0 seconds"),  # maintenance at every poll
        ("--expire-every", "x", "is not a number of seconds"),
    ],
)
def test_the_index_worker_refuses_a_period_it_cannot_keep(flag: str, value: str, said: str) -> None:
    with pytest.raises(CommandError, match=said):
        call_command("index_worker", flag, value)


def test_reindex_refuses_vectors_from_a_folder_that_is_not_there(tmp_path: Path) -> None:
    # It was ignored: every text embedded again, exit code 0.
    with pytest.raises(CommandError, match="--vectors-from .*: no such folder"):
        call_command("reindex", "--vectors-from", str(tmp_path / "nonexistent"))


def test_index_status_tells_queued_writes_from_damage(project: Project) -> None:
    # Jobs only waiting for the worker were reported as drift to repair.
    if connection.vendor == "postgresql":
        pytest.skip(
            "the PostgreSQL profile writes the planes in the write's transaction: no job "
            "waits, so there is no queued drift to tell apart (the embedded pass runs this)"
        )
    services.memory_create(project=project, name="queued", description="waits for the worker")
    out = StringIO()

    with pytest.raises(SystemExit):
        call_command("index_status", "--fail-on-drift", stdout=out)
    indexing.apply_pending()
    after = StringIO()
    call_command("index_status", "--fail-on-drift", stdout=after)

    assert "drift found while 1 jobs wait" in out.getvalue() and "--repair`" in out.getvalue()
    assert "no drift" in after.getvalue()


def test_migrate_data_names_a_bad_source_and_makes_no_file(tmp_path: Path) -> None:
    # A bad URL's error named DATABASE_URL; a SQLite source that was not there was
    # created empty, then the copy failed on a missing table.
    missing = tmp_path / "nonexistent.sqlite3"

    with pytest.raises(CommandError, match=r"^--from must be postgres://\.\.\. or sqlite"):
        call_command("migrate_data", "--from", "foo://bar")
    with pytest.raises(CommandError, match="--from: no SQLite database at"):
        call_command("migrate_data", "--from", f"sqlite:///{missing}")

    assert not missing.exists()


def test_migrate_data_names_a_source_that_is_no_database(tmp_path: Path) -> None:
    # "file is not a database" ended in a traceback.
    text = tmp_path / "notes.sqlite3"
    text.write_text("not a database\n" * 100)

    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "RECALL_PROFILE"}}
    env["RECALL_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate_data", "--from", f"sqlite:///{text}"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"cannot copy sqlite:///{text}: file is not a database" in done.stderr


def test_migrate_data_from_an_older_releases_database_says_to_migrate_it_first(
    tmp_path: Path,
) -> None:
    # It ended "cannot copy ...: no such column: console_idempotencykey.text" and left
    # the operator to guess that the source wanted this release's migrations.
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "RECALL_PROFILE"}}
    old = {**env, "RECALL_DATA_DIR": str(tmp_path / "old")}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "console", "0021", "-v0"], cwd=ROOT, env=old, check=True)
    source = f"sqlite:///{tmp_path / 'old' / 'recall.sqlite3'}"
    target = f"sqlite:///{tmp_path / 'new' / 'recall.sqlite3'}"

    done = subprocess.run(
        [*manage, "migrate_data", "--from", source, "--to", target],
        cwd=ROOT, env={**env, "RECALL_DATA_DIR": str(tmp_path / "data")},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip

    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "the source database is an older release's" in done.stderr
    assert f"`DATABASE_URL={source} manage.py migrate`" in done.stderr
    assert "nothing was copied" in done.stderr and not (tmp_path / "new").exists()


SMALL_DEPLOYMENT = """
import django; django.setup()
from console import services
ops = services.project_create(slug="ops")
services.memory_create(project=ops, name="pager", description="The pager rotates weekly",
                       body="See [[rota]].", tags=["#Ops"])
services.memory_create(project=ops, name="rota", description="Who is on call")
"""
MOVED_TABLES = ("console_project", "console_memory", "console_memoryrevision", "console_linkname")


def sqlite_env(data_dir: Path) -> dict[str, str]:
    """A SQLite deployment's environment over `data_dir` (whichever profile the tests run)."""
    env = {k: v for k, v in os.environ.items()
           if k not in {"DATABASE_URL", "RECALL_DATABASE_URL", "RECALL_PROFILE"}}  # fmt: skip
    return {**env, "RECALL_DATA_DIR": str(data_dir), "DJANGO_SETTINGS_MODULE": "console.settings"}


def sqlite_counts(path: Path) -> list[int]:
    with closing(sqlite3.connect(path)) as db:
        return [db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in MOVED_TABLES]


def test_migrate_data_copies_into_a_new_sqlite_file_given_by_to(tmp_path: Path) -> None:
    # Every form of `--to` failed: migrating the target ran the data migrations on the
    # configured database ("no such table: console_edge" where that was new, "NOT NULL
    # constraint failed: console_memoryrevision.changed_by" where it was migrated), and a
    # target in a folder not yet there was "unable to open database file".
    old = sqlite_env(tmp_path / "old")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=old, check=True)
    subprocess.run([sys.executable, "-c", SMALL_DEPLOYMENT], cwd=ROOT, env=old, check=True)
    source = tmp_path / "old" / "recall.sqlite3"
    mover = sqlite_env(tmp_path / "mover")  # its configured database is never made
    targets = [tmp_path / "new.sqlite3", tmp_path / "not" / "yet" / "new.sqlite3"]

    runs = [
        subprocess.run(
            [
                sys.executable,
                "manage.py",
                "migrate_data",
                "--from",
                f"sqlite:///{source}",
                "--to",
                f"sqlite:///{target}",
            ],
            cwd=ROOT,
            env=mover,
            capture_output=True,
            text=True,
            timeout=300,
        )  # fmt: skip
        for target in targets
    ]

    for done, target in zip(runs, targets, strict=True):
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"planes not rebuilt: {target} is not the configured database" in done.stdout
        assert sqlite_counts(target) == sqlite_counts(source) == [1, 2, 2, 1]
    assert not (tmp_path / "mover" / "recall.sqlite3").exists()


def test_a_failed_migrate_data_takes_away_the_sqlite_target_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A failed run left the target half-migrated and said nothing of it.
    source = tmp_path / "old.sqlite3"
    sqlite3.connect(source).close()
    target = tmp_path / "not" / "yet" / "new.sqlite3"

    def fail(source: str, target: str) -> dict[str, int]:
        Path(connections.settings[target]["NAME"]).touch()  # as connecting makes it
        raise OperationalError("disk I/O error")

    monkeypatch.setattr(migrating, "skipped_rows", lambda source: {})
    monkeypatch.setattr(migrating, "behind", lambda source: [])
    monkeypatch.setattr(migrating, "copy", fail)
    with pytest.raises(CommandError, match=f"disk I/O error; removed {target}, which this"):
        call_command("migrate_data", "--from", f"sqlite:///{source}", "--to", f"sqlite:///{target}")

    assert not (tmp_path / "not").exists()


def test_export_names_a_place_it_cannot_write(tmp_path: Path) -> None:
    # A folder given for the JSON lines file, a file for the markdown folder: tracebacks.
    afile = tmp_path / "a.md"
    afile.write_text("x")

    with pytest.raises(CommandError, match=f"^cannot export to {tmp_path}: "):
        call_command("export_memories", "--out", str(tmp_path))
    with pytest.raises(CommandError, match="^cannot export to .*a.md: "):
        call_command("export_memories", "--out", str(afile), "--format", "markdown")


def test_project_isolation_changes_an_existing_project(project: Project) -> None:
    # `project create billing-api --isolation confidential` said "already exists" and
    # nothing else could change it (the import's message pointed at `manage.py project`).
    out, err = StringIO(), StringIO()

    call_command("project", "isolation", "billing-api", "confidential", stdout=out)
    call_command("project", "isolation", "billing-api", "confidential", stdout=out)

    assert out.getvalue().splitlines() == [
        "billing-api: open -> confidential",
        "billing-api is already confidential",
    ]
    assert Project.objects.get(slug="billing-api").isolation == "confidential"
    with pytest.raises(CommandError, match="there is no project 'nosuch'"):
        call_command("project", "isolation", "nosuch", "sealed")
    with pytest.raises(CommandError, match="invalid choice: 'secret'"):
        call_command("project", "isolation", "billing-api", "secret")
    # Sealing says which tokens it leaves refused (bound to it and to others).
    services.project_create(slug="ops")
    tokens.token_create(agent="both", projects=["billing-api", "ops"])
    tokens.token_create(agent="own", projects=["billing-api"])
    call_command("project", "isolation", "billing-api", "sealed", stdout=out, stderr=err)
    assert Project.objects.get(slug="billing-api").isolation == "sealed"
    assert err.getvalue().startswith("1 live token bound to billing-api and other projects")


def test_project_create_of_a_slug_taken_says_so_and_what_changes_it(project: Project) -> None:
    # "slug: Project with this Slug already exists." named neither its isolation
    # nor `project isolation`, what an operator re-running create wanted.
    with pytest.raises(CommandError) as caught:
        call_command("project", "create", "billing-api", "--isolation", "sealed")

    assert str(caught.value) == (
        "there is already a project 'billing-api' (open): "
        "`manage.py project isolation billing-api ...` changes its isolation"
    )
    assert Project.objects.get(slug="billing-api").isolation == "open"


def test_project_create_names_the_field_each_error_is_about() -> None:
    # "This field cannot be blank. This field cannot be blank." named no field.
    with pytest.raises(CommandError) as caught:
        call_command("project", "create", "")

    said = str(caught.value)
    assert said.startswith("slug: This field cannot be blank.")
    assert "name (default: the slug): This field cannot be blank." in said


@pytest.mark.django_db(transaction=True)
def test_the_index_worker_reconnects_after_the_server_drops_its_connection(
    planes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database restart or failover drops the worker's connection: it looped on
    "the connection is closed" forever (2-3 tracebacks a second) and applied
    nothing until an operator ran sync_indexes; the gunicorn workers recovered."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite has no server to drop a connection (the PostgreSQL pass runs this)")
    from console.management.commands import index_worker

    made = services.memory_create(
        project=services.project_create(slug="ops"), name="pager-rota", description="Mondays"
    )
    indexing.apply_pending()
    indexing.enqueue("memory", made.pk, "upsert")
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()")
        (pid,) = cur.fetchone()
    other = connections.create_connection("default")
    with closing(other), other.cursor() as cur:
        cur.execute("SELECT pg_terminate_backend(%s)", [pid])
    monkeypatch.setattr(index_worker, "RETRY_PAUSE_S", 0.0)
    passes = iter(range(3))
    options = {"interval": 0.01, "maintain_every": 0, "expire_every": 0}

    index_worker.Command(stdout=StringIO(), stderr=StringIO())._loop(
        lambda: next(passes, None) is None, 0, options, services.plane_folders()
    )

    assert not IndexJob.objects.exists()


def test_reindex_says_vectors_were_copied_only_when_some_were(project: Project) -> None:
    # "embedded 63 texts, the other vectors copied" of a rebuild that copied none.
    services.memory_create(project=project, name="rota", description="Mondays")
    services.memory_create(project=project, name="pager", description="The pager rotates")
    out = StringIO()

    call_command("reindex", stdout=out)

    said = re.search(r"reindexed (\d+) items .*embedded (\d+) texts", out.getvalue())
    assert said is not None, out.getvalue()
    items, embedded = int(said.group(1)), int(said.group(2))
    # The embedded planes embed both texts again; PostgreSQL's keep their vectors.
    assert ("copied" in out.getvalue()) == (embedded < items), out.getvalue()
