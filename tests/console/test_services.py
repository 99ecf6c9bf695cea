"""Write services on the real database and the real planes."""

from __future__ import annotations

import copy
import shutil
import threading
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from console import indexing, services, wiring
from console.models import Edge, IndexJob, LinkName, Memory, MemoryRevision, Project
from recall.indexes import layout
from recall.indexes.hot_vectors import Replicable
from recall.indexes.lance_index import LanceIndex
from recall.types import Filter

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(planes: Path) -> Project:
    return services.project_create(slug="billing-api", name="Billing API")


def make_memory(project: Project | None, **overrides: Any) -> Memory:
    fields: dict[str, Any] = {
        "kind": "gotcha",
        "name": "chroma-boot-race",
        "description": "Chroma must start before the API or boot fails",
        "body": "Start chroma first; the API retries only three times.",
    }
    fields.update(overrides)
    return services.memory_create(project=project, **fields)


def fts_ids(text: str, **where: Any) -> list[str]:
    hits = wiring.text_index().search(text, where=Filter(**where), limit=10)
    return [h.id for h in hits]


def vector_ids() -> set[str]:
    vectors = wiring.vector_index()
    assert vectors is not None
    return vectors.ids()


def vector_rows() -> list[tuple[str, tuple[float, ...]]]:
    """(id, vector) per row of the vector plane."""
    plane = wiring.vector_plane()
    assert plane is not None
    return [(i, tuple(v.tolist())) for i, v in plane.vectors(sorted(plane.ids())).items()]


@pytest.mark.outbox
def test_create_commits_row_and_job_then_both_planes_have_it(project: Project) -> None:
    memory = make_memory(project)

    assert list(IndexJob.objects.values_list("item_id", "op")) == [(memory.pk, "upsert")]
    assert indexing.apply_pending().applied == 1
    assert IndexJob.objects.count() == 0
    assert fts_ids("chroma") == [memory.pk]
    assert memory.pk in vector_ids()


def test_supersede_stamps_old_and_creates_new_atomically(project: Project) -> None:
    old = make_memory(project)
    new = services.memory_supersede(memory=old, description="Chroma now starts lazily")
    old.refresh_from_db()
    indexing.apply_pending()

    assert old.invalid_at is not None and old.superseded_by_id == new.pk
    assert new.name == old.name and new.invalid_at is None
    assert fts_ids("chroma") == [new.pk]
    assert set(fts_ids("chroma", active_only=False)) == {old.pk, new.pk}
    with pytest.raises(ValidationError, match=f"already superseded by {new.pk}"):
        services.memory_supersede(memory=old, description="again")


def test_a_refusal_down_a_chain_names_the_version_true_now(project: Project) -> None:
    # An agent told "supersede that one instead" was sent one step at a time
    # through a chain of 409s; each refusal now names the end of the chain.
    first = make_memory(project)
    second = services.memory_supersede(memory=first, description="Chroma starts lazily")
    third = services.memory_supersede(memory=second, description="Chroma starts eagerly")
    first.refresh_from_db()

    with pytest.raises(ValidationError) as refused:
        services.memory_supersede(memory=first, description="again")
    said = " ".join(refused.value.messages)
    assert f"already superseded by {second.pk}" in said
    assert f"the current version is {third.pk}" in said
    for change in (
        lambda: services.memory_update(memory=first, description="edited"),
        lambda: services.memory_restore(memory=first),
    ):
        with pytest.raises(ValidationError, match=f"edit its replacement, {third.pk}"):
            change()


def test_a_supersede_that_changes_nothing_is_refused_and_writes_nothing(
    project: Project,
) -> None:
    old = make_memory(project, tags=["boot", "chroma"])
    same = {"name": old.name, "description": f" {old.description} ", "body": old.body,
            "kind": old.kind, "tags": [t.upper() for t in old.tags]}  # fmt: skip

    for fields in ({}, same):
        with pytest.raises(ValidationError, match="same as this one"):
            services.memory_supersede(memory=old, **fields)

    old.refresh_from_db()
    assert old.invalid_at is None and Memory.objects.count() == 1
    # A new valid time alone is a change: the same text, true again from then on.
    later = old.valid_from + timedelta(seconds=1)  # a future one would read as true now
    assert services.memory_supersede(memory=old, valid_from=later).valid_from == later


