from __future__ import annotations

import re
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from recall.config import SearchConfig
from recall.errors import ConfigError, QueryError, WalkConflict
from recall.fusion import Fused
from recall.requests import SearchRequest
from recall.results import Hit, Provenance
from recall.search import deepest, depth_for, floor, since
from recall.testing import FakeEmbedder
from tests.recall.conftest import (
    BAD_QUERIES,
    NOW,
    MakeEngine,
    ids,
    index,
    invalidate,
    make_memory,
    make_note,
    uid,
)


def test_search_ignores_token_budget(make_engine: MakeEngine):
    records = [make_memory(i, description="chroma", body="x" * 5000) for i in range(1, 31)]
    engine = make_engine(records)

    result = engine.search(SearchRequest("chroma", limit=25))

    assert len(result.hits) == 25
    assert all(h.tokens is None for h in result.hits)


def test_fast_path_never_calls_embedder(make_engine: MakeEngine):
    embedder = FakeEmbedder()
    engine = make_engine([make_memory(1, description="chroma boot")], embedder=embedder)

    result = engine.search(SearchRequest("chro", semantic=False, prefix=True))

    assert ids(result.hits) == [uid(1)]
    assert embedder.calls == 0
    assert engine.planes.vectors.searches == 0  # type: ignore[union-attr]
    assert result.embedded is False
    assert "embed" not in (result.timings or {})


def test_floor_drops_weak_semantic_only_hits_and_exempts_lexical(make_engine: MakeEngine):
    strong = make_memory(1, description="chroma boot race")
    lexical_weak = make_memory(2, description="chroma " + " ".join(f"w{i}" for i in range(40)))
    semantic_weak = make_memory(3, description="boot " + " ".join(f"v{i}" for i in range(40)))
    unrelated = make_memory(4, description="nothing shared here")
    engine = make_engine([strong, lexical_weak, semantic_weak, unrelated])
    engine.planes.text.delete([semantic_weak.id])  # the lexical leg cannot find it

    result = engine.search(
        SearchRequest("chroma boot race"), config=SearchConfig(semantic_floor=0.3)
    )

    by_id = {h.id: h for h in result.hits}
    assert lexical_weak.id in by_id and by_id[lexical_weak.id].similarity < 0.3  # type: ignore[operator]
    assert semantic_weak.id not in by_id
    assert unrelated.id not in by_id
    assert strong.id in by_id

    everything = engine.search(
        SearchRequest("chroma boot race"), config=SearchConfig(semantic_floor=-1.0)
    )
    assert semantic_weak.id in ids(everything.hits)


def test_lexical_only_hit_has_no_similarity(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma boot")])
    engine.planes.vectors.delete([uid(1)])  # type: ignore[union-attr]

    (hit,) = engine.search(SearchRequest("chroma")).hits

    assert hit.source == "fts"
    assert hit.similarity is None
    assert hit.snippet is not None


def test_semantic_hits_carry_raw_cosine(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma boot")])

    (hit,) = engine.search(SearchRequest("chroma boot")).hits

    assert hit.source == "fused"
    assert hit.similarity == pytest.approx(hit.sources[1].raw)
    assert 0.3 <= hit.similarity <= 1.0 + 1e-6  # type: ignore[operator]


def test_snippets_carry_sentinels_not_markup(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="d", body="the <b>chroma</b> boot race")])

    (hit,) = engine.search(SearchRequest("race")).hits

    assert hit.snippet is not None and "\x01race\x02" in hit.snippet
    assert "<mark>" not in hit.snippet
    assert hit.snippet_html is not None
    assert "<mark>race</mark>" in hit.snippet_html
    assert "&lt;b&gt;" in hit.snippet_html and "<b>" not in hit.snippet_html


