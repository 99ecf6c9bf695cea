"""The ORM MemoryStore beyond the shared contract (tests/contracts/test_memory_store.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import connection

from console import indexing, selectors, services, wiring
from console import store as store_module
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


def test_rows_are_kept_within_reading_and_read_afresh_after(
    project: Project, django_assert_num_queries: Any
) -> None:
    """`reading` keeps a request's rows for that request alone: within the block a row
    is read once (even by another of the store's reads), after it every read goes to the
    database and sees a write made meanwhile."""
    memory = make(project, "kept-row", body="first")
    store = DjangoStore()
    with store.reading():
        assert store.hydrate([memory.pk])[memory.pk].body == "first"
        Memory.objects.filter(pk=memory.pk).update(body="second")
        with django_assert_num_queries(0):
            assert store.hydrate([memory.pk])[memory.pk].body == "first"
    assert store_module._READ.get() is None
    with django_assert_num_queries(1):
        assert store.hydrate([memory.pk])[memory.pk].body == "second"
    with store.reading():
        assert store.hydrate([memory.pk])[memory.pk].body == "second"


def test_a_write_between_two_recalls_is_seen(project: Project) -> None:
    """Each Recall keeps its rows for itself alone: the next one reads them afresh (the
    semantic pool, the session channel and hydration all read the turns below), and
    no rows are kept once a Recall has answered."""
    turns = [
        make(project, f"turn-{n}", kind="episode", body=f"the deploy canary turn {n}",
             session_id="ops:s1", session_order=n)
        for n in range(4)
    ]  # fmt: skip
    indexing.apply_pending()
    seen = []
    real = DjangoStore.hydrate

    def spy(self: DjangoStore, *args: Any, **kw: Any) -> dict[str, Record]:
        seen.append(store_module._READ.get() is not None)
        return real(self, *args, **kw)

    with pytest.MonkeyPatch.context() as m:
        m.setattr(DjangoStore, "hydrate", spy)
        first = selectors.memory_recall(query="deploy canary turn", project="ops", budget=2000)
    assert seen and all(seen)  # the Recall's reads were kept for it
    assert store_module._READ.get() is None  # and none outlive it
    assert "changed" not in str(first.items)
    Memory.objects.filter(pk=turns[2].pk).update(body="the deploy canary turn changed")
    wiring.engine().forget()  # as a write's commit does (the hot tier's packs)
    again = selectors.memory_recall(query="deploy canary turn", project="ops", budget=2000)
    assert any(h.id == turns[2].pk and "changed" in (h.text or "") for h in again.items)


def test_a_recall_reads_its_projects_isolation_once(project: Project) -> None:
    """The hot tier's key and the scope filter both need the project's isolation: one
    Recall is one `reading` block, so the second is the first's, not another query."""
    make(project, "isolation-read", body="the canary isolation read")
    indexing.apply_pending()
    wiring.engine().forget()
    reads = []

    def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if '"isolation"' in sql and "console_project" in sql:
            reads.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        selectors.memory_recall(query="canary isolation", project="ops", budget=1000)
    assert len(reads) == 1
    assert store_module._READ.get() is None
    with connection.execute_wrapper(count):
        assert DjangoStore().isolation("ops") == "sealed"  # outside a Recall: read afresh
    assert len(reads) == 2
