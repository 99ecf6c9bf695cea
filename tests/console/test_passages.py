"""Long memories' sentence vectors through the real index, store and model
(console/passage_store.py, recall/passages.py).

The index queues them after the memory's vector (embedded a slice at a time,
with writes queued meanwhile indexed in between), reuses them while the text
stands (an edit elsewhere, a reindex), drops them when the memory is short or
gone, and the semantic channel reads them: a fact in a long memory's last
sentence, past the 128 word pieces its one vector reads, lifts that memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from console import indexing, passage_store, selectors, services, wiring
from console.models import IndexJob, Memory, Passages
from recall import passages
from recall.channels.semantic import Semantic
from recall.config import RecallConfig
from recall.context import reading
from recall.types import ChannelQuery, Filter
from tests.console.api_world import World, call, copy_ready, world_fixture  # noqa: F401
from tests.console.spies import embedded_fixture  # noqa: F401

FILLER = [
    "The deploy pipeline builds the image and runs the unit tests on every merge.",
    "Staging receives the build first and soaks for one hour under synthetic load.",
    "Canary hosts then take five percent of production traffic for thirty minutes.",
    "Dashboards for latency and error rate are watched by the person on call.",
    "A failed health check rolls the canary back without anyone pressing a button.",
    "Database migrations run before the new code and must be backward compatible.",
    "Feature flags guard anything a customer can see until the rollout completes.",
    "Release notes are drafted from merged pull requests and reviewed by the lead.",
    "The old build stays warm for a day so that a rollback takes seconds.",
]
FACT = "The quokka ferry timetable is pinned to the harbour office wall."
RUNBOOK = {"project": "alpha", "name": "deploy-runbook", "kind": "runbook",
           "description": "How a release reaches production",
           "body": " ".join([*FILLER, FACT])}  # fmt: skip
SENTENCES = {f"deploy-runbook\n{s}" for s in [*FILLER, FACT]}  # as the index embeds them
SHORT = {"project": "alpha", "name": "ferry-note", "kind": "fact",
         "description": "Ferries run on the hour", "body": "Except on Sundays."}  # fmt: skip


def write(world: World, body: dict[str, Any]) -> str:
    reply = call(world.client("alpha"), "post", "/memories", body)
    assert reply.status_code == 201, reply.content
    indexing.apply_pending()
    return str(reply.json()["memory"]["id"])


def test_a_long_memory_gets_one_unit_vector_per_sentence_a_short_one_none(
    world: World, embedded: list[str]
) -> None:
    long_id = write(world, RUNBOOK)
    short_id = write(world, SHORT)

    row = Passages.objects.get(memory_id=long_id)
    assert row.rows == len(FILLER) + 1
    assert f"deploy-runbook\n{FACT}" in embedded  # each sentence after the title
    assert not Passages.objects.filter(memory_id=short_id).exists()
    stored = wiring.planes().store.passages([long_id, short_id])
    assert list(stored) == [long_id]
    assert stored[long_id].shape == (row.rows, 384)
    np.testing.assert_allclose(np.linalg.norm(stored[long_id], axis=1), 1.0, atol=2e-3)


def test_with_indexing_on_commit_the_sentences_are_there_when_the_write_answers(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    # They are a job of their own now; in the PostgreSQL profile the memory's planes
    # are written in the write's transaction and the sentences follow its commit.
    with django_capture_on_commit_callbacks(execute=True):
        reply = call(world.client("alpha"), "post", "/memories", RUNBOOK)

    assert Passages.objects.get(memory_id=reply.json()["memory"]["id"]).rows == len(FILLER) + 1
    assert not IndexJob.objects.exists()


def test_the_text_unchanged_embeds_nothing_again_short_or_gone_drops_them(
    world: World, embedded: list[str]
) -> None:
    long_id = write(world, RUNBOOK)
    key = Passages.objects.get(memory_id=long_id).key
    embedded.clear()

    services.memory_update(memory=Memory.objects.get(pk=long_id), importance=0.9)
    indexing.apply_pending()
    indexing.rebuild()  # `manage.py reindex`: the planes again, from the database

    assert f"deploy-runbook\n{FACT}" not in embedded
    assert Passages.objects.get(memory_id=long_id).key == key

    services.memory_update(memory=Memory.objects.get(pk=long_id), body="Ask the lead.")
    indexing.apply_pending()
    assert not Passages.objects.filter(memory_id=long_id).exists()

    other = write(world, {**RUNBOOK, "name": "deploy-runbook-2"})
    assert Passages.objects.filter(memory_id=other).exists()
    services.memory_delete(memory=Memory.objects.get(pk=other))
    indexing.apply_pending()
    assert not Passages.objects.filter(memory_id=other).exists()


def test_the_last_sentence_lifts_its_memory_in_the_semantic_channel(world: World) -> None:
    copy_ready()  # a write applied while the copy loads reaches it only at a later poll
    long_id = write(world, RUNBOOK)
    embedder, planes = wiring.embedder(), wiring.planes()
    assert embedder is not None
    question = "where is the ferry timetable pinned"
    q = np.asarray(embedder.embed([question])[0], dtype=np.float32)
    where = Filter(projects=("alpha",))
    channel = Semantic(planes)
    plain = channel.candidates(ChannelQuery(question, vector=q), where, 10, ())
    read = channel.candidates(
        ChannelQuery(question, vector=q, context=reading(RecallConfig())), where, 10, ()
    )

    before = next(c for c in plain if c.id == long_id)
    after = next(c for c in read if c.id == long_id)
    sentences = passages.unit_rows(embedder.embed(passages.texts(
        indexing.memory_docs(Memory.objects.filter(pk=long_id))[0]
    )))  # fmt: skip
    by_hand = 0.5 * before.score + 0.5 * float((sentences @ (q / np.linalg.norm(q))).max())
    assert after.score == pytest.approx(by_hand, abs=2e-3)  # float16 storage
    assert after.score > before.score + 0.05  # the one vector never read the fact
    assert after.rank < before.rank


def test_a_long_memory_cut_for_the_pack_keeps_the_sentence_that_answered(world: World) -> None:
    # Over the 500-token item cap: the pack must cut it, and the fact comes last.
    filler = [f"{s[:-1]}, step {n}." for n in range(4) for s in FILLER]
    long_id = write(world, {**RUNBOOK, "body": " ".join([*filler, FACT])})
    ask = {"query": "where is the quokka ferry timetable pinned", "budget": 2000}

    def item() -> dict[str, Any]:
        pack = call(world.client("alpha"), "post", "/recall", ask).json()
        return next(i for i in pack["items"] if i["id"] == long_id)

    kept = item()
    assert kept["truncated"] is True and kept["tokens"] <= RecallConfig().item_tokens
    assert kept["text"].endswith(f" … {FACT}")
    Passages.objects.filter(memory_id=long_id).delete()  # nothing says which sentence
    wiring.forget_recalls()
    assert FACT not in item()["text"]


def test_a_recall_of_the_past_keeps_the_sentence_that_answered_too(world: World) -> None:
    # With as_of (the cold path: the text as it was, no sentence vectors) the item kept
    # the runbook's head: the sentence is then the one holding the most query words.
    filler = [f"{s[:-1]}, step {n}." for n in range(4) for s in FILLER]
    long_id = write(world, {**RUNBOOK, "body": " ".join([*filler, FACT])})
    now = call(world.client("alpha"), "get", f"/memories/{long_id}").json()["updated"]
    ask = {"query": "where is the quokka ferry timetable pinned", "budget": 2000, "as_of": now,
           "debug": True}  # fmt: skip

    pack = call(world.client("alpha"), "post", "/recall", ask).json()

    item = next(i for i in pack["items"] if i["id"] == long_id)
    assert pack["debug"]["tier"] == "cold"
    assert item["truncated"] is True and item["text"].endswith(f" … {FACT}")


def test_the_last_sentence_of_a_text_too_long_to_read_whole_ends_the_item(world: World) -> None:
    # A 14 KB body: the pack reads only as much as an item could show (8 KB at the
    # 500-token cap), so the fact comes from beyond what was read. It used to get
    # " …" after it, as if the memory went on.
    filler = [f"{s[:-1]}, pass {n}." for n in range(20) for s in FILLER]
    long_id = write(world, {**RUNBOOK, "body": " ".join([*filler, FACT])})
    ask = {"query": "where is the quokka ferry timetable pinned", "budget": 2000}

    pack = call(world.client("alpha"), "post", "/recall", ask).json()

    item = next(i for i in pack["items"] if i["id"] == long_id)
    assert item["truncated"] is True
    assert item["text"].endswith(f" … {FACT}")


def test_an_operator_can_turn_the_sentence_vectors_off(world: World, settings: Any) -> None:
    settings.RECALL = {**settings.RECALL, "PASSAGES": False}  # RECALL_PASSAGES=0
    long_id = write(world, RUNBOOK)
    assert not Passages.objects.filter(memory_id=long_id).exists()

    settings.RECALL = {**settings.RECALL, "PASSAGES": True}
    indexing.rebuild()  # `manage.py reindex` writes what is missing
    assert Passages.objects.filter(memory_id=long_id).exists()


def test_a_long_text_without_spaces_is_cut_not_dropped(world: World) -> None:
    # Chinese: no spaces and no ASCII stops. It used to have no place to cut, so
    # the pack came back empty ("the best hit alone exceeds the token budget").
    body = "".join(f"第{n}步：仓库管理员检查库存并记录结果。" for n in range(120))
    body += "仓库管理员的应急密码保存在保险柜里。"
    lead = body[:20]  # the body opens with its description: the item is the body alone
    long_id = write(world, {**RUNBOOK, "name": "zh-runbook", "description": lead, "body": body})
    assert Passages.objects.get(memory_id=long_id).rows == 121

    pack = call(world.client("alpha"), "post", "/recall",
                {"query": "仓库管理员的应急密码保存在哪里", "budget": 300}).json()  # fmt: skip

    item = next(i for i in pack["items"] if i["id"] == long_id)
    assert item["truncated"] is True and "。" in item["text"] and pack["tokens"] <= 300


def test_a_write_queued_while_sentences_embed_is_indexed_between_two_slices(
    world: World, settings: Any, monkeypatch: Any
) -> None:
    # A long memory's sentences used to be embedded with its own vector, in the
    # batch: a write queued behind a 100 KB body waited about 10 s to be findable.
    # The index worker's way: writes queued (PostgreSQL too), applied by apply_pending.
    settings.RECALL = {**settings.RECALL, "SYNC_ON_COMMIT": False, "INDEX_IN_TRANSACTION": False}
    monkeypatch.setattr(passage_store, "SLICE", 2)
    embedder = wiring.embedder()
    assert embedder is not None
    real, slices, seen = embedder.embed, [], []

    def embed(texts: Any) -> Any:
        if texts and all(t in SENTENCES for t in texts):
            slices.append(len(texts))
            if len(slices) == 1:
                seen.append(write_queued(SHORT))
            elif len(slices) == 2:
                seen.append((selectors.index_pending(ids=[seen[0]]), Passages.objects.count()))
        return real(texts)

    def write_queued(body: dict[str, Any]) -> str:
        reply = call(world.client("alpha"), "post", "/memories", body)
        assert reply.status_code == 201, reply.content
        return str(reply.json()["memory"]["id"])

    monkeypatch.setattr(embedder, "embed", embed)
    long_id = write_queued(RUNBOOK)
    assert selectors.index_pending(ids=[long_id])

    report = indexing.apply_pending()

    assert slices == [2, 2, 2, 2, 2]  # ten sentences, two at a time
    short_id, (short_waits, stored) = seen
    assert (short_waits, stored) == (False, 0)  # indexed before the sentences were stored
    assert report.applied == 3  # the two memories and the runbook's sentences
    assert Passages.objects.get(memory_id=long_id).rows == len(FILLER) + 1
    assert not IndexJob.objects.exists()
    hits = call(world.client("alpha"), "get", "/search", {"q": "ferries", "semantic": "false"})
    assert short_id in [h["id"] for h in hits.json()["hits"]]


def test_an_edit_applied_while_sentences_embed_keeps_the_new_sentences(
    world: World, settings: Any, monkeypatch: Any
) -> None:
    settings.RECALL = {**settings.RECALL, "SYNC_ON_COMMIT": False, "INDEX_IN_TRANSACTION": False}
    monkeypatch.setattr(passage_store, "SLICE", 4)
    embedder = wiring.embedder()
    assert embedder is not None
    real, edited = embedder.embed, []
    longer = " ".join([*FILLER, "The harbour office closes at noon on Saturdays.", FACT])

    def embed(texts: Any) -> Any:
        if texts and all(t in SENTENCES for t in texts) and not edited:
            memory = Memory.objects.get(name="deploy-runbook")
            edited.append(services.memory_update(memory=memory, body=longer).pk)
        return real(texts)

    reply = call(world.client("alpha"), "post", "/memories", RUNBOOK)
    long_id = reply.json()["memory"]["id"]
    monkeypatch.setattr(embedder, "embed", embed)

    indexing.apply_pending()

    assert edited == [long_id]
    doc = indexing.memory_docs(Memory.objects.filter(pk=long_id))[0]
    row = Passages.objects.get(memory_id=long_id)
    assert row.rows == len(FILLER) + 2  # the edit's sentences, not the first ones
    assert row.key == passages.texts_hash(embedder.model, passages.texts(doc))
    assert not IndexJob.objects.exists()
