"""Memory Worth over the agent API and MCP: pack ids, feedback, worth on hits and in ranking."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from django.test import Client

from console import indexing, services, tokens
from console.models import Feedback, Memory, Project
from tests.console.api_world import World, call, mcp, world_fixture  # noqa: F401

# RRF over full text alone, so the scores are 1 / (60 + rank) by hand.
RRF = {"fusion": "rrf", "session_prior": 0.0, "routing": "hybrid"}
ONLY_FTS = {"fts": 1, "semantic": 0, "graph": 0, "session": 0}
NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def pair(world: World, monkeypatch: Any) -> tuple[Memory, Memory]:
    """Two alpha memories that tie on "quokka" (a first by id); RRF; the clock pinned
    (so no usage snapshot cut falls between two recalls)."""
    monkeypatch.setattr("django.utils.timezone.now", lambda: NOW)
    services.setting_save(key="recall_config", value=RRF)
    alpha = Project.objects.get(slug="alpha")
    a = services.memory_create(project=alpha, kind="fact", name="quokka-a",
                               description="The quokka rollout waits for review")  # fmt: skip
    b = services.memory_create(project=alpha, kind="fact", name="quokka-b",
                               description="The quokka rollout waits for review")  # fmt: skip
    indexing.apply_pending()
    assert a.pk < b.pk
    return a, b


def _recall(world: World, **body: Any) -> dict[str, Any]:
    body = {"query": "quokka", "channel_weights": ONLY_FTS, **body}
    r = call(world.client("alpha"), "post", "/recall", body)
    assert r.status_code == 200, r.content
    return dict(r.json())


def test_feedback_changes_ranking_by_hand_computed_scores(world: World, pair: Any) -> None:
    a, b = pair
    first = _recall(world)
    assert [i["id"] for i in first["items"]] == [a.pk, b.pk]
    assert [i["score"] for i in first["items"]] == [round(1 / 61, 4), round(1 / 62, 4)]
    assert [i.get("worth", 0.5) for i in first["items"]] == [0.5, 0.5]  # absent: 0.5

    r = call(world.client("alpha"), "post", "/feedback", {
        "pack_id": first["pack_id"],
        "items": [{"id": b.pk, "used": True, "helpful": True}, {"id": a.pk, "used": True}],
    })  # fmt: skip

    assert r.status_code == 200, r.content
    verdicts = {v["id"]: v for v in r.json()["items"]}
    assert verdicts[b.pk]["worth"] == round(2 / 3, 4)  # rounded as other replies are
    assert verdicts[a.pk]["worth"] == 0.5  # used, neither helpful nor harmful: unchanged
    after = _recall(world, worth_weight=1.0, record=False)
    # b: 1/62 x (1 + 1 x (2/3 - 1/2)) = 7/372 = 0.0188 over a: 1/61 = 0.0164
    assert [i["id"] for i in after["items"]] == [b.pk, a.pk]
    assert [i["score"] for i in after["items"]] == [round(7 / 372, 4), round(1 / 61, 4)]
    assert [i.get("worth", 0.5) for i in after["items"]] == [round(2 / 3, 4), 0.5]
    b.refresh_from_db()
    assert (b.feedback_used, b.feedback_helpful, b.feedback_harmful) == (1, 1, 0)
    # at the default worth weight (0.5): b 1/62 x 13/12 = 0.01747, still above a
    assert [i["id"] for i in _recall(world, record=False)["items"]] == [b.pk, a.pk]


def test_a_second_verdict_on_the_same_item_replaces_the_first(world: World, pair: Any) -> None:
    a, b = pair
    pack = _recall(world)["pack_id"]
    client = world.client("alpha")
    for verdict in ({"helpful": True}, {"harmful": True}):
        body = {"pack_id": pack, "items": [{"id": a.pk, **verdict}]}
        assert call(client, "post", "/feedback", body).status_code == 200
    a.refresh_from_db()
    assert (a.feedback_helpful, a.feedback_harmful) == (0, 1)
    assert Feedback.objects.filter(memory=a).count() == 1
    assert call(client, "get", f"/memories/{a.pk}").json()["worth"] == pytest.approx(1 / 3, 1e-3)


def test_feedback_is_refused_outside_its_pack_and_its_projects(world: World, pair: Any) -> None:
    a, b = pair
    pack = _recall(world, limit=1)["pack_id"]  # holds a only
    client = world.client("alpha")

    def send(who: str, items: list[dict[str, Any]], pack_id: str = pack) -> Any:
        return call(world.client(who), "post", "/feedback", {"pack_id": pack_id, "items": items})

    not_in = send("alpha", [{"id": b.pk, "helpful": True}])
    assert not_in.status_code == 404 and "not in pack" in not_in.json()["detail"]
    assert send("alpha", [{"id": a.pk}], pack_id="01" + "0" * 24).status_code == 404
    assert send("beta", [{"id": a.pk, "helpful": True}]).status_code == 403
    read_only = send("alpha_ro", [{"id": a.pk, "helpful": True}])  # worth ranks for everyone
    assert read_only.status_code == 403 and "read-only" in read_only.json()["detail"]
    other = tokens.token_create(agent="agent-other", projects=["alpha"], may_write=True)[1]
    theirs = call(Client(HTTP_AUTHORIZATION=f"Bearer {other}"), "post", "/feedback",
                  {"pack_id": pack, "items": [{"id": a.pk, "harmful": True}]})  # fmt: skip
    assert theirs.status_code == 403 and "another agent" in theirs.json()["detail"]
    both = send("alpha", [{"id": a.pk, "helpful": True, "harmful": True}])
    assert both.status_code == 422 and both.json()["field"] == "items.0"
    assert both.json()["detail"] == "items.0: helpful and harmful cannot both be true"
    unrecorded = _recall(world, record=False)
    assert "pack_id" not in unrecorded
    assert "worth" not in call(client, "get", f"/memories/{a.pk}").json()  # absent: 0.5


def test_feedback_names_an_item_by_name_as_other_calls_do(world: World, pair: Any) -> None:
    # Named, it was refused as "item 'QUOKKA-A' is not in pack ...": the name upper-cased
    # as an id, and the item in the pack.
    a, b = pair
    pack = _recall(world, limit=1)["pack_id"]  # holds a only
    client = world.client("alpha")

    rated = call(client, "post", "/feedback", {"pack_id": pack, "items": [
        {"id": a.name, "helpful": True}]})  # fmt: skip
    other = call(client, "post", "/feedback", {"pack_id": pack, "items": [{"id": b.name}]})

    assert rated.status_code == 200, rated.content
    assert [v["id"] for v in rated.json()["items"]] == [a.pk]
    assert other.status_code == 404
    assert other.json()["detail"] == f"item 'quokka-b' is not in pack {pack}"


def test_feedback_on_a_memory_deleted_since_the_recall_says_so(world: World, pair: Any) -> None:
    # It said "item ... is not a memory (only memories carry worth)": it was one.
    a, _ = pair
    pack = _recall(world, limit=1)["pack_id"]  # holds a only
    services.memory_delete(memory=a)

    r = call(world.client("alpha"), "post", "/feedback", {"pack_id": pack, "items": [
        {"id": a.pk, "helpful": True}]})  # fmt: skip

    assert r.status_code == 404
    assert r.json()["detail"] == f"item {a.pk} was deleted since the recall"


def test_memory_feedback_over_mcp(world: World, pair: Any, monkeypatch: Any) -> None:
    a, b = pair
    status, pack = mcp(world, "alpha", "memory_recall",
                       {"query": "quokka", "channel_weights": ONLY_FTS}, monkeypatch)  # fmt: skip
    assert status == 200 and "worth" not in pack["items"][0]  # 0.5, the default

    status, body = mcp(world, "alpha", "memory_feedback",
                       {"pack_id": pack["pack_id"], "items": [{"id": a.pk, "harmful": True}]},
                       monkeypatch)  # fmt: skip

    assert status == 200
    assert body["items"] == [
        {
            "id": a.pk,
            "used": False,
            "helpful": False,
            "harmful": True,
            "worth": round(1 / 3, 4),
        }
    ]
    other = {"pack_id": pack["pack_id"], "items": [{"id": a.pk}]}
    status, refused = mcp(world, "beta", "memory_feedback", other, monkeypatch)
    assert status == 403 and "may not touch" in refused["detail"]


def test_a_time_travel_pack_carries_its_pack_id_and_can_be_rated(world: World, pair: Any) -> None:
    """The cold path packed without the recall's pack_id: no feedback on what it gave."""
    a, _ = pair
    past = _recall(world, as_of=datetime.now(UTC).isoformat(), budget=300)

    assert past["pack_id"] and past["tokens"] <= 300
    assert any(i["id"] == a.pk for i in past["items"])
    verdict = {"pack_id": past["pack_id"], "items": [{"id": a.pk, "helpful": True}]}
    rated = call(world.client("alpha"), "post", "/feedback", verdict)
    assert rated.status_code == 200, rated.json()
