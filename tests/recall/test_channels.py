"""The four standard channels, and what a new channel costs.

A new channel is one module (a class implementing `recall.ports.Channel`),
one registration line (the engine's `channels`, or `settings.RECALL
["CHANNELS"]` in the console) and one weight (the config's
`channel_weights`). `Echo` below is a throw-away channel that exists only in
this test module.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from recall.channels import STANDARD, FullText, Graph, Identifier, Semantic, standard
from recall.config import RecallConfig, SearchConfig
from recall.errors import ChannelOff
from recall.planes import Planes
from recall.ports import EXPAND, PIN, RANK, Channel
from recall.requests import RecallRequest, SearchRequest
from recall.testing import FakeEmbedder, InMemoryStore, InMemoryTextIndex
from recall.types import Candidate, ChannelQuery, Filter
from tests.recall.conftest import MakeEngine, ids, make_memory, uid


class Echo:
    """Throw-away test channel: every memory tagged `always`, whatever the query."""

    name = "echo"
    role = RANK
    needs_vector = False

    def __init__(self, planes: Planes) -> None:
        self._store = planes.store

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        found = [r for r in self._store.browse(where=where, limit=1000) if "always" in r.tags]
        return [Candidate(r.id, n, 1.0) for n, r in enumerate(found[:depth], 1)]


def test_a_new_channel_is_one_module_one_registration_line_and_one_weight(
    make_engine: MakeEngine,
):
    fts_hit = make_memory(1, description="chroma boot race")
    named = make_memory(2, "zebra", description="nothing in common", tags=("always",))
    engine = make_engine([fts_hit, named], embedder=None)
    engine.channels = [*engine.registered, Echo(engine.planes)]  # the registration line
    weighted = RecallConfig(channel_weights={"fts": 0.6, "echo": 0.4})  # the weight

    without = engine.recall(RecallRequest("chroma", "alpha", debug=True))
    with_echo = engine.recall(RecallRequest("chroma", "alpha", debug=True), config=weighted)

    assert ids(without.items) == [uid(1)]
    assert set(ids(with_echo.items)) == {uid(1), uid(2)}
    (zebra,) = [h for h in with_echo.items if h.id == uid(2)]
    assert zebra.source == "echo" and [p.channel for p in zebra.sources] == ["echo"]
    assert with_echo.debug is not None and with_echo.debug["channel_status"]["echo"] == "on"


def test_every_channel_meets_the_port():
    planes = Planes(text=InMemoryTextIndex(), store=InMemoryStore())
    for channel in [*standard(planes), Echo(planes)]:
        assert isinstance(channel, Channel)
        assert channel.role in (RANK, PIN, EXPAND)
    assert [c.name for c in STANDARD] == ["fts", "semantic", "identifier", "graph", "session"]


def planes_with(*records: object, embedder: FakeEmbedder | None = None) -> Planes:
    store = InMemoryStore(records)  # type: ignore[arg-type]
    text = InMemoryTextIndex()
    from recall.types import to_doc

    text.upsert([to_doc(r) for r in store.records.values()])
    return Planes(text=text, store=store, embedder=embedder)


def test_full_text_passes_prefix_and_snippets_through():
    planes = planes_with(make_memory(1, description="chroma boot race"))

    found = FullText(planes).candidates(
        ChannelQuery("chro", prefix=True, snippets=True), Filter(), 5, ()
    )

    assert [c.id for c in found] == [uid(1)] and found[0].snippet is not None


class StampedText(InMemoryTextIndex):
    """The in-memory text index with a stamp (as tantivy's and Whoosh's have),
    counting its searches."""

    def __init__(self) -> None:
        super().__init__()
        self.commits = 0
        self.searches = 0

    def stamp(self) -> object:
        return self.commits

    def search(self, *args: Any, **kwargs: Any) -> list[Candidate]:
        self.searches += 1
        return super().search(*args, **kwargs)


def test_a_short_palette_prefix_is_searched_once_until_the_index_moves():
    from recall.types import to_doc

    race = make_memory(1, description="chroma boot race")
    text = StampedText()
    text.upsert([to_doc(race)])
    channel = FullText(Planes(text=text, store=InMemoryStore([race])))
    typed = ChannelQuery("boot ch", prefix=True, snippets=True)

    first = channel.candidates(typed, Filter(), 5, ())
    again = channel.candidates(typed, Filter(), 5, ())
    assert again == first and [c.id for c in first] == [uid(1)] and text.searches == 1

    channel.candidates(typed, Filter(projects=("beta",)), 5, ())  # another filter: its own
    channel.candidates(typed, Filter(), 6, ())  # another depth: its own
    assert text.searches == 3

    text.upsert([to_doc(make_memory(2, description="chroma boot order"))])
    text.commits += 1  # the index moved: searched again, and the new memory is found
    moved = channel.candidates(typed, Filter(), 5, ())
    assert {c.id for c in moved} == {uid(1), uid(2)} and text.searches == 4


@pytest.mark.parametrize(
    "query",
    [ChannelQuery("boot chr", prefix=True), ChannelQuery("boot ch"), ChannelQuery("", prefix=True)],
)
def test_longer_prefixes_and_whole_words_are_searched_every_time(query: ChannelQuery):
    text = StampedText()
    channel = FullText(Planes(text=text, store=InMemoryStore()))

    channel.candidates(query, Filter(), 5, ())
    channel.candidates(query, Filter(), 5, ())

    assert text.searches == 2 and len(channel.kept) == 0


def test_semantic_is_off_without_a_vector_index_or_a_vector():
    planes = planes_with(make_memory(1))
    with pytest.raises(ChannelOff, match="no vector index"):
        Semantic(planes).candidates(ChannelQuery("x"), Filter(), 5, ())


def test_identifier_scores_are_lanes_and_ranks_are_places():
    exact = make_memory(1, "deploy-order")
    planes = planes_with(exact, make_memory(2, "other"))

    by_name = Identifier(planes).candidates(ChannelQuery("deploy-order"), Filter(), 5, ())
    by_id = Identifier(planes).candidates(ChannelQuery(uid(1)), Filter(), 5, ())
    two_words = Identifier(planes).candidates(ChannelQuery("deploy order"), Filter(), 5, ())

    assert [(c.id, c.rank, c.score) for c in by_name] == [(uid(1), 1, 1.0)]
    assert [(c.id, c.rank, c.score) for c in by_id] == [(uid(1), 1, 0.0)]
    assert two_words == []


def test_graph_follows_seeds_scored_by_seed_and_weight_seeds_voting_for_seeds():
    a = make_memory(1, "a", body="[[c]] [[b]]")
    b = make_memory(2, "b", body="[[a]] [[d]]")
    planes = planes_with(a, b, make_memory(3, "c"), make_memory(4, "d"))
    seeds = [Candidate(uid(1), 1, 0.9), Candidate(uid(2), 2, 0.8)]

    found = Graph(planes).candidates(ChannelQuery("q"), Filter(), 10, seeds)
    capped = Graph(planes).candidates(ChannelQuery("q"), Filter(), 1, seeds)

    assert [(c.id, c.rank, c.score) for c in found] == [
        (uid(2), 1, 0.9),  # b, a seed, linked from the better seed a
        (uid(3), 2, 0.9),  # ties: hops, then path ids
        (uid(1), 3, 0.8),
        (uid(4), 4, 0.8),
    ]
    assert found[1].path == (uid(1), uid(3))
    assert [c.id for c in capped] == [uid(2)]
    assert Graph(planes).candidates(ChannelQuery("q"), Filter(), 10, []) == []


def test_search_runs_the_pin_channel_and_recall_does_not(make_engine: MakeEngine):
    target = make_memory(1, "deploy-order", description="how services start")
    engine = make_engine([target], embedder=None)

    searched = engine.search(SearchRequest("deploy-order"))
    recalled = engine.recall(RecallRequest("deploy-order", "alpha", debug=True))
    unpinned = engine.search(
        SearchRequest("deploy-order"), config=SearchConfig(channel_weights={"fts": 1.0})
    )

    assert searched.hits[0].source == "identifier"
    assert recalled.debug is not None and "identifier" not in recalled.debug["channel_status"]
    assert unpinned.hits[0].source == "fts"