def test_identifier_lane_ranks_first(make_engine: MakeEngine):
    target = make_memory(7, "chroma-boot-race", description="unrelated text")
    others = [make_memory(i, description="chroma boot race chroma boot race") for i in range(1, 4)]
    others[0] = replace(others[0], favorite=True)  # starred, but not what was typed
    engine = make_engine([target, *others])

    by_name = engine.search(SearchRequest("chroma-boot-race")).hits
    by_id = engine.search(SearchRequest(target.id)).hits
    by_prefix = engine.search(SearchRequest(target.id[:20])).hits

    assert (by_name[0].id, by_name[0].source) == (target.id, "identifier")
    assert by_name[1].id == others[0].id  # favorites lead the rest
    assert [h.id for h in by_name].count(target.id) == 1
    assert (by_id[0].id, by_id[0].sources[0].raw) == (target.id, 0.0)
    assert by_prefix[0].source == "identifier"


def test_every_project_or_the_chosen_list(make_engine: MakeEngine):
    engine = make_engine([
        make_memory(1, description="chroma", project="alpha"),
        make_memory(2, description="chroma", project="beta"),
        make_memory(3, description="chroma", project=None),
    ])  # fmt: skip

    assert set(ids(engine.search(SearchRequest("chroma")).hits)) == {uid(1), uid(2), uid(3)}
    assert set(ids(engine.search(SearchRequest("chroma", projects=("beta",))).hits)) == {
        uid(2),
        uid(3),
    }


@pytest.mark.parametrize("name", ["", "chroma-notes"])
def test_a_stale_index_row_never_leaks_a_moved_item(make_engine: MakeEngine, name: str):
    """The planes still say alpha; the database row now says beta (moved, index lagging)."""
    moved = make_memory(1, description="chroma", project="alpha", name=name)
    engine = make_engine([moved, make_memory(2, description="chroma", project="alpha")])
    engine.planes.store.add(replace(moved, project="beta"))  # type: ignore[attr-defined]

    for query in ("chroma", "chroma-notes", uid(1)):
        alpha = engine.search(SearchRequest(query, projects=("alpha",), include_global=False))
        assert uid(1) not in ids(alpha.hits)
    beta = engine.search(SearchRequest(uid(1), projects=("beta",), include_global=False))
    assert ids(beta.hits) == [uid(1)]  # found by its id, from the database


def test_since_keeps_recent_items_without_starving_them(make_engine: MakeEngine):
    old = [make_memory(1000 + i, description="chroma chroma chroma") for i in range(80)]
    recent = make_memory(1, description="chroma and more words here")
    engine = make_engine([*old, recent])

    result = engine.search(SearchRequest("chroma", since=NOW - timedelta(days=1)))

    assert ids(result.hits) == [recent.id]


def test_favorites_first_stable_within_groups(make_engine: MakeEngine):
    engine = make_engine([
        make_memory(1, description="chroma chroma chroma"),
        make_memory(2, description="chroma chroma", favorite=True),
        make_memory(3, description="chroma"),
        make_memory(4, description="chroma", favorite=True),
    ], embedder=None)  # fmt: skip

    assert ids(engine.search(SearchRequest("chroma")).hits) == [uid(2), uid(4), uid(1), uid(3)]


def test_inactive_items_only_when_asked(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")])
    invalidate(engine, uid(1))

    assert engine.search(SearchRequest("chroma")).hits == ()
    (hit,) = engine.search(SearchRequest("chroma", include_inactive=True)).hits
    assert hit.active is False


def test_kinds_and_items_filter(make_engine: MakeEngine):
    engine = make_engine([
        make_memory(1, description="chroma", kind="gotcha"),
        make_memory(2, description="chroma"),
        make_note(3, "Chroma"),
    ])  # fmt: skip

    assert ids(engine.search(SearchRequest("chroma", kinds=("gotcha",))).hits) == [uid(1)]
    assert ids(engine.search(SearchRequest("chroma", items=("note",))).hits) == [uid(3)]


def test_provider_failure_degrades_search_to_fts_with_warning(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")], embedder=FakeEmbedder(fail=True))

    result = engine.search(SearchRequest("chroma"))

    assert ids(result.hits) == [uid(1)]
    assert result.warnings and "semantic channel skipped" in result.warnings[0]


class MisconfiguredEmbedder(FakeEmbedder):
    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise ConfigError("bad endpoint")


def test_config_error_surfaces_in_search(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")], embedder=MisconfiguredEmbedder())

    with pytest.raises(ConfigError):
        engine.search(SearchRequest("chroma"))


def test_timings_cover_every_stage(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")])

    result = engine.search(SearchRequest("chroma"))

    assert set(result.timings or {}) == {
        "identifier", "embed", "fts", "semantic", "fusion", "hydrate", "total"
    }  # fmt: skip
    assert result.embedded is True


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 201}, "limit"),
        ({"kinds": ("gossip",)}, "kind"),
        ({"items": ("page",)}, "item"),
    ],
)
def test_bad_search_requests_raise_query_error(
    make_engine: MakeEngine, overrides: dict[str, object], message: str
):
    with pytest.raises(QueryError, match=message):
        make_engine().search(SearchRequest("chroma", **overrides))  # type: ignore[arg-type]


