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

    preview = importing.preview_records(reading.read_records([path]), project="beta", copies=True)
    assert (preview.memories, preview.notes, preview.present, preview.errors) == (2, 1, 0, [])
    assert not Memory.objects.filter(project=world["beta"]).exists()  # a preview writes nothing

    report = importing.import_records(reading.read_records([path]), project="beta", copies=True)

    assert (report.memories, report.notes, report.errors) == (2, 1, [])
    copied = Memory.objects.filter(project=world["beta"])
    assert sorted(copied.values_list("name", flat=True)) == ["deploy-steps", "rollback"]
    assert Memory.objects.filter(project=world["alpha"]).count() == 2  # the original stays
    assert Note.objects.filter(project=world["beta"], title="Runbook").exists()
    edge = Edge.objects.get(origin="explicit", src__project=world["beta"])  # the copy's own edge
    assert edge.dst.project == world["beta"] and edge.rel == "relates_to"
    assert Edge.objects.filter(origin="explicit").count() == edges_before + 1
    assert not IndexJob.objects.exists() and indexing.status().drift == 0  # through the outbox

    again = importing.preview_records(reading.read_records([path]), project="beta", copies=True)
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

    preview = importing.preview_records(reading.read_records([path]), project="alpha", copies=True)

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
    first = importing.preview_records(reading.read_records([path]), project="beta", copies=True)
    assert (first.notes, first.present) == (1, 0)
    importing.import_records(reading.read_records([path]), project="beta", copies=True)

    again = importing.preview_records(reading.read_records([path]), project="beta", copies=True)
    report = importing.import_records(reading.read_records([path]), project="beta", copies=True)

    assert (again.notes, again.present) == (0, 1)
    assert (report.notes, report.skipped) == (0, 1)
    assert Note.objects.filter(project=world["beta"]).count() == 1
    path.write_text(json.dumps(other) + "\n", encoding="utf-8")  # a different body is new
    assert importing.import_records(reading.read_records([path]), project="beta").notes == 1


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
