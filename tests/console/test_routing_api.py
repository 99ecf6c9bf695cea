"""Routing and fabriq's per-request knobs over REST and MCP: `routing`, `k`, `strict`,
`entities` (and `rrf_k`, the RRF override that used to be called `k`), on the real
planes and the real embedder."""

from __future__ import annotations

from typing import Any

import pytest

from console import wiring
from console.schemas import ContextPackOut
from recall.errors import IndexUnavailable
from tests.console.api_world import (  # noqa: F401
    World,
    call,
    mcp,
    recall_both,
    world_fixture,
)

pytestmark = pytest.mark.django_db


class EmbedSpy:
    """Counts calls to the real embedder's `embed` (and still embeds)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        embedder = wiring.embedder()
        assert embedder is not None
        self.calls = 0
        real = embedder.embed

        def embed(texts: Any) -> Any:
            self.calls += 1
            return real(texts)

        monkeypatch.setattr(embedder, "embed", embed)


def rest(world: World, body: dict[str, Any]) -> Any:
    return call(world.client("alpha"), "post", "/recall", {"record": False, **body})


FIELDS = [  # (field, a value it takes, one it refuses)
    ("routing", "bm25", "smart"),
    ("k", 5, 201),
    ("strict", True, "yes"),
    ("entities", ["notes"], ["people"]),
    ("rrf_k", 10, 0),
]


@pytest.mark.parametrize(("field", "good", "bad"), FIELDS)
def test_every_routing_and_knob_field_on_rest_and_mcp(
    world: World, monkeypatch: pytest.MonkeyPatch, field: str, good: Any, bad: Any
) -> None:
    ask = {"query": "albatross", "record": False}

    rest_ok, (mcp_ok, body) = recall_both(world, {**ask, field: good}, monkeypatch)
    rest_bad, (mcp_bad, refused) = recall_both(world, {**ask, field: bad}, monkeypatch)

    assert rest_ok.status_code == mcp_ok == 200
    ContextPackOut.model_validate(rest_ok.json())
    assert rest_ok.json()["items"] == body["items"]
    assert rest_bad.status_code == mcp_bad == 422
    assert rest_bad.json()["field"].startswith(field) and refused["field"].startswith(field)


@pytest.mark.parametrize("surface", ["rest", "mcp"])
def test_bm25_routing_makes_no_embedding_call(
    world: World, monkeypatch: pytest.MonkeyPatch, surface: str
) -> None:
    spy = EmbedSpy(monkeypatch)
    ask = {"query": "which albatross cache is warmed first", "debug": True, "record": False}

    def recall(routing: str) -> dict[str, Any]:
        if surface == "rest":
            return dict(rest(world, {**ask, "routing": routing}).json())
        args = {**ask, "routing": routing}
        status, body = mcp(world, "alpha", "memory_recall", args, monkeypatch)
        assert status == 200
        return dict(body)

    bm25 = recall("bm25")
    after_bm25 = spy.calls
    hybrid = recall("hybrid")

    assert after_bm25 == 0 and spy.calls == 1
    assert bm25["debug"]["embedded"] is False and hybrid["debug"]["embedded"] is True
    assert bm25["items"][0]["id"] == world.memories["alpha"].pk
    assert bm25["debug"]["routing"]["weights"]["semantic"] == 0


def test_the_routing_decision_and_weights_are_in_debug(world: World, monkeypatch) -> None:
    ask = {"debug": True}

    by_name = rest(world, {**ask, "query": world.memories["alpha"].name}).json()
    question = rest(world, {**ask, "query": "why must the albatross cache be warm?"}).json()
    vector = rest(world, {**ask, "query": "albatross", "routing": "vector"}).json()
    status, over_mcp = mcp(
        world, "alpha", "memory_recall", {"query": "albatross cache", "debug": True}, monkeypatch
    )

    assert by_name["debug"]["routing"]["mode"] == "auto"
    assert by_name["debug"]["routing"]["class"] == "identifier"
    assert by_name["debug"]["embedded"] is False  # an identifier is not embedded
    assert question["debug"]["routing"]["class"] == "natural"
    assert vector["debug"]["routing"] == {
        "mode": "vector", "class": None,
        "weights": {"fts": 0.0, "semantic": 1.0, "graph": 0.3, "session": 0.2},
    }  # fmt: skip  # the expand channels (graph, session) keep their own weights
    assert status == 200 and over_mcp["debug"]["routing"]["class"] == "keyword"


def test_k_is_the_candidates_per_channel_on_rest_and_mcp(world: World, monkeypatch) -> None:
    ask = {"query": "albatross", "routing": "bm25", "debug": True}

    default = rest(world, ask).json()
    one = rest(world, {**ask, "k": 1}).json()
    status, over_mcp = mcp(world, "alpha", "memory_recall", {**ask, "k": 1}, monkeypatch)

    assert default["total_found"] == 2  # alpha's memory and its note
    assert one["total_found"] == 1 and one["debug"]["k"] == 1
    assert default["debug"]["k"] == 50  # the recall setting `depth`
    assert status == 200 and over_mcp["total_found"] == 1


def test_strict_makes_a_failed_channel_an_error_on_rest_and_mcp(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise IndexUnavailable("vector table unreadable")

    monkeypatch.setattr(wiring.vector_index(), "search", broken)
    ask = {"query": "albatross cache", "routing": "hybrid"}

    lenient = rest(world, ask)
    strict = rest(world, {**ask, "strict": True})
    status, refused = mcp(world, "alpha", "memory_recall", {**ask, "strict": True}, monkeypatch)

    assert lenient.status_code == 200
    assert lenient.json()["warnings"] == [
        "semantic channel skipped: index unavailable (vector table unreadable)"
    ]
    assert strict.status_code == 503 and status == 503
    assert (
        strict.json()["detail"]
        == refused["detail"]
        == ("strict recall: semantic channel skipped: index unavailable (vector table unreadable)")
    )


@pytest.mark.parametrize(
    ("entities", "kinds"),
    [
        (["memories"], {"memory"}),
        (["notes"], {"note"}),
        (["memories", "notes"], {"memory", "note"}),
    ],
)
def test_entities_recalls_memories_notes_or_both_on_rest_and_mcp(
    world: World, monkeypatch: pytest.MonkeyPatch, entities: list[str], kinds: set[str]
) -> None:
    ask = {"query": "albatross", "entities": entities}

    body = rest(world, ask).json()
    status, over_mcp = mcp(world, "alpha", "memory_recall", ask, monkeypatch)

    def item(reply: dict[str, Any]) -> set[str]:
        return {"note" if i.get("item") == "note" else "memory" for i in reply["items"]}

    assert item(body) == kinds
    assert status == 200 and item(over_mcp) == kinds


def test_scope_stays_an_alias_and_a_contradiction_is_refused(world: World) -> None:
    by_scope = rest(world, {"query": "albatross", "scope": "notes"}).json()
    by_list = rest(world, {"query": "albatross", "entities": ["notes"]}).json()
    both = rest(world, {"query": "albatross", "scope": "memories", "entities": ["notes"]})

    assert by_scope["items"] == by_list["items"] and by_list["items"]
    assert both.status_code == 400 and "disagree" in both.json()["detail"]