@pytest.mark.parametrize("query", BAD_QUERIES)
@pytest.mark.parametrize("semantic", [True, False])
def test_bad_queries_never_crash_search(make_engine: MakeEngine, query: str, semantic: bool):
    engine = make_engine([make_memory(1, description="nul byte and or not")])

    result = engine.search(SearchRequest(query, semantic=semantic, prefix=not semantic))

    assert len(result.hits) <= 1


# --- the stages on their own ---------------------------------------------------


def test_floor_drops_semantic_only_hits_below_it_and_keeps_everything_else():
    weak = Fused("a", 0.1, (Provenance("semantic", 1, 0.2),))
    strong = Fused("b", 0.2, (Provenance("semantic", 2, 0.5),))
    lexical = Fused("c", 0.3, (Provenance("fts", 1, 3.0),))
    both = Fused("d", 0.4, (Provenance("fts", 2, 1.0), Provenance("semantic", 3, 0.1)))

    assert [f.id for f in floor([weak, strong, lexical, both], 0.25)] == ["b", "c", "d"]


@pytest.mark.parametrize(
    ("semantic", "since", "paged", "page", "expected"),
    [
        (True, False, True, 20, 60),
        (True, False, True, 80, 500),  # past the first rung: the deepest
        (False, False, True, 20, 60 + 2 + 1),
        (False, False, True, 80, 500 + 2 + 1),
        (True, True, True, 20, 300),
        (False, True, True, 20, 315),
        (False, False, False, 20, 20 + 2 + 1),  # the palette: only what the page shows
        (True, False, False, 100, 100),
        (False, True, False, 20, 115),
    ],
)
def test_depth_reads_by_rungs_when_paged_and_only_the_page_on_the_unpaged_fast_path(
    semantic: bool, since: bool, paged: bool, page: int, expected: int
):
    req = SearchRequest("x", semantic=semantic, since=NOW if since else None, paged=paged)

    assert depth_for(req, SearchConfig(), page=page, pinned=2) == expected


@pytest.mark.parametrize("semantic", [True, False])
def test_a_walk_by_offset_meets_every_hit_once(make_engine: MakeEngine, semantic: bool):
    """Each page fused at a depth that grew with its offset, and fusion's normalisation,
    the favourites' lead and the pool re-scored all move with depth: a walk of 550 hits
    met 281 memories, some twice, and missed others."""
    words = ["chroma", "boot", "race", "vector", "shard", "index", "cache", "query"]
    records = [
        make_memory(
            i,
            description=" ".join(words[(i * k) % 8] for k in range(1, 4 + i % 5)),
            favorite=i % 9 == 0,
        )
        for i in range(1, 161)
    ]
    engine = make_engine(records)
    config = SearchConfig(depth=12, max_depth=90, semantic_floor=0.0)
    request = SearchRequest("chroma boot shard", limit=7, semantic=semantic)

    walked: list[str] = []
    for offset in range(0, 91, 7):
        page = engine.search(replace(request, offset=offset), config=config)
        walked += ids(page.hits)
    whole = engine.search(replace(request, offset=84), config=config)  # the deep rung's own
    first = engine.search(replace(request, limit=12), config=config)

    assert len(walked) == len(set(walked)) > 40
    assert walked[:12] == ids(first.hits)  # the first rung's pages as they were shown
    assert walked[84:] == ids(whole.hits)


WORDS = ["chroma", "boot", "race", "vector", "shard", "index", "cache", "query"]


