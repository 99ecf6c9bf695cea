"""The session neighbourhood (Dakera 004) over REST and MCP: recall's session fields,
each neighbour with its provenance, inside the token's scope, bad values refused by name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from console import indexing, services
from console.models import Memory, Project
from console.schemas import ContextPackOut
from tests.console.api_world import World, call, mcp, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db
AT = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def turn(slug: str, order: int, description: str, session: str = "alpha:S1") -> Memory:
    return services.memory_create(
        project=Project.objects.get(slug=slug), kind="episode", name=f"{slug}-turn-{order}",
        description=description, body=description, session_id=session, session_order=order,
        occurred_at=AT,
    )  # fmt: skip


@pytest.fixture
def talk(world: World) -> dict[str, Memory]:
    """alpha:S1: a question about the albatross, its answer, a later aside; beta shares the id."""
    made = {
        "asked": turn("alpha", 1, "where did the albatross land yesterday"),
        "answer": turn("alpha", 2, "on the lighthouse roof, by the lamp"),
        "next": turn("alpha", 3, "and then it flew off east"),
        "aside": turn("alpha", 8, "lunch was tomato soup"),
        "beta": turn("beta", 2, "a beta turn in a session of the same name"),
    }
    indexing.apply_pending()
    return made


def _session(reply: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What the session channel found: id -> its session provenance."""
    return {i["id"]: p for i in reply["items"] for p in i["sources"] if p["channel"] == "session"}


def test_recall_adds_the_session_neighbours_of_the_top_hits(world: World, talk) -> None:
    client = world.client("alpha")
    body = {"query": "albatross", "debug": True, "record": False}

    on = call(client, "post", "/recall", body).json()
    one = call(client, "post", "/recall", {**body, "session_turns": 1}).json()
    off = call(client, "post", "/recall", {**body, "session_neighbours": False}).json()
    none = call(client, "post", "/recall", {**body, "session_turns": 0}).json()
    timed = {**body, "session_window_minutes": 0, "session_cap": 1}
    capped = call(client, "post", "/recall", timed).json()

    for reply in (on, one, off, none, capped):
        ContextPackOut.model_validate(reply)
    assert talk["asked"].pk in {i["id"] for i in on["items"]}
    found = _session(on)
    order = {m.pk: m.session_order for m in talk.values()}
    assert {talk["answer"].pk, talk["next"].pk} <= set(found)
    answer = found[talk["answer"].pk]
    assert answer["hops"] == 1 and answer["path"][-1] == talk["answer"].pk
    for pk, prov in found.items():  # each from a hit of its session, at most 2 turns away
        seed = prov["path"][0]
        assert prov["hops"] == abs(order[seed] - order[pk]) <= 2
    assert talk["aside"].pk not in found  # 5 turns from the nearest hit
    assert talk["beta"].pk not in {i["id"] for i in on["items"]}  # another project
    assert {p["hops"] for p in _session(one).values()} == {1}
    assert _session(off) == {} and off["debug"]["channel_status"]["session"] != "on"
    assert _session(none) == {}
    assert _session(capped) and {p["hops"] for p in _session(capped).values()} == {1}


@pytest.mark.parametrize(
    "bad",
    [{"session_turns": -1}, {"session_cap": 51}, {"session_window_minutes": 5000},
     {"session_neighbours": "sometimes"}],
)  # fmt: skip
def test_session_fields_out_of_range_are_refused_by_name(world: World, bad: dict) -> None:
    r = call(world.client("alpha"), "post", "/recall", {"query": "albatross", **bad})
    assert r.status_code == 422 and next(iter(bad)) in json.dumps(r.json())


def test_the_same_session_fields_over_mcp(world: World, talk, monkeypatch) -> None:
    args = {"query": "albatross", "debug": True, "record": False, "session_turns": 1}

    status, body = mcp(world, "alpha", "memory_recall", args, monkeypatch)
    _, off = mcp(world, "alpha", "memory_recall", {**args, "session_neighbours": False},
                 monkeypatch)  # fmt: skip

    assert status == 200
    ContextPackOut.model_validate(body)
    assert talk["answer"].pk in _session(body)
    assert {p["hops"] for p in _session(body).values()} == {1}
    assert _session(off) == {}
    status, refused = mcp(
        world, "alpha", "memory_recall", {"query": "x", "session_cap": 99}, monkeypatch
    )
    assert status == 422 and refused["field"] == "session_cap"


def test_notes_an_agent_writes_in_a_session_are_matched_on_their_own_text(world: World) -> None:
    # An agent tags every write with its session. A runbook written after a
    # convention used to be indexed with the convention's words as its context,
    # and outranked it for a question about the convention.
    client = world.client("alpha")
    session = {"project": "alpha", "session_id": "agent:S1"}
    notes = [
        ("service-layer-writes", "convention", "Views never write to the database",
         "Views call services; only the service layer writes to the database."),
        ("release-runbook", "runbook", "How to cut a release",
         "Tag the commit, build the wheel, upload it, then announce the release."),
        ("a-turn", "episode", "we talked about the release", "the release is on Friday"),
    ]  # fmt: skip
    for name, kind, description, body in notes:
        written = {"name": name, "kind": kind, "description": description, "body": body}
        assert call(client, "post", "/memories", {**session, **written}).status_code == 201
    indexing.apply_pending()

    docs = {
        d.name: d.context
        for d in indexing.memory_docs(Memory.objects.filter(session_id="agent:S1"))
    }
    assert docs["release-runbook"] == ()  # not a turn: read by its own text
    assert docs["service-layer-writes"] == ()
    assert docs["a-turn"] == ()  # the notes before it are not turns either

    body = {"query": "which layer writes to the database", "record": False, "debug": True}
    items = call(client, "post", "/recall", body).json()["items"]
    assert [i["name"] for i in items][:1] == ["service-layer-writes"]
    fts = {i["name"]: p for i in items for p in i["sources"] if p["channel"] == "fts"}
    # the runbook shares "the" with the question, no longer the convention's words
    assert fts["release-runbook"]["raw"] < fts["service-layer-writes"]["raw"] / 3
