"""Long memories' sentence vectors through the real index, store and model
(console/passage_store.py, recall/passages.py).

The index writes them with the memory's vector, reuses them while the text
stands (an edit elsewhere, a reindex), drops them when the memory is short or
gone, and the semantic channel reads them: a fact in a long memory's last
sentence, past the 128 word pieces its one vector reads, lifts that memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from console import indexing, services, wiring
from console.models import Memory, Passages
from recall import passages
from recall.channels.semantic import Semantic
from recall.config import RecallConfig
from recall.context import reading
from recall.types import ChannelQuery, Filter
from tests.console.api_world import World, call, world_fixture  # noqa: F401
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