def _varied(first: int, last: int, **overrides: Any) -> list[Any]:
    return [
        make_memory(i, description=" ".join(WORDS[(i * k) % 8] for k in range(1, 4 + i % 5)),
                    favorite=i % 9 == 0, **overrides)
        for i in range(first, last + 1)
    ]  # fmt: skip


def _walk(engine: Any, request: SearchRequest, config: SearchConfig, between: Any) -> list[str]:
    walked: list[str] = []
    cursor: str | None = None
    for n in range(40):
        page = engine.search(replace(request, cursor=cursor), config=config)
        walked += ids(page.hits)
        if page.cursor is None:
            return walked
        between(n, walked)
        cursor = page.cursor
    raise AssertionError("the walk did not end")


@pytest.mark.parametrize("semantic", [True, False])
def test_a_walk_by_cursor_meets_every_hit_once_while_memories_change(
    make_engine: MakeEngine, semantic: bool
):
    """By offset, a write or an archive between two pages moved the ranking under the
    walk: an agent walking /search met 5 hits twice and missed 5 others."""
    engine = make_engine(_varied(1, 40))
    config = SearchConfig(depth=12, max_depth=90, semantic_floor=0.0)
    request = SearchRequest("chroma boot shard", limit=7, semantic=semantic)
    archived: list[str] = []

    def change(n: int, walked: list[str]) -> None:  # strong new hits; one unseen archived
        index(engine, [make_memory(100 + 3 * n + k, description="chroma boot shard " * (k + 1),
                                   updated=NOW) for k in range(3)])  # fmt: skip
        unseen = [uid(i) for i in range(40, 0, -3) if uid(i) not in walked + archived]
        if unseen:
            archived.append(unseen[0])
            invalidate(engine, unseen[0])

    walked = _walk(engine, request, config, change)

    everything = engine.search(replace(request, limit=90), config=config)
    assert len(walked) == len(set(walked))
    assert set(ids(everything.hits)) <= set(walked)  # nothing live was skipped
    assert not set(archived) & set(walked[7:])  # archived before its page: not shown


def test_a_walk_by_cursor_through_hits_archived_behind_it_reaches_the_rest(
    make_engine: MakeEngine,
):
    """The walk's position counted every hit it had shown: with stronger hits written
    before each page and archived after it, the walk stopped at the deepest position
    (500) with none of the memories that matched throughout met, and no warning."""
    engine = make_engine([make_memory(i, description=f"zephyr {i}") for i in range(1, 9)])
    config = SearchConfig(depth=12, max_depth=30, semantic_floor=0.0)
    request = SearchRequest("zephyr", limit=5, semantic=False)
    strong: list[str] = []

    def churn(n: int, walked: list[str]) -> None:  # 9 pages of 5 new hits, each archived
        for made in strong:
            invalidate(engine, made)
        strong.clear()
        if n < 9:
            fresh = [make_memory(100 + 5 * n + k, description="zephyr zephyr zephyr " * 3,
                                 updated=NOW) for k in range(5)]  # fmt: skip
            index(engine, fresh)
            strong.extend(r.id for r in fresh)

    churn(-1, [])
    walked = _walk(engine, request, config, churn)

    assert len(walked) > 30 and len(walked) == len(set(walked))
    assert {uid(i) for i in range(1, 9)} <= set(walked)


def test_a_cursor_is_its_channels_and_its_projects_in_any_order(make_engine: MakeEngine):
    records = _varied(1, 30) + _varied(31, 60, project="beta")
    engine = make_engine(records)
    request = SearchRequest("chroma boot", limit=5, projects=("alpha", "beta"))
    first = engine.search(request).cursor
    text_alone = replace(SearchConfig(), channel_weights={"fts": 1.0})
    assert first is not None

    again = engine.search(replace(request, projects=("beta", "alpha"), cursor=first))
    with pytest.raises(WalkConflict, match="another search"):  # a plane's own ranking
        engine.search(replace(request, cursor=first), config=text_alone)
    assert not set(ids(again.hits)) & set(ids(engine.search(request).hits))


