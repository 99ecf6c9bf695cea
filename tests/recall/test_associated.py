"""Associated memories (Dakera's include_associated) and `total_found` in Recall."""

from __future__ import annotations

import json

import pytest

from recall.agent import dumps, pack_view
from recall.requests import RecallRequest
from recall.testing import InMemoryStore
from tests.recall.conftest import MakeEngine, ids, make_memory, uid


def ask(query: str, **kw: object) -> RecallRequest:
    return RecallRequest(query=query, project="alpha", **kw)  # type: ignore[arg-type]


def graph_engine(make_engine: MakeEngine, *edges: tuple[int, int, float]):
    """1 and 2 match "chroma"; 3..6 do not; explicit edges as given."""
    records = [
        make_memory(1, description="chroma boot race"),
        make_memory(2, description="chroma with many other words in it"),
        *(make_memory(i, description=f"unrelated {i}") for i in range(3, 7)),
    ]
    engine = make_engine(records, embedder=None)
    store = engine.planes.store
    assert isinstance(store, InMemoryStore)
    for source, target, weight in edges:
        store.connect(uid(source), uid(target), weight, rel="caused")
    return engine


def test_off_by_default_and_total_found_always_there(make_engine: MakeEngine):
    engine = graph_engine(make_engine, (1, 3, 1.0))

    pack = engine.recall(ask("chroma", hops=0))

    assert pack.associated is None and pack.total_found == 2
    view = pack_view(pack)
    assert "associated" not in view and view["total_found"] == 2


def test_associated_items_hang_off_the_packed_items_never_one_of_them(make_engine: MakeEngine):
    engine = graph_engine(make_engine, (1, 2, 1.0), (1, 3, 0.9), (2, 4, 0.6))

    pack = engine.recall(ask("chroma", hops=0, include_associated=True))

    assert ids(pack.items) == [uid(1), uid(2)]
    assert pack.associated is not None
    main = set(ids(pack.items))
    assert not main & {h.id for h in pack.associated}
    assert [(h.id, h.depth, h.via, h.rel) for h in pack.associated] == [
        (uid(3), 1, uid(1), "caused"),
        (uid(4), 1, uid(2), "caused"),
    ]
    view = pack_view(pack)
    assert [a["depth"] for a in view["associated"]] == [1, 1]
    assert view["associated"][0]["text"] == "unrelated 3"


def test_depth_min_weight_and_cap(make_engine: MakeEngine):
    engine = graph_engine(make_engine, (1, 3, 1.0), (3, 5, 1.0), (5, 6, 1.0), (1, 4, 0.2))

    def linked(**kw: object) -> list[tuple[str, int]]:
        pack = engine.recall(ask("chroma", hops=0, include_associated=True, **kw))
        return [(h.id, h.depth or 0) for h in pack.associated or ()]

    assert linked() == [(uid(3), 1), (uid(4), 1)]
    assert linked(associated_depth=3) == [(uid(3), 1), (uid(5), 2), (uid(6), 3), (uid(4), 1)]
    assert linked(associated_min_weight=0.5) == [(uid(3), 1)]
    assert linked(associated_cap=1) == [(uid(3), 1)]


def test_the_whole_reply_with_associated_items_fits_the_budget(make_engine: MakeEngine):
    long = make_memory(3, description="x", body="A sentence of filler words. " * 200)
    engine = graph_engine(make_engine, (1, 3, 1.0), (1, 4, 1.0))
    engine.planes.store.add(long)  # type: ignore[attr-defined]

    for budget in (120, 200, 400, 1000):
        pack = engine.recall(ask("chroma", hops=0, include_associated=True, budget=budget))
        sent = dumps(pack_view(pack))
        assert pack.tokens <= budget
        assert pack.tokens == engine.planes.tokens.count(sent)
        assert json.loads(sent)["associated"] == pack_view(pack)["associated"]


def test_main_items_come_first_when_the_budget_is_tight(make_engine: MakeEngine):
    engine = graph_engine(make_engine, (1, 3, 1.0))

    roomy = engine.recall(ask("chroma", hops=0, include_associated=True, budget=1000))
    # Halfway between the pack without the associated memory and the pack with it: the
    # main items and the warning fit, the associated memory does not (a constant budget
    # broke when items got shorter).
    alone = engine.recall(ask("chroma", hops=0, budget=1000))
    tight_budget = (alone.tokens + roomy.tokens) // 2
    tight = engine.recall(ask("chroma", hops=0, include_associated=True, budget=tight_budget))

    assert ids(roomy.items) == ids(tight.items) == [uid(1), uid(2)]
    assert ids(roomy.associated or ()) == [uid(3)]
    assert tight.associated == ()
    # Dropped, and said so (it was silent) when the warning fits too; never over budget.
    said = "1 associated memory found no room in the budget"
    assert said in tight.warnings and said not in roomy.warnings
    for budget in range(100, 200, 5):
        pack = engine.recall(ask("chroma", hops=0, include_associated=True, budget=budget))
        assert pack.tokens <= budget
        assert not (said in pack.warnings and pack.associated)
        if not pack.associated and said not in pack.warnings:  # no room for the warning
            assert pack.tokens + engine.planes.tokens.count(f',"{said}"') > budget


@pytest.mark.parametrize("graph_on", [True, False])
def test_a_graph_neighbour_in_the_main_items_is_not_associated(make_engine: MakeEngine, graph_on):
    engine = graph_engine(make_engine, (1, 3, 1.0))
    hops = 1 if graph_on else 0

    pack = engine.recall(ask("chroma", hops=hops, include_associated=True))

    in_main = uid(3) in ids(pack.items)
    assert in_main is graph_on
    assert (uid(3) in {h.id for h in pack.associated or ()}) is not graph_on
