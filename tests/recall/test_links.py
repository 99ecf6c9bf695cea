from __future__ import annotations

import pytest

from recall.config import RecallConfig
from recall.links import expand
from recall.requests import RecallRequest
from recall.results import Provenance
from recall.testing import InMemoryStore
from tests.recall.conftest import MakeEngine, ids, invalidate, make_memory, uid

RRF = RecallConfig(fusion="rrf", channel_weights={"fts": 1.0, "semantic": 1.0})


def ask(query: str, **kw: object) -> RecallRequest:
    return RecallRequest(query=query, project="alpha", **kw)  # type: ignore[arg-type]


def test_neighbours_score_by_discovery_order():
    seed = make_memory(1, links=("beta-note", "gamma-note", "beta-note"))
    store = InMemoryStore([seed, make_memory(2, "beta-note"), make_memory(3, "gamma-note")])

    found = expand([seed], store=store, project="alpha", k=60, exclude={seed.id})

    assert [(r.id, p) for r, p in found] == [
        (uid(2), Provenance("link", 1, 1 / (60 + 1))),
        (uid(3), Provenance("link", 2, 1 / (60 + 2))),
    ]


def test_names_resolve_in_the_project_before_global():
    seed = make_memory(1, links=("shared",))
    store = InMemoryStore([seed, make_memory(2, "shared", project=None), make_memory(3, "shared")])

    found = expand([seed], store=store, project="alpha", k=60, exclude=set())

    assert [r.id for r, _ in found] == [uid(3)]


def test_link_neighbours_join_recall_with_source_link(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma boot race", links=("startup-order",))
    neighbour = make_memory(2, "startup-order", description="services start in this order")
    engine = make_engine([seed, neighbour], embedder=None)

    pack = engine.recall(ask("chroma"), config=RRF)

    assert ids(pack.items) == [seed.id, neighbour.id]
    assert pack.items[1].source == "link"
    assert pack.items[1].score == pytest.approx(1 / (60 + 1))


def test_link_expansion_is_noop_without_bodies(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_memory(2, "unlinked", description="other")]
    )

    pack = engine.recall(ask("chroma", debug=True), config=RRF)

    assert [h.source for h in pack.items] != [] and "link" not in {h.source for h in pack.items}


def test_link_expansion_is_skipped_with_a_kind_filter(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", kind="gotcha", links=("other",))
    engine = make_engine([seed, make_memory(2, "other", kind="gotcha")], embedder=None)

    assert ids(engine.recall(ask("chroma", kind="gotcha")).items) == [seed.id]


def test_out_of_scope_and_inactive_neighbours_are_guarded(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", links=("elsewhere", "retired"))
    engine = make_engine(
        [seed, make_memory(2, "elsewhere", project=None), make_memory(3, "retired")],
        embedder=None,
        isolation={"alpha": "sealed"},
    )
    invalidate(engine, uid(3))

    assert ids(engine.recall(ask("chroma")).items) == [seed.id]


def test_only_the_top_seeds_are_expanded(make_engine: MakeEngine):
    seeds = [
        make_memory(i, description="chroma " * (10 - i), links=(f"n{i}",)) for i in range(1, 8)
    ]
    targets = [make_memory(100 + i, f"n{i}") for i in range(1, 8)]
    engine = make_engine([*seeds, *targets], embedder=None)

    pack = engine.recall(ask("chroma", limit=100), config=RRF)

    linked = [h.id for h in pack.items if h.source == "link"]
    assert linked == [uid(101), uid(102), uid(103), uid(104), uid(105)]