def test_a_cursor_past_its_capacity_forgets_the_hits_gone_from_the_ranking():
    # Every hit a walk showed kept its mark: through enough churn the next cursor
    # outgrew the published pattern, and passing it back answered 422.
    from recall import walks

    full = walks.Walk(7, 10, frozenset(range(walks.CAPACITY)))
    kept = walks.Walk(7, 10, frozenset([*range(walks.CAPACITY - 1), walks.mark("ranked")]))
    roomy = walks.Walk(7, 10, frozenset(range(5)))

    def marks(cursor: str | None) -> int:  # 8 characters of head, 16 for each 3 marks
        assert cursor is not None and re.fullmatch(walks.CURSOR_PATTERN, cursor)
        return (len(cursor) - 8) // 16 * 3

    assert marks(full.on(["new"], 11, ranked=[])) == 3  # one mark, the group filled
    assert marks(kept.on(["new"], 11, ranked=["ranked"])) == 3  # two marks
    assert marks(roomy.on(["new"], 11, ranked=[])) == 6  # nothing forgotten: 6 marks


def test_a_walk_by_cursor_that_nothing_changes_pages_as_offsets_do(make_engine: MakeEngine):
    engine = make_engine(_varied(1, 60))
    config = SearchConfig(depth=12, max_depth=90, semantic_floor=0.0)
    request = SearchRequest("chroma boot shard", limit=7)

    walked = _walk(engine, request, config, lambda n, walked: None)
    by_offset = [
        h for offset in range(0, 91, 7)
        for h in ids(engine.search(replace(request, offset=offset), config=config).hits)
    ]  # fmt: skip

    assert walked == by_offset
    assert engine.search(replace(request, cursor=_cursor_at(engine, request, config, 3)),
                         config=config).offset == 21  # fmt: skip


def _cursor_at(engine: Any, request: SearchRequest, config: SearchConfig, pages: int) -> str:
    cursor = None
    for _ in range(pages):
        cursor = engine.search(replace(request, cursor=cursor), config=config).cursor
        assert cursor is not None
    return cursor


def test_a_cursor_is_refused_for_another_search_or_when_not_ours(
    make_engine: MakeEngine,
):
    engine = make_engine(_varied(1, 30))
    config = SearchConfig(depth=12, semantic_floor=0.0)
    first = engine.search(SearchRequest("chroma boot", limit=5), config=config)
    assert first.cursor is not None

    with pytest.raises(WalkConflict, match="another search"):
        engine.search(SearchRequest("chroma race", limit=5, cursor=first.cursor), config=config)
    with pytest.raises(WalkConflict, match="another search"):
        engine.search(SearchRequest("chroma boot", projects=("beta",), cursor=first.cursor))
    for bad in ("", "x", "!!!", first.cursor[:-3], first.cursor + "A"):
        with pytest.raises(QueryError, match="not one a search handed out"):
            engine.search(SearchRequest("chroma boot", cursor=bad), config=config)
    # The page size may change along a walk: it is not part of the search; an offset
    # passes over that many more of the hits the walk has not shown.
    second = engine.search(
        SearchRequest("chroma boot", limit=4, cursor=first.cursor), config=config
    )
    skipped = engine.search(
        SearchRequest("chroma boot", limit=2, offset=2, cursor=first.cursor), config=config
    )
    assert ids(skipped.hits) == ids(second.hits)[2:]
    assert skipped.next_offset == second.next_offset == 5 + 4
    # Letter case and spacing do not change what a search finds (the text index and
    # the embedder both fold case): "Chroma  BOOT" goes on with the walk.
    shouted = engine.search(
        SearchRequest("Chroma  BOOT", limit=4, cursor=first.cursor), config=config
    )
    assert ids(shouted.hits) == ids(second.hits)


def test_the_last_page_hands_out_no_cursor(make_engine: MakeEngine):
    # All found shown: the walk ends there, unless a channel stopped at its depth with
    # more to give, or the page is the deepest a search reads.
    config = SearchConfig(depth=12, max_depth=24, semantic_floor=0.0)
    few = make_engine([make_memory(i, description=f"chroma boot {i}") for i in range(1, 11)])
    many = make_engine([make_memory(i, description=f"chroma boot {i}") for i in range(1, 41)])

    ended = few.search(SearchRequest("chroma", limit=5, offset=5), config=config)
    going = many.search(SearchRequest("chroma", limit=6, offset=6), config=config)
    deepest_page = many.search(SearchRequest("chroma", limit=6, offset=24), config=config)

    assert (ended.next_offset, ended.cursor) == (None, None)
    assert going.more and going.next_offset == 12 and going.cursor
    assert deepest_page.hits and (deepest_page.next_offset, deepest_page.cursor) == (None, None)


