"""The expand stage: the graph channel's list joins the fusion, in Recall."""

from __future__ import annotations

import pytest

from recall.config import RecallConfig
from recall.expansion import refuse, seeds, wanted
from recall.requests import RecallRequest
from recall.scoring import Scored
from recall.testing import InMemoryStore
from recall.types import Candidate, Filter
from tests.recall.conftest import MakeEngine, ids, invalidate, make_memory, make_note, uid

RRF = RecallConfig(fusion="rrf", channel_weights={"fts": 1.0, "semantic": 1.0, "graph": 1.0})


def ask(query: str, **kw: object) -> RecallRequest:
    return RecallRequest(query=query, project="alpha", **kw)  # type: ignore[arg-type]


def scored(*records: object) -> list[Scored]:
    return [Scored(r, 1.0 / n, (), "fts") for n, r in enumerate(records, 1)]  # type: ignore[arg-type]


def graph_ids(pack: object) -> list[str]:
    return [h.id for h in pack.items if h.source == "graph"]  # type: ignore[attr-defined]


def test_seeds_are_the_best_memories_never_notes():
    ranked = scored(make_note(1, "Note"), make_memory(2), make_memory(3), make_memory(4))

    assert [s.id for s in seeds(ranked, limit=2)] == [uid(2), uid(3)]
    assert [s.rank for s in seeds(ranked, limit=2)] == [1, 2]


def test_expansion_runs_without_a_kind_filter_only():
    assert wanted(Filter(), limit=5)
    assert not wanted(Filter(kinds=("gotcha",)), limit=5)
    assert not wanted(Filter(), limit=0)


def test_the_graph_list_is_fused_with_the_others_by_weight():
    a, b, c = make_memory(1), make_memory(2), make_memory(3)
    store = InMemoryStore([a, b, c])
    fts = [Candidate(uid(1), 1, 9.0), Candidate(uid(2), 2, 5.0)]
    graph = [Candidate(uid(2), 1, 0.5, path=(uid(1), uid(2))), Candidate(uid(3), 2, 0.4)]

    out = refuse(
        {"fts": fts}, {"graph": graph}, scored(a, b), store=store, method="rrf",
        weights={"fts": 1.0, "graph": 2.0}, k=60,
    )  # fmt: skip

    assert [s.record.id for s in out] == [uid(2), uid(3), uid(1)]
    assert out[0].score == pytest.approx(1 / 62 + 2 / 61)
    assert out[0].source == "fused"
    found = next(p for p in out[0].sources if p.channel == "graph")
    assert (found.hops, found.path) == (1, (uid(1), uid(2)))


def test_an_empty_graph_list_leaves_the_ranking_as_it_was():
    a = make_memory(1)
    before = scored(a)
    out = refuse({"fts": [Candidate(uid(1), 1, 1.0)]}, {"graph": []}, before,
                 store=InMemoryStore([a]), method="zscore", weights={}, k=60)  # fmt: skip
    assert out == before


def test_with_no_turn_that_asks_nothing_expanded_is_not_fused_again(monkeypatch):
    # `asking_turns` on: an empty expansion fuses the lists again only to lower a turn
    # that asks; with none among the hits, the ranking stays as it was, unfused.
    from recall import expansion

    turn = make_memory(1, description="what broke the deploy?", kind="episode", session_id="s")
    fact = make_memory(2, description="the deploy broke on a lock")
    lists = {"fts": [Candidate(uid(1), 1, 2.0), Candidate(uid(2), 2, 1.0)]}
    fused: list[int] = []
    monkeypatch.setattr(expansion, "fuse", lambda *a, **kw: fused.append(1) or [])

    for hits in ([fact], [fact, turn]):
        refuse(lists, {"session": []}, scored(*hits), store=InMemoryStore([turn, fact]),
               method="zscore", weights={}, k=60, asking=1.0)  # fmt: skip

    assert fused == [1]  # the second call alone: a turn asks