def test_the_star_moves_to_the_replacement(project: Project) -> None:
    old = make_memory(project)
    services.favorite_toggle(item=old, value=True)

    new = services.memory_supersede(memory=old, description="Chroma now starts lazily")

    old.refresh_from_db()
    new.refresh_from_db()
    assert new.favorite and not old.favorite


def test_an_edit_that_changes_nothing_writes_nothing(project: Project, monkeypatch: Any) -> None:
    memory = make_memory(project, tags=["boot"])
    indexing.apply_pending()
    revisions = MemoryRevision.objects.filter(memory_id=memory.pk).count()
    queued: list[tuple[str, ...]] = []  # what reaches the planes (an outbox job, or the
    real = indexing.enqueue  # PostgreSQL profile's write in the transaction)
    monkeypatch.setattr(indexing, "enqueue", lambda *job: (queued.append(job), real(*job)))

    same = services.memory_update(memory=memory, description=f"{memory.description} ",
                                  body=f"{memory.body}\n", tags=["BOOT"])  # fmt: skip

    assert same.updated == memory.updated
    assert MemoryRevision.objects.filter(memory_id=memory.pk).count() == revisions
    assert queued == []
    changed = services.memory_update(memory=memory, importance=0.9)
    assert changed.updated > memory.updated and queued == [("memory", memory.pk, "upsert")]


def test_archive_restore_and_delete_reach_the_planes(project: Project) -> None:
    memory = make_memory(project)
    indexing.apply_pending()

    services.memory_archive(memory=memory)
    indexing.apply_pending()
    assert fts_ids("chroma") == []

    services.memory_restore(memory=memory)
    indexing.apply_pending()
    assert fts_ids("chroma") == [memory.pk]

    services.memory_delete(memory=memory)
    indexing.apply_pending()
    assert fts_ids("chroma", active_only=False) == []
    assert memory.pk not in vector_ids()


def test_favorite_toggle_never_bumps_updated(project: Project) -> None:
    memory = make_memory(project)
    before = Memory.objects.get(pk=memory.pk).updated

    assert services.favorite_toggle(item=memory) is True
    assert services.favorite_toggle(item=memory) is False
    assert services.favorite_toggle(item=memory, value=True) is True

    row = Memory.objects.get(pk=memory.pk)
    assert row.favorite is True and row.updated == before


def test_update_bumps_updated_and_reindexes(project: Project) -> None:
    memory = make_memory(project, created=timezone.now() - timedelta(days=3))
    services.memory_update(memory=memory, description="Redis eviction storms at midnight")
    indexing.apply_pending()

    assert Memory.objects.get(pk=memory.pk).updated > memory.created
    assert fts_ids("eviction") == [memory.pk]
    assert fts_ids("chroma") == [memory.pk]  # the body still says chroma


def test_wikilinks_become_edges_and_follow_the_body(project: Project) -> None:
    target = make_memory(project, name="deploy-runbook", kind="runbook", body="Deploy steps")
    other = make_memory(project, name="cache-warmup", kind="runbook", body="Warm the cache")
    source = make_memory(project, name="release-day", body="Follow [[deploy-runbook]] then chat.")

    assert list(Edge.objects.values_list("src", "dst", "origin")) == [
        (source.pk, target.pk, "wikilink")
    ]
    services.memory_update(memory=source, body="Now see [[cache-warmup|warm-up]] instead.")
    assert list(Edge.objects.values_list("dst", flat=True)) == [other.pk]


def test_link_to_a_missing_memory_waits_until_it_exists(project: Project) -> None:
    source = make_memory(project, name="release-day", body="See [[rollback-plan]].")
    assert Edge.objects.count() == 0

    target = make_memory(project, name="rollback-plan", kind="runbook", body="Roll back.")

    assert list(Edge.objects.values_list("src", "dst")) == [(source.pk, target.pk)]


