"""The ORM MemoryStore beyond the shared contract (tests/contracts/test_memory_store.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from console import services
from console.models import Memory, Project
from console.store import MEMORY_COLUMNS, DjangoStore, memory_row_record
from recall.types import MEMORY, Filter, Record

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(planes: object) -> Project:
    return services.project_create(slug="ops", isolation="sealed")


def make(project: Project | None, name: str, **fields: object) -> Memory:
    return services.memory_create(
        project=project, kind=fields.pop("kind", "fact"), name=name, description=name, **fields
    )


def test_identifier_lanes_rank_exact_id_then_name_then_prefix(project: Project) -> None:
    first = make(project, "alpha")
    named = make(project, first.pk.lower())  # a name that spells the first id
    store = DjangoStore()

    by_id = store.identifiers(first.pk, where=Filter(), limit=5)
    assert [r.id for r in by_id] == [first.pk, named.pk]

    by_prefix = store.identifiers(first.pk[:10].lower(), where=Filter(), limit=5)
    assert first.pk in [r.id for r in by_prefix]

    assert [r.id for r in store.identifiers("alpha", where=Filter(), limit=5)] == [first.pk]


def test_identifiers_respect_scope_validity_and_ignore_phrases(project: Project) -> None:
    other = services.project_create(slug="web")
    mine, theirs = make(project, "shared-name"), make(other, "shared-name")
    services.memory_archive(memory=theirs)
    store = DjangoStore()

    assert [r.id for r in store.identifiers("shared-name", where=Filter(), limit=5)] == [mine.pk]
    scoped = Filter(projects=("web",), include_global=False, active_only=False)
    assert [r.id for r in store.identifiers("shared-name", where=scoped, limit=5)] == [theirs.pk]
    assert store.identifiers("shared name", where=Filter(), limit=5) == []
    assert store.identifiers("short", where=Filter(), limit=5) == []


def test_note_slug_is_an_identifier(project: Project) -> None:
    note = services.note_create(project=project, title="Pager rota")

    found = DjangoStore().identifiers("pager-rota", where=Filter(), limit=5)

    assert [(r.id, r.item) for r in found] == [(note.pk, "note")]


def test_browse_is_newest_first_and_isolation_is_read(project: Project) -> None:
    old, new = make(project, "old-one"), make(project, "new-one")
    services.memory_update(memory=old, description="touched")  # now the newest

    rows = DjangoStore().browse(where=Filter(projects=("ops",)), limit=5)

    assert [r.id for r in rows] == [old.pk, new.pk]
    assert DjangoStore().isolation("ops") == "sealed"
    assert DjangoStore().isolation("nope") == "open"


def test_a_row_maps_to_the_record_field_by_field() -> None:
    """`memory_row_record` builds Records positionally: each column lands in its field."""
    at = [datetime(2025, 1, d, tzinfo=UTC) for d in range(1, 8)]
    row = ("01ID", "ops", "episode", "a-name", "desc", "body", ["t1", "t2"], 0.7, True,
           at[0], at[1], at[2], "01NEW", "s-1", "import", at[3], at[4], 12, "agent-9",
           at[5], 3, at[6], 4, 5)  # fmt: skip
    assert dict(zip(MEMORY_COLUMNS, row, strict=True))["session_order"] == 12
    assert memory_row_record(row) == Record(
        id="01ID", item=MEMORY, project="ops", kind="episode", name="a-name", title="a-name",
        description="desc", body="body", tags=("t1", "t2"), importance=0.7, favorite=True,
        active=False, created=at[1], updated=at[2], superseded_by="01NEW", session_id="s-1",
        source="import", valid_from=at[3], occurred_at=at[4], session_order=12,
        agent_id="agent-9", invalid_at=at[0], expires_at=at[5], access_count=3,
        last_accessed_at=at[6], helpful=4, harmful=5,
    )  # fmt: skip
    live_row = (*row[:9], None, *row[10:])
    assert memory_row_record(live_row).active
