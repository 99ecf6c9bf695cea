"""One embedding per write: the request's vector reaches the index worker (console/indexing.py).

An agent's write embeds its text once, before the transaction (the dedup hint
reads it from the embedder's cache); the vector is kept in the outbox's
KnownVector row and the worker stores it instead of embedding the text again.
A text edited in between is embedded again; rows nobody takes are swept.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pytest
from django.db import connection
from django.utils import timezone

from console import access, indexing, services, wiring
from console.models import IndexJob, KnownVector, Memory, Note
from recall import dedup
from recall.indexes.hot_vectors import HotVectorIndex
from tests.console.api_world import World, call, copy_ready, world_fixture  # noqa: F401
from tests.console.spies import embedded_fixture  # noqa: F401

BODY = {"project": "alpha", "name": "quokka-ferry", "kind": "fact",
        "description": "The quokka ferry leaves at dawn", "body": "Bring a coat."}  # fmt: skip


def test_the_worker_stores_the_requests_vector_without_embedding_again(
    world: World, embedded: list[str], monkeypatch: Any
) -> None:
    kept: list[indexing.Embedded] = []
    real_keep = indexing.keep
    monkeypatch.setattr(indexing, "keep", lambda *found: (kept.extend(found), real_keep(*found)))

    reply = call(world.client("alpha"), "post", "/memories", BODY)
    indexing.apply_pending()  # the worker (in the PostgreSQL profile: already in the write)

    assert reply.status_code == 201, reply.content
    memory_id = reply.json()["memory"]["id"]
    # One text, asked twice: before the write and by the dedup hint (the embedder's
    # cache answers that); the planes' write asked for nothing (a third call without
    # the kept vector).
    assert len(embedded) == 2 and len(set(embedded)) == 1
    assert not KnownVector.objects.exists()
    vectors = wiring.vector_index()
    assert vectors is not None
    np.testing.assert_allclose(vectors.vectors([memory_id])[memory_id], kept[0].vector)
    found = call(world.client("alpha"), "post", "/recall", {"query": "when does the ferry go"})
    assert memory_id in [i["id"] for i in found.json()["items"]]


def test_a_text_edited_before_the_worker_is_embedded_again(world: World) -> None:
    reply = call(world.client("alpha"), "post", "/memories", BODY)
    memory_id = reply.json()["memory"]["id"]
    edited = "The quokka ferry is gone"
    services.memory_update(memory=Memory.objects.get(pk=memory_id), description=edited)

    indexing.apply_pending()

    embedder, vectors = wiring.embedder(), wiring.vector_index()
    assert embedder is not None and vectors is not None
    now = dedup.probe("alpha", BODY["name"], edited, BODY["body"]).embedding_text()
    np.testing.assert_allclose(
        vectors.vectors([memory_id])[memory_id], embedder.embed([now])[0], atol=1e-6
    )


def test_kept_vectors_nobody_takes_are_swept_after_their_ttl(world: World) -> None:
    old = timezone.now() - indexing.KNOWN_TTL - timedelta(minutes=1)
    KnownVector.objects.create(key="old", vector=np.zeros(384, np.float32).tobytes(), created=old)
    KnownVector.objects.create(key="new", vector=np.zeros(384, np.float32).tobytes())
    services.memory_update(memory=world.memories["alpha"], description="A change to index")

    indexing.apply_pending()

    assert list(KnownVector.objects.values_list("key", flat=True)) == ["new"]


def test_a_batch_that_dies_after_writing_the_planes_keeps_the_vector_for_its_retry(
    world: World, embedded: list[str]
) -> None:
    if connection.vendor == "postgresql":
        pytest.skip(
            "the PostgreSQL profile writes the planes in the write's transaction: no job and "
            "no kept vector to retry (the embedded pass runs this test)"
        )
    reply = call(world.client("alpha"), "post", "/memories", BODY)
    assert reply.status_code == 201, reply.content
    jobs = list(IndexJob.objects.all())
    assert jobs  # the write queued its job for the worker
    asked = len(embedded)

    indexing._apply(jobs)  # the planes are written; the process dies before its bookkeeping

    assert KnownVector.objects.exists()  # the vector stays with its job
    assert indexing.apply_pending().applied == 1  # the retry
    assert len(embedded) == asked  # embedded nothing again
    assert not KnownVector.objects.exists() and not IndexJob.objects.exists()


def test_a_write_in_the_index_lag_is_hinted_at_the_memory_written_just_before(
    world: World,
) -> None:
    # An agent writing a burst never got a hint: the hint asked the vector plane
    # alone, which has a write only once the worker applies it.
    said = "PostgreSQL runs a pool of {} connections per web worker, set via PGBOUNCER."
    first = {"project": "alpha", "name": "db-pool", "kind": "fact", "body": said.format(20)}
    again = {**first, "name": "db-pool-2", "body": said.format(25)}
    other = {**first, "name": "ferry-times", "body": "The quokka ferry leaves at dawn."}
    client = world.client("alpha")

    made = call(client, "post", "/memories", first).json()["memory"]
    waiting = IndexJob.objects.filter(item_id=made["id"]).exists()
    hinted = call(client, "post", "/memories", again).json()
    unrelated = call(client, "post", "/memories", other).json()

    assert waiting or connection.vendor == "postgresql"  # there, the write indexed it
    assert hinted["dedup_hint"] is not None and hinted["dedup_hint"]["id"] == made["id"]
    assert unrelated["dedup_hint"] is None


def test_a_note_written_in_the_index_lag_is_hinted_at_the_note_written_just_before(
    world: World,
) -> None:
    # Two agents' notes of one write-up a second apart: the second got no hint, the
    # first's vector waiting with its job (the lag's list held memories only).
    body = "Bump the version, tag, build, upload to the store, then announce it in #releases."
    client = world.client("alpha")

    made = call(client, "post", "/notes", {"title": "Release checklist", "body": body}).json()
    waiting = IndexJob.objects.filter(item_id=made["id"]).exists()
    hinted = call(client, "post", "/notes", {"title": "Release steps", "body": body}).json()
    other = {"title": "Lunch", "body": "Friday lunch is pizza in the kitchen."}
    unrelated = call(client, "post", "/notes", other).json()

    assert waiting or connection.vendor == "postgresql"  # there, the write indexed it
    assert hinted["dedup_hint"] is not None and hinted["dedup_hint"]["id"] == made["id"]
    assert hinted["dedup_hint"]["name"] == "release-checklist"
    assert unrelated["dedup_hint"] is None


def test_a_write_another_process_just_indexed_is_hinted_before_the_copy_polls(
    world: World, monkeypatch: Any
) -> None:
    # Once the index worker had applied a write its job was gone, and a serving
    # process's vector copy read it only at its next poll: a near-duplicate written
    # in between got no hint (2 of 8 back-to-back pairs against a real server).
    if connection.vendor == "postgresql":
        pytest.skip(
            "the PostgreSQL profile writes a memory's vector in its write's transaction and "
            "searches pgvector itself: no in-process copy can lag behind (the embedded pass "
            "runs this)"
        )
    copy = wiring.vector_index()
    assert isinstance(copy, HotVectorIndex)
    copy.poll_seconds = 0  # no poller: the window stays open for the test
    assert copy.wait_ready(30)
    said = "PostgreSQL runs a pool of {} connections per web worker, set via PGBOUNCER."
    first = {"project": "alpha", "name": "db-pool", "kind": "fact", "body": said.format(20)}
    again = {**first, "name": "db-pool-2", "body": said.format(25)}
    client = world.client("alpha")

    made = call(client, "post", "/memories", first).json()["memory"]
    with monkeypatch.context() as worker:  # another process: it writes the plane alone
        worker.setattr(wiring, "vector_index", lambda: copy.inner)
        indexing.apply_pending()
    hinted = call(client, "post", "/memories", again).json()

    assert not IndexJob.objects.filter(item_id=made["id"]).exists()
    assert hinted["dedup_hint"] is not None and hinted["dedup_hint"]["id"] == made["id"]


def test_the_lag_hint_compares_the_projects_newest_waiting_memories_only(
    world: World, monkeypatch: Any
) -> None:
    if connection.vendor == "postgresql":
        pytest.skip(
            "the PostgreSQL profile writes the planes in the write's transaction: no job "
            "waits, so there is no lag to hint across (the embedded pass runs this)"
        )
    monkeypatch.setattr(indexing, "PENDING_HINTS", 2)
    written = {}
    for project, name in (("alpha", "a1"), ("beta", "b1"), ("alpha", "a2"), ("alpha", "a3")):
        body = {"project": project, "name": name, "kind": "fact", "body": f"Ferry note {name}."}
        reply = call(world.client(project), "post", "/memories", body)
        written[name] = reply.json()["memory"]["id"]

    alpha = {pk for pk, _ in indexing.unindexed_vectors(project="alpha")}
    beta = {pk for pk, _ in indexing.unindexed_vectors(project="beta")}

    assert alpha == {written["a2"], written["a3"]}  # the newest two, alpha's only
    assert beta == {written["b1"]}
    assert indexing.unindexed_vectors(project=None) == []


def test_a_batch_hints_each_item_as_a_single_write_does(world: World, embedded: list[str]) -> None:
    # A batch gave no hint at all: an agent saving what a session taught it in one call
    # was never told that it wrote a fact twice, or a fact the project already held.
    said = "PostgreSQL runs a pool of {} connections per web worker, set via PGBOUNCER."
    items = [
        {"name": "alpha-albatross-again", "kind": "gotcha",
         "description": "Note: the albatross service needs a warm cache before traffic",
         "body": "Warm the albatross cache first."},
        {"name": "db-pool", "kind": "fact", "body": said.format(20)},
        {"name": "db-pool-2", "kind": "fact", "body": said.format(25)},
        {"name": "ferry-times", "kind": "fact", "body": "The quokka ferry leaves at dawn."},
    ]  # fmt: skip

    r = call(world.client("alpha"), "post", "/memories/batch", {"memories": items})
    indexing.apply_pending()

    assert r.status_code == 201, r.content
    made = r.json()["items"]
    hints = [item["dedup_hint"] and item["dedup_hint"]["id"] for item in made]
    # As single writes in this order: db-pool-2 names db-pool, not the other way too.
    assert hints == [world.memories["alpha"].pk, None, made[1]["id"], None]
    assert "supersede" in made[0]["dedup_hint"]["advice"]
    assert not any("dedup" in w for w in r.json()["warnings"])
    # Each text embedded once before the write (the hints read the embedder's cache), and
    # the worker stored those vectors instead of embedding the texts again.
    assert len(set(embedded)) == len(items) and not KnownVector.objects.exists()


def test_a_long_batch_says_it_gave_no_hints_and_embeds_nothing_before_its_write(
    world: World, embedded: list[str]
) -> None:
    items = [
        {"name": f"turn-{n}", "kind": "fact", "description": f"Step {n} of the rollout"}
        for n in range(access.BATCH_HINTS + 1)
    ]

    r = call(world.client("alpha"), "post", "/memories/batch", {"memories": items})

    assert r.status_code == 201, r.content
    assert all(item["dedup_hint"] is None for item in r.json()["items"])
    assert r.json()["warnings"][0] == (
        f"no dedup hints: a batch of up to {access.BATCH_HINTS} memories gets one per item "
        f"(this one held {access.BATCH_HINTS + 1}); search before writing, or write fewer at once"
    )
    assert embedded == [] or connection.vendor == "postgresql"  # there, the write indexed


def test_a_notes_write_is_embedded_once_for_its_hint_and_the_worker(
    world: World, embedded: list[str]
) -> None:
    note = {
        "project": "alpha",
        "title": "Quokka ferry timetable",
        "description": "When the ferry runs",
        "body": "It leaves at dawn; bring a coat.",
    }
    reply = call(world.client("alpha"), "post", "/notes", note)
    assert reply.status_code == 201, reply.content
    asked = len(embedded)
    assert KnownVector.objects.exists() or connection.vendor == "postgresql"  # kept for the worker

    indexing.apply_pending()  # the worker (in the PostgreSQL profile: already in the write)

    # As a memory's: embedded before the write, the hint answered by the embedder's
    # cache, the planes' write by the kept vector: the worker embedded nothing.
    assert len(embedded) == asked and len(set(embedded)) == 1
    assert not KnownVector.objects.exists()
    note_id = reply.json()["id"]
    vectors = wiring.vector_index()
    assert vectors is not None and note_id in vectors.vectors([note_id])


def test_a_notes_edit_embeds_a_changed_text_once_and_an_unchanged_one_never(
    world: World, embedded: list[str], admin_client: Any
) -> None:
    # Every edit of a note was embedded again by the worker (nothing kept its vector),
    # a tag or an unchanged save too. Counted: the embedder's texts per edit.
    copy_ready()
    client = world.client("alpha")
    note = {"project": "alpha", "title": "Quokka ferry timetable",
            "description": "When the ferry runs", "body": "It leaves at dawn."}  # fmt: skip
    note_id = call(client, "post", "/notes", note).json()["id"]
    indexing.apply_pending()

    def texts(edit: dict[str, Any]) -> list[str]:
        embedded.clear()
        reply = call(client, "patch", f"/notes/{note_id}", edit)
        assert reply.status_code == 200, reply.content
        indexing.apply_pending()
        return list(embedded)

    jobs = IndexJob.objects.count()
    assert texts({"body": note["body"], "title": note["title"]}) == []  # nothing changed
    assert IndexJob.objects.count() == jobs  # and nothing queued (nothing to apply)
    assert texts({"tags": ["ferries"]}) == []  # the plane's vector kept with its new tags
    assert Note.objects.get(pk=note_id).tags == ["ferries"]
    changed = texts({"body": "It leaves at noon."})
    assert len(changed) >= 1 and len(set(changed)) == 1  # embedded before the write alone
    assert not KnownVector.objects.exists()  # the worker took that vector
    vectors = wiring.vector_index()
    assert vectors is not None
    stored = vectors.vectors([note_id])[note_id]
    edited = dedup.probe("alpha", "quokka-ferry-timetable", note["description"],
                         "It leaves at noon.", title=note["title"], item="note")  # fmt: skip
    embedder = wiring.embedder()
    assert embedder is not None
    np.testing.assert_allclose(stored, embedder.embed([edited.embedding_text()])[0], rtol=1e-5)
    # The console's edit form, the same way: a tag alone embeds nothing.
    embedded.clear()
    saved = Note.objects.get(pk=note_id)
    form = {"title": saved.title, "description": saved.description, "body": saved.body,
            "tags": "ferries, timetables", "source_url": ""}  # fmt: skip
    assert admin_client.post(f"/notes/{note_id}/edit/", form).status_code == 302
    indexing.apply_pending()
    assert embedded == [] and Note.objects.get(pk=note_id).tags == ["ferries", "timetables"]