def test_the_names_a_body_links_follow_it(project: Project) -> None:
    source = make_memory(
        project, name="release-day", body="See [[rollback-plan|the plan]], [[rollback-plan-v2]]."
    )
    names = LinkName.objects.filter(src=source).values_list("name", flat=True)
    assert sorted(names) == ["rollback-plan", "rollback-plan-v2"]

    services.memory_update(memory=source, body="No links now.")
    assert not LinkName.objects.filter(src=source).exists()
    services.memory_update(memory=source, body="Back to [[rollback-plan]].")
    Memory.objects.filter(pk=source.pk).delete()
    assert not LinkName.objects.exists()


def test_a_waiting_link_resolves_by_its_exact_name_and_a_global_one_anywhere(
    project: Project,
) -> None:
    source = make_memory(project, name="release-day", body="See [[rollback-plan-v2]].")
    make_memory(project, name="rollback-plan", kind="runbook", body="Roll back.")
    assert Edge.objects.count() == 0  # a name the link only starts with

    target = make_memory(None, name="rollback-plan-v2", kind="runbook", body="Roll back, v2.")

    assert list(Edge.objects.values_list("src", "dst")) == [(source.pk, target.pk)]


def test_a_name_is_held_only_by_an_active_unexpired_memory_of_the_same_scope(
    project: Project,
) -> None:
    other = services.project_create(slug="search-api", name="Search API")
    make_memory(other, name="deploy-runbook", kind="runbook", body="theirs")
    make_memory(None, name="deploy-runbook", kind="runbook", body="global")
    gone = make_memory(project, name="deploy-runbook", kind="runbook", body="ours")
    with pytest.raises(services.StateConflict, match="already the name of an active memory"):
        make_memory(project, name="deploy-runbook", kind="runbook", body="ours again")

    Memory.objects.filter(pk=gone.pk).update(expires_at=timezone.now() - timedelta(minutes=1))
    again = make_memory(project, name="deploy-runbook", kind="runbook", body="ours, renewed")

    assert again.pk != gone.pk