def test_graph_neighbours_join_recall_with_source_graph(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma boot race", body="see [[startup-order]]")
    neighbour = make_memory(2, "startup-order", description="services start in this order")
    engine = make_engine([seed, neighbour], embedder=None)

    pack = engine.recall(ask("chroma", debug=True), config=RRF)

    assert ids(pack.items) == [seed.id, neighbour.id]
    assert pack.items[1].source == "graph"
    # RRF rank 1 in the graph's list, plus the session prior (0.3 x its own
    # score: no session), applied to the second fusion as to the first
    assert pack.items[1].score == pytest.approx(1.3 / (60 + 1))
    (prov,) = pack.items[1].sources
    assert (prov.channel, prov.hops, prov.path) == ("graph", 1, (seed.id, neighbour.id))


def test_names_resolve_in_the_project_before_global(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", body="[[shared]]")
    engine = make_engine(
        [seed, make_memory(2, "shared", project=None), make_memory(3, "shared")], embedder=None
    )

    assert graph_ids(engine.recall(ask("chroma"), config=RRF)) == [uid(3)]


def test_expansion_is_noop_without_edges(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_memory(2, "unlinked", description="other")]
    )

    pack = engine.recall(ask("chroma", debug=True), config=RRF)

    assert pack.items and "graph" not in {h.source for h in pack.items}


def test_expansion_is_skipped_with_a_kind_filter(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", kind="gotcha", body="[[other]]")
    engine = make_engine([seed, make_memory(2, "other", kind="gotcha")], embedder=None)

    assert ids(engine.recall(ask("chroma", kind="gotcha")).items) == [seed.id]


@pytest.mark.parametrize("off", [{"channel_weights": {"graph": 0}}, {"hops": 0}])
def test_a_zero_graph_weight_or_zero_hops_turns_expansion_off(make_engine: MakeEngine, off):
    seed = make_memory(1, description="chroma", body="[[other]]")
    engine = make_engine([seed, make_memory(2, "other")], embedder=None)

    assert ids(engine.recall(ask("chroma", **off), config=RRF).items) == [seed.id]


def test_out_of_scope_and_inactive_neighbours_are_never_reached(make_engine: MakeEngine):
    seed = make_memory(1, description="chroma", body="[[elsewhere]] [[retired]]")
    engine = make_engine(
        [seed, make_memory(2, "elsewhere", project=None), make_memory(3, "retired")],
        embedder=None,
        isolation={"alpha": "sealed"},
    )
    invalidate(engine, uid(3))

    assert ids(engine.recall(ask("chroma")).items) == [seed.id]


def test_only_the_top_graph_seeds_are_expanded(make_engine: MakeEngine):
    seeds_ = [
        make_memory(i, description="chroma " * (12 - i), body=f"[[n{i}]]") for i in range(1, 11)
    ]
    targets = [make_memory(100 + i, f"n{i}") for i in range(1, 11)]
    engine = make_engine([*seeds_, *targets], embedder=None)

    ranked = ids(engine.recall(ask("chroma", limit=100, hops=0), config=RRF).items)
    target = {uid(i): uid(100 + i) for i in range(1, 11)}

    default = graph_ids(engine.recall(ask("chroma", limit=100), config=RRF))
    three = graph_ids(engine.recall(ask("chroma", limit=100, graph_seeds=3), config=RRF))

    assert set(default) == {target[s] for s in ranked[:8]}  # graph_seeds 8 (fabriq)
    assert set(three) == {target[s] for s in ranked[:3]}


def test_request_fields_out_of_range_are_query_errors(make_engine: MakeEngine):
    from recall.errors import QueryError

    engine = make_engine([make_memory(1, description="chroma")], embedder=None)
    for bad in ({"hops": 4}, {"graph_min_weight": 1.5}, {"associated_cap": 11},
                {"associated_depth": 0}, {"graph_seeds": -1}):  # fmt: skip
        with pytest.raises(QueryError, match=next(iter(bad))):
            engine.recall(ask("chroma", **bad))
