"""Import and export for people (console/transfer.py, console/importing/copies.py).

The import a person makes is a preview (the import's own checks, nothing
written), then the command's import into one project, copying rows of other
projects under ids of their own; the export is the command's lines.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command

from console import exporting, importing, indexing, reading, transfer
from console.importing import copies, parsing
from console.models import Edge, IndexJob, Memory, Note, Project
from tests.console.transfer_world import uploads_fixture, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def previewed(path: Path, project: str) -> importing.Preview:
    """The console's preview of the file at `path` into `project` (rows of other
    projects copied in, as the console imports them)."""
    return importing.preview_records(reading.read_records([path]), project=project, copies=True)


def imported(path: Path, project: str, *, copies: bool = True) -> importing.ImportReport:
    """The file at `path` imported into `project` (`copies`: as the console does)."""
    return importing.import_records(reading.read_records([path]), project=project, copies=copies)


def test_export_filename_says_project_and_date() -> None:
    assert transfer.export_filename("alpha", today=date(2026, 12, 7)) == (
        "recall-alpha-2026-12-07.jsonl"
    )
    assert transfer.export_filename(None, today=date(2026, 12, 7)) == "recall-all-2026-12-07.jsonl"


# --- import: service ----------------------------------------------------------


def test_an_export_imported_into_another_project_is_copied_and_a_second_time_adds_nothing(
    world: dict[str, Project], tmp_path: Path
) -> None:
    path = tmp_path / "alpha.jsonl"
    call_command("export_memories", "--out", str(path), "--project", "alpha")
    edges_before = Edge.objects.filter(origin="explicit").count()

    preview = previewed(path, "beta")
    assert (preview.memories, preview.notes, preview.present, preview.errors) == (2, 1, 0, [])
    assert not Memory.objects.filter(project=world["beta"]).exists()  # a preview writes nothing

    report = imported(path, "beta")

    assert (report.memories, report.notes, report.errors) == (2, 1, [])
    copied = Memory.objects.filter(project=world["beta"])
    assert sorted(copied.values_list("name", flat=True)) == ["deploy-steps", "rollback"]
    assert Memory.objects.filter(project=world["alpha"]).count() == 2  # the original stays
    assert Note.objects.filter(project=world["beta"], title="Runbook").exists()
    edge = Edge.objects.get(origin="explicit", src__project=world["beta"])  # the copy's own edge
    assert edge.dst.project == world["beta"] and edge.rel == "relates_to"
    assert Edge.objects.filter(origin="explicit").count() == edges_before + 1
    assert not IndexJob.objects.exists() and indexing.status().drift == 0  # through the outbox

    again = previewed(path, "beta")
    assert (again.memories, again.notes, again.present) == (0, 0, 3)


def test_the_preview_names_each_bad_line_and_the_duplicates(
    world: dict[str, Project], tmp_path: Path
) -> None:
    path = tmp_path / "mixed.jsonl"
    good = {"name": "fresh", "description": "A new fact", "kind": "fact"}
    dup = {"name": "again", "description": "Deploy on Fridays", "external_id": "x-1"}
    lines = [json.dumps(good), "{not json", json.dumps(dup), json.dumps({"kind": "fact"}), "[1]"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    importing.import_records(iter([reading.Record("x", dup)]), project="alpha")

    preview = previewed(path, "alpha")

    assert (preview.memories, preview.present) == (1, 1)
    assert [e.split(":")[1] for e in preview.errors] == ["2", "4", "5"]
    assert "not JSON" in preview.errors[0] and "missing name" in preview.errors[1]


def test_a_note_without_an_id_imported_twice_is_imported_once(
    world: dict[str, Project], tmp_path: Path
) -> None:
    # A memory with no id was skipped on a second import (its text is there); a note
    # was not: the console's second import of the same file made a second note, with
    # the same slug in the same project. Its title and body now count as its identity.
    path = tmp_path / "notes.jsonl"
    note = {"type": "note", "title": "Deploy notes", "body": "Tag, then deploy."}
    other = {"type": "note", "title": "Deploy notes", "body": "Another text."}
    path.write_text(json.dumps(note) + "\n", encoding="utf-8")
    first = previewed(path, "beta")
    assert (first.notes, first.present) == (1, 0)
    imported(path, "beta")

    again = previewed(path, "beta")
    report = imported(path, "beta")

    assert (again.notes, again.present) == (0, 1)
    assert (report.notes, report.skipped) == (0, 1)
    assert Note.objects.filter(project=world["beta"]).count() == 1
    path.write_text(json.dumps(other) + "\n", encoding="utf-8")  # a different body is new
    assert imported(path, "beta", copies=False).notes == 1


def test_the_preview_says_what_the_import_does_with_an_id_or_a_name_twice_in_a_file(
    world: dict[str, Project], tmp_path: Path
) -> None:
    # Two records of one id: the import kept the first and passed over the second, and
    # the preview counted it "already here". Two notes of one name (or a name a note
    # here holds) both came in under it, and reading the note by name became a 400.
    own = "01JZ0000000000000000000001"
    Note.objects.create(project=world["beta"], title="Held", slug="rota")
    lines = [
        {"id": own, "name": "first", "description": "The first text"},
        {"id": own, "name": "second", "description": "Another text"},
        {"external_id": "t-1", "name": "turn", "description": "A turn"},
        {"external_id": "t-1", "name": "turn-again", "description": "Its other text"},
        {"type": "note", "title": "Pager rota", "slug": "pager-rota", "body": "Weekly."},
        {"type": "note", "title": "Pager rota", "slug": "pager-rota", "body": "Daily."},
        {"type": "note", "title": "Rota", "slug": "rota", "body": "Mine."},
    ]
    path = tmp_path / "twice.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    preview = previewed(path, "beta")
    report = imported(path, "beta")

    assert (preview.memories, preview.notes, preview.present) == (2, 3, 0)
    assert (
        [e.split(":")[1] for e in preview.errors]
        == ["2", "4"]
        == [e.split(":")[1] for e in report.errors]
    )
    assert f"id {own} is twice.jsonl:1's too" in preview.errors[0]
    assert "'t-1' is twice.jsonl:3's too" in preview.errors[1]
    assert preview.renamed == [
        "twice.jsonl:6: note 'Pager rota' imported as 'pager-rota-2': the note of "
        "twice.jsonl:5 has the name 'pager-rota'",
        "twice.jsonl:7: note 'Rota' imported as 'rota-2': a note here has the name 'rota'",
    ]
    assert (report.memories, report.notes, report.skipped) == (2, 3, 0)
    assert Memory.objects.get(pk=own).name == "first"
    names = Note.objects.filter(project=world["beta"]).values_list("slug", "body")
    assert {("pager-rota", "Weekly."), ("pager-rota-2", "Daily."), ("rota-2", "Mine.")} <= set(
        names
    )


def test_an_export_within_projects_keeps_them_and_the_global_items(
    world: dict[str, Project],
) -> None:
    lines = [json.loads(line) for _, line in exporting.jsonl_lines(within=("alpha",))]

    rows = {(r["type"], r.get("name") or r.get("slug")) for r in lines if r["type"] != "edge"}
    assert {name for kind, name in rows if kind != "revision"} == {
        "alpha", "deploy-steps", "rollback", "runbook", "house-style"
    }  # fmt: skip
    assert {name for kind, name in rows if kind == "revision"} <= {
        "deploy-steps", "rollback", "house-style"
    }  # fmt: skip
    assert sum(r["type"] == "edge" for r in lines) == 1
    every = {r.get("name") for _, line in exporting.jsonl_lines() for r in [json.loads(line)]}
    assert "vault-code" in every  # without `within`, every project (staff, the command)


def test_ids_of_other_projects_copy_to_ids_of_the_target() -> None:
    old = "01HZZZZZZZZZZZZZZZZZZZZZZZ"
    into_b = copies.copy_id(old, project="beta")
    assert into_b == copies.copy_id(old, project="beta")  # the same file, the same ids
    assert into_b != copies.copy_id(old, project="gamma")
    assert into_b[:10] == old[:10] and parsing.ULID_RE.match(into_b)  # time order kept


def test_an_upload_is_applied_once_whoever_asks(world: dict[str, Project]) -> None:
    kept = transfer.upload_keep(SimpleUploadedFile("a.jsonl", b'{"name": "x", "body": "y"}\n'))
    found = transfer.upload_find(kept.token)
    assert found is not None

    first = transfer.import_apply(found, project="beta")

    assert first is not None and first.memories == 1
    assert transfer.import_apply(found, project="beta") is None  # a double click
    assert transfer.upload_find(kept.token) is None