def test_link_resolves_in_project_before_global(project: Project) -> None:
    global_one = make_memory(None, name="style-guide", kind="convention", body="global")
    local = make_memory(project, name="style-guide", kind="convention", body="local")
    source = make_memory(project, name="review", body="Check [[style-guide]].")

    assert list(Edge.objects.filter(src=source).values_list("dst", flat=True)) == [local.pk]
    assert global_one.pk != local.pk


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"body": "x" * 1_000_000}, "body", "the limit is 200,000"),
        ({"name": "has spaces"}, "name", "is not a valid name"),
        ({"name": "café-ünïcode"}, "name", "is not a valid name"),
        ({"name": ""}, "name", "cannot be blank"),
        ({"kind": "rumour"}, "kind", "is not a valid choice"),
        ({"importance": 3}, "importance", "between 0 and 1"),
        ({"description": "d" * 151}, "description", "at most 150 characters"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message_and_nothing_written(
    project: Project, overrides: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(ValidationError) as error:
        make_memory(project, **overrides)

    assert message in " ".join(error.value.message_dict[field])
    assert Memory.objects.count() == 0
    assert IndexJob.objects.count() == 0


def test_hostile_html_is_stored_verbatim_and_indexed_as_text(project: Project) -> None:
    body = '<script>alert(1)</script> <img src=x onerror="alert(2)"> [x](javascript:alert(3))'
    memory = make_memory(project, body=body)
    indexing.apply_pending()

    assert Memory.objects.get(pk=memory.pk).body == body
    assert fts_ids("alert") == [memory.pk]


@pytest.mark.outbox
def test_failed_index_write_stays_queued_with_its_error_and_is_retried(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = make_memory(project)
    text = wiring.text_index()

    def broken(docs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(text, "upsert", broken)
    report = indexing.apply_pending()
    job = IndexJob.objects.get()
    assert (report.applied, report.failed) == (0, 1)
    assert job.attempts == 1 and "disk full" in job.last_error

    monkeypatch.undo()
    assert indexing.apply_pending().applied == 1
    assert fts_ids("chroma") == [memory.pk]
    assert indexing.status().drift == 0


@pytest.mark.outbox
def test_a_job_that_keeps_failing_is_retried_once_a_minute_and_by_sync_indexes(
    project: Project, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """After 20 failures a job was never claimed again: the worker stopped, and
    `sync_indexes`, which the README says retries it, applied nothing ("0 failed"),
    while index_status blamed a worker that was running."""
    settings.RECALL = {**settings.RECALL, "MAX_JOB_ATTEMPTS": 2}
    memory = make_memory(project)
    text = wiring.text_index()

    def broken(docs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(text, "upsert", broken)
    assert indexing.apply_pending().failed == 1
    assert indexing.apply_pending().failed == 1  # the second failure parks it
    assert (indexing.apply_pending().applied, indexing.apply_pending().failed) == (0, 0)
    said = StringIO()
    with pytest.raises(SystemExit):
        call_command("index_status", "--fail-on-drift", stdout=said)
    assert "1 with errors; 1 retried once a minute" in said.getvalue()
    assert "OSError: disk full" in said.getvalue() and "fix its cause" in said.getvalue()
    assert "has not applied them yet" not in said.getvalue()

    monkeypatch.undo()
    IndexJob.objects.update(claimed_until=timezone.now() - timedelta(seconds=1))  # a minute on
    assert indexing.apply_pending().applied == 1  # the worker's retry
    assert fts_ids("chroma") == [memory.pk]
    services.memory_update(memory=memory, description="Chroma boots late")
    monkeypatch.setattr(text, "upsert", broken)
    indexing.apply_pending(), indexing.apply_pending()  # parked again
    monkeypatch.undo()
    synced = StringIO()
    call_command("sync_indexes", stdout=synced)  # the operator's retry: now
    assert synced.getvalue().startswith("applied 1 jobs\n")
    assert indexing.status().drift == 0 and not IndexJob.objects.exists()


def test_rebuild_recreates_both_planes_from_the_database(project: Project) -> None:
    memories = [make_memory(project, name=f"fact-{i}", kind="fact") for i in range(5)]
    services.note_create(project=project, title="Inbox thought", body="Chroma boot notes")
    indexing.apply_pending()
    wiring.text_index().clear()

    assert len(indexing.status().text.missing) == 6
    assert indexing.rebuild().items == 6
    status = indexing.status()
    assert (status.drift, status.pending, status.text.rows) == (0, 0, 6)
    assert len(fts_ids("chroma")) == 6
    assert {m.pk for m in memories} <= vector_ids()


def test_a_rebuild_in_place_drops_the_rows_of_items_gone_and_doubled_rows(
    project: Project,
) -> None:
    kept = make_memory(project, name="fact-kept", kind="fact")
    indexing.apply_pending()
    plane = wiring.vector_plane()
    if not isinstance(plane, LanceIndex):
        pytest.skip(
            "the doubled and stray rows are planted through LanceDB's table; PostgreSQL's "
            "vector table keys its rows by id, so a doubled row cannot arise there (the "
            "embedded pass runs this)"
        )
    table = plane._handle()
    row = table.search().where(f"id = '{kept.pk}'").limit(None).to_arrow()
    table.add(row)  # a second row for the memory
    table.add(row.set_column(0, "id", pa.array(["01GHOST"])))  # an item gone from the database
    before = indexing.status().vectors
    assert before is not None and (before.duplicates, before.extra) == (1, {"01GHOST"})

    indexing.rebuild()  # rewrites the vector plane in place (same model): keeps, then drops
    after = indexing.status()
    assert after.drift == 0 and after.vectors is not None and after.vectors.rows == 1


def test_rebuild_copies_vectors_whose_text_is_unchanged(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = [make_memory(project, name=f"fact-{i}", kind="fact") for i in range(4)]
    indexing.apply_pending()
    before = dict(vector_rows())
    # Changed behind the planes' back (on PostgreSQL a service write would update them too).
    Memory.objects.filter(pk=memories[0].pk).update(description="an edited description")
    embedder = wiring.embedder()
    assert embedder is not None
    embedded: list[str] = []
    real = embedder.embed
    monkeypatch.setattr(embedder, "embed", lambda texts: embedded.extend(texts) or real(texts))

    rebuilt = indexing.rebuild()

    assert (rebuilt.items, rebuilt.embedded) == (4, 1)
    assert len(embedded) == 1 and "an edited description" in embedded[0]
    after = dict(vector_rows())
    assert all(after[m.pk] == before[m.pk] for m in memories[1:])  # copied, not re-embedded
    assert after[memories[0].pk] != before[memories[0].pk]
    assert indexing.status().drift == 0


def test_rebuild_copies_vectors_from_another_deployments_lancedb_directory(
    project: Project, settings: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`reindex --vectors-from` (and migrate_data): a move keeps what the model computed."""
    if not isinstance(wiring.vector_plane(), Replicable):  # the PostgreSQL profile
        pytest.skip("the embedded profile's LanceDB directory is the source here")
    memories = [make_memory(project, name=f"fact-{i}", kind="fact") for i in range(3)]
    indexing.apply_pending()
    before = dict(vector_rows())
    old = tmp_path / "old-vectors"
    shutil.copytree(settings.RECALL["VECTOR_INDEX_DIR"], old)
    wiring.vector_index().clear()  # type: ignore[union-attr]  # nothing left to reuse here
    embedder = wiring.embedder()
    assert embedder is not None
    monkeypatch.setattr(embedder, "embed", lambda texts: pytest.fail(f"embedded {texts}"))

    rebuilt = indexing.rebuild(known=indexing.vectors_in(old))

    assert (rebuilt.items, rebuilt.embedded) == (3, 0)
    assert dict(vector_rows()) == before
    assert {m.pk for m in memories} <= vector_ids()
    assert indexing.vectors_in(tmp_path / "nothing-here") == {}


def test_a_vector_plane_of_another_layout_is_rebuilt_without_embedding_again(
    project: Project, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A layout change moves the old table aside; reindex copies its vectors by text hash."""
    if not isinstance(wiring.vector_plane(), Replicable):  # the PostgreSQL profile
        pytest.skip("the LanceDB plane's layout is what changes here")
    [make_memory(project, name=f"fact-{i}", kind="fact") for i in range(3)]
    indexing.apply_pending()
    before = dict(vector_rows())
    where = Path(settings.RECALL["VECTOR_INDEX_DIR"])
    (where / layout.MARKER).write_text("3\n")  # as an older release left it
    wiring.reset()  # a fresh process opens the plane: moved aside, not deleted
    assert vector_ids() == set() and layout.previous(where).is_dir()
    embedder = wiring.embedder()
    assert embedder is not None
    monkeypatch.setattr(embedder, "embed", lambda texts: pytest.fail(f"embedded {texts}"))

    rebuilt = indexing.rebuild()

    assert (rebuilt.items, rebuilt.embedded) == (3, 0)
    assert dict(vector_rows()) == before
    assert not layout.previous(where).exists()  # used, then removed


def test_a_rebuild_embeds_the_next_batch_while_it_writes_the_current_one(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After a model change embedding is most of a reindex: the next batch's texts are
    embedded while the current batch is written, and the vectors are those a batch at
    a time gives."""
    if connection.vendor == "postgresql":
        pytest.skip(
            "on PostgreSQL the planes are tables rebuilt beside the writes, a batch per "
            "transaction (indexing._rebuild_beside_writes), with no embedding ahead to "
            "check; test_pg_profile.py checks that rebuild (the embedded pass runs this test)"
        )
    memories = [make_memory(project, name=f"fact-{i}", kind="fact") for i in range(3)]
    indexing.apply_pending()
    before = dict(vector_rows())
    wiring.vector_index().clear()  # type: ignore[union-attr]  # every text embedded again
    monkeypatch.setattr(indexing, "REBUILD_BATCH", 1)
    embedder = wiring.embedder()
    assert embedder is not None
    real_embed, real_write = embedder.embed, indexing.write_docs
    embedding = [threading.Event() for _ in memories]

    def embed(texts: Any) -> Any:
        order = [n for n, m in enumerate(memories) if any(m.name in t for t in texts)]
        embedding[order[0]].set()
        return real_embed(texts)

    overlapped: list[bool] = []

    def write(docs: Any, **planes: Any) -> int:
        at = next(n for n, m in enumerate(memories) if m.pk == docs[0].id)
        if at + 1 < len(memories):  # the next batch is embedding meanwhile
            overlapped.append(embedding[at + 1].wait(timeout=30))
        return real_write(docs, **planes)

    monkeypatch.setattr(embedder, "embed", embed)
    monkeypatch.setattr(indexing, "write_docs", write)

    rebuilt = indexing.rebuild()

    assert (rebuilt.items, rebuilt.embedded) == (3, 3)
    assert overlapped == [True, True]
    after = dict(vector_rows())
    assert after.keys() == before.keys()
    assert all(np.allclose(after[k], before[k], atol=1e-6) for k in before)
    assert indexing.status().drift == 0


def test_the_full_text_plane_is_written_while_the_texts_are_embedded(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    if connection.vendor == "postgresql":
        pytest.skip(
            "the PostgreSQL profile writes its planes in the write's own transaction, one "
            "table write beside the rows: no batch of index jobs to overlap with embedding "
            "(the embedded pass runs this test)"
        )
    make_memory(project)
    embedder, text = wiring.embedder(), wiring.text_index()
    assert embedder is not None
    real_embed, real_upsert = embedder.embed, text.upsert
    embedding = threading.Event()
    overlapped: list[bool] = []

    def embed(texts: Any) -> Any:
        embedding.set()
        return real_embed(texts)

    def upsert(docs: Any) -> None:
        overlapped.append(embedding.wait(timeout=30))
        real_upsert(docs)

    monkeypatch.setattr(embedder, "embed", embed)
    monkeypatch.setattr(text, "upsert", upsert)

    assert indexing.apply_pending().applied == 1

    assert overlapped == [True]
    assert indexing.status().drift == 0
    assert fts_ids("chroma") and len(vector_ids()) == 1


def test_vectors_from_another_model_are_drift_until_reindexed(
    project: Project, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_memory(project, name="fact-one", kind="fact")
    indexing.apply_pending()
    assert not indexing.status().stale_model

    backends = copy.deepcopy(settings.RECALL["BACKENDS"])
    backends["EMBEDDER"]["OPTIONS"]["quantized"] = False
    settings.RECALL = {**settings.RECALL, "BACKENDS": backends}
    wiring.reset()
    stale = indexing.status()
    assert stale.stale_model and stale.drift == 1
    assert stale.vector_model != stale.embedder_model

    embedded: list[str] = []
    real = wiring.embedder().embed  # type: ignore[union-attr]
    monkeypatch.setattr(
        wiring.embedder(), "embed", lambda texts: embedded.extend(texts) or real(texts)
    )
    indexing.rebuild()
    assert len(embedded) == 1  # another model: nothing stored can be reused
    assert indexing.status().drift == 0
    assert indexing.status().vector_model == wiring.embedder().model  # type: ignore[union-attr]


def test_session_context_makes_a_terse_turn_findable(project: Project) -> None:
    turns = ["We adopted a corgi named Biscuit", "She loves the beach", "Yes, every Sunday"]
    made = [
        make_memory(
            project,
            name=f"turn-{i}",
            kind="episode",
            body=t,
            description=t,
            session_id="s1",
            session_order=i,
        )
        for i, t in enumerate(turns)
    ]
    indexing.apply_pending()

    assert made[2].pk in fts_ids("corgi")


def test_a_supersede_into_another_session_takes_the_next_place_there(project: Project) -> None:
    old = services.memory_create(
        project=project, kind="episode", name="a-turn", description="first words",
        body="first words", session_id="S1", session_order=7,
    )  # fmt: skip
    services.memory_create(
        project=project, kind="episode", name="b-turn", description="other words",
        body="other words", session_id="S2",
    )  # fmt: skip

    moved = services.memory_supersede(memory=old, description="later words", session_id="S2")
    kept = services.memory_supersede(memory=moved, description="last words")

    assert (moved.session_id, moved.session_order) == ("S2", 1)  # b-turn holds 0
    assert (kept.session_id, kept.session_order) == ("S2", 1)  # the same session keeps it