def test_no_next_page_is_handed_out_past_the_deepest_a_search_reads():
    # The page ending at 510 handed out next_offset 510, which the schema refuses (500):
    # two channels reading 500 deep each can fuse more than 500 hits.
    from recall import walks
    from recall.search import _onward

    walk, config, page = (
        walks.start(SearchRequest("x"), ["fts"]),
        SearchConfig(),
        [f"h{n}" for n in range(20)],
    )

    assert _onward(walk, 490, page, 20, left=True, limit=20, config=config) == (None, None)
    after, cursor = _onward(walk, 480, page, 20, left=True, limit=20, config=config)
    assert after == 500 and cursor is not None


def test_since_keeps_hits_updated_at_or_after_the_instant():
    hits = [replace(h, updated=NOW - timedelta(hours=n)) for n, h in enumerate(_hits(3))]

    assert [h.id for h in since(hits, NOW - timedelta(hours=1))] == ["h0", "h1"]


def _hits(n: int) -> list[Hit]:
    return [Hit("memory", f"h{i}", "n", "n", "", "alpha", "", "fts", 1.0) for i in range(n)]


def test_more_says_a_channel_stopped_at_its_depth(make_engine: MakeEngine):
    config = SearchConfig(depth=12, semantic_floor=0.0)
    many = make_engine([make_memory(i, description=f"chroma boot {i}") for i in range(1, 31)])
    few = make_engine([make_memory(i, description=f"chroma boot {i}") for i in range(1, 6)])

    assert many.search(SearchRequest("chroma", limit=5), config=config).more
    assert not few.search(SearchRequest("chroma", limit=5), config=config).more


def test_the_deepest_page_says_more_matched_than_a_search_reads(make_engine: MakeEngine):
    # The page that ended at the deepest rung handed out another offset, whose page
    # was empty, and nothing said that more matched than the search had read.
    config = SearchConfig(depth=12, max_depth=24, semantic_floor=0.0)
    engine = make_engine([make_memory(i, description=f"chroma boot {i}") for i in range(1, 41)])

    first = engine.search(SearchRequest("chroma", limit=6), config=config)
    before = engine.search(SearchRequest("chroma", limit=6, offset=12), config=config)
    last = engine.search(SearchRequest("chroma", limit=6, offset=18 + 6), config=config)

    assert first.more and not first.warnings
    assert not before.more and not before.warnings and before.total > 18
    assert not last.more and last.hits and last.total > 24
    assert last.warnings == (deepest(24),)


def test_a_ranking_deeper_than_its_page_asks_snippets_for_the_page_alone(
    make_engine: MakeEngine,
):
    # 60 deep for a page of 5: 55 snippets made and thrown away (at 500 deep, a third
    # of a page's time); the palette, which reads only its page, makes them inline.
    engine = make_engine([make_memory(i, description=f"chroma boot {i}") for i in range(1, 41)])
    text: Any = engine.planes.text
    searched: list[bool] = []
    asked: list[list[str]] = []
    search, snippets = text.search, text.snippets
    text.search = lambda *a, **kw: searched.append(kw["snippets"]) or search(*a, **kw)
    text.snippets = lambda t, wanted, **kw: asked.append(list(wanted)) or snippets(t, wanted, **kw)

    page = engine.search(SearchRequest("chroma", limit=5))
    palette = engine.search(SearchRequest("chro", semantic=False, prefix=True, paged=False))

    assert (searched[0], searched[-1]) == (False, True)  # (the reference's snippets search)
    assert asked == [ids(page.hits)]
    assert all(h.snippet and "\x01chroma\x02" in h.snippet for h in page.hits)
    assert all(h.snippet for h in palette.hits)
