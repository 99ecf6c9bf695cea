from __future__ import annotations

from dataclasses import replace

import pytest

from recall.channels import FTS, SEMANTIC
from recall.config import RecallConfig
from recall.errors import ConfigError, QueryError
from recall.gather import Gathered
from recall.recall import _meaning_floor
from recall.requests import RecallRequest
from recall.testing import FakeEmbedder
from recall.types import Candidate, Filter
from tests.recall.conftest import (
    BAD_QUERIES,
    MakeEngine,
    ids,
    invalidate,
    make_memory,
    make_note,
    uid,
)

# The RRF arithmetic, without the session prior and the lowering of turns that ask (their
# own tests are below and in test_fusion)
# and without routing (hybrid: the weights as given; routing has its own tests below).
RRF = RecallConfig(
    fusion="rrf", channel_weights={"fts": 1.0, "semantic": 1.0}, session_prior=0.0,
    routing="hybrid", asking_turns=0.0,
)  # fmt: skip


def ask(query: str, project: str | None = "alpha", **kw: object) -> RecallRequest:
    return RecallRequest(query=query, project=project, **kw)  # type: ignore[arg-type]


def test_in_scope_survives_out_of_scope_dominance(make_engine: MakeEngine):
    crowd = [
        make_memory(i, description="chroma boot race chroma boot race", project="beta")
        for i in range(1, 61)
    ]
    mine = make_memory(100, description="a note on the chroma boot order")
    engine = make_engine([*crowd, mine])

    pack = engine.recall(ask("chroma boot race", debug=True))

    assert ids(pack.items) == [mine.id]
    assert set(pack.debug["channels"][mine.id]) == {"fts", "semantic"}  # type: ignore[index]


def _dominance(make_engine: MakeEngine, channel: str) -> None:
    crowd = [make_memory(i, description="chroma boot race deadlock") for i in range(1, 61)]
    live = make_memory(100, description="chroma boot race fixed by ordering")
    engine = make_engine([*crowd, live])
    for old in crowd:
        invalidate(engine, old.id, superseded_by=live.id)

    pack = engine.recall(ask("chroma boot race deadlock", debug=True, limit=100))

    assert ids(pack.items) == [live.id]
    assert channel in pack.debug["channels"][live.id]  # type: ignore[index]


def test_live_memory_survives_superseded_dominance_semantic(make_engine: MakeEngine):
    _dominance(make_engine, "semantic")


def test_live_memory_survives_superseded_dominance_lexical(make_engine: MakeEngine):
    _dominance(make_engine, "fts")


def test_provider_failure_degrades_to_fts_with_warning(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma boot race")], embedder=FakeEmbedder(fail=True)
    )

    pack = engine.recall(ask("chroma", debug=True))

    assert ids(pack.items) == [uid(1)]
    assert pack.items[0].source == "fts"
    assert any("semantic channel skipped" in w for w in pack.warnings)
    assert pack.debug is not None and pack.debug["embedded"] is False


def test_vector_index_failure_degrades_to_fts_with_warning(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma boot race")])
    engine.planes.vectors.fail = True  # type: ignore[union-attr]

    pack = engine.recall(ask("chroma"))

    assert ids(pack.items) == [uid(1)]
    assert any("semantic channel skipped: index unavailable" in w for w in pack.warnings)


class MisconfiguredEmbedder(FakeEmbedder):
    def embed(self, texts):  # type: ignore[no-untyped-def]
        raise ConfigError("model file missing")


def test_config_error_surfaces(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")], embedder=MisconfiguredEmbedder())

    with pytest.raises(ConfigError, match="model file missing"):
        engine.recall(ask("chroma"))


def test_no_embedder_runs_fts_only_quietly_and_says_so_in_debug(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")], embedder=None)

    pack = engine.recall(ask("chroma", debug=True))

    assert ids(pack.items) == [uid(1)]
    assert pack.warnings == ()
    assert "no embedder" in str(pack.debug["semantic"])  # type: ignore[index]


def test_recall_never_sets_snippet_or_similarity(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma boot"), make_note(2, "Chroma notes", body="chroma")]
    )

    pack = engine.recall(ask("chroma boot"))

    assert len(pack.items) == 2
    assert all(
        h.snippet is None and h.snippet_html is None and h.similarity is None for h in pack.items
    )
    assert all(h.tokens is not None and h.sources for h in pack.items)


def test_fused_scores_and_sources_follow_rrf(make_engine: MakeEngine):
    engine = make_engine(
        [
            make_memory(1, description="chroma boot race"),
            make_memory(2, description="unrelated words"),
        ]
    )

    pack = engine.recall(ask("chroma boot race"), config=RRF)

    assert [h.source for h in pack.items] == ["fused", "semantic"]  # Recall keeps weak neighbours
    assert pack.items[0].score == pytest.approx(1 / (60 + 1) + 1 / (60 + 1))


def test_favorite_and_usage_boosts_apply_after_fusion(make_engine: MakeEngine):
    a = make_memory(1, description="chroma boot race")
    b = make_memory(2, description="chroma boot race", favorite=True)
    c = make_memory(3, description="chroma boot race")
    engine = make_engine([a, b, c], embedder=None, usage={c.id: 0.5})

    pack = engine.recall(ask("chroma"), config=RRF)

    base = 1 / (60 + 1)  # all three tie in fts; ranks 1..3 by id
    scores = {h.id: h.score for h in pack.items}
    assert scores[a.id] == pytest.approx(base)
    assert scores[b.id] == pytest.approx(1 / (60 + 2) * 1.15)
    assert scores[c.id] == pytest.approx(1 / (60 + 3) * (1 + 0.1 * 0.5))
    assert ids(pack.items) == [b.id, c.id, a.id]


def test_zscore_scores_stay_positive_so_boosts_never_invert(make_engine: MakeEngine):
    records = [make_memory(i, description="chroma " * i, favorite=i == 1) for i in range(1, 5)]
    engine = make_engine(records, embedder=None)

    plain = engine.recall(ask("chroma"), config=RecallConfig(favorite_boost=1.0))
    boosted = engine.recall(ask("chroma"))

    assert all(h.score > 0 for h in plain.items)
    before = {h.id: h.score for h in plain.items}
    after = {h.id: h.score for h in boosted.items}
    assert after[uid(1)] == pytest.approx(before[uid(1)] * 1.15)


def test_token_budget_packs_greedily_and_the_first_overflow_ends_it(make_engine: MakeEngine):
    records = [
        make_memory(1, description="chroma " * 3),
        make_memory(2, description="chroma " * 2, body="x" * 400),
        make_memory(3, description="chroma"),
    ]
    engine = make_engine(records, embedder=None)

    pack = engine.recall(ask("chroma", budget=90), config=RRF)

    assert ids(pack.items) == [uid(1)]  # the 400 x's cannot be cut at a boundary
    assert pack.omitted == 2
    assert pack.items[0].tokens is not None and pack.items[0].tokens < pack.tokens
    assert pack.tokens <= pack.budget == 90


def test_a_hit_too_big_for_the_budget_is_omitted_with_a_warning(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma", body="x" * 2000)], embedder=None)

    pack = engine.recall(ask("chroma", budget=50))

    assert pack.items == () and pack.omitted == 1 and 0 < pack.tokens <= 50
    assert any(w.startswith("nothing packed: ") for w in pack.warnings)


def test_scope_memories_and_notes(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_note(2, "Chroma", body="chroma")]
    )

    assert ids(engine.recall(ask("chroma", scope="memories")).items) == [uid(1)]
    assert ids(engine.recall(ask("chroma", scope="notes")).items) == [uid(2)]


def test_global_items_are_in_scope_and_other_projects_are_not(make_engine: MakeEngine):
    engine = make_engine([
        make_memory(1, description="chroma", project=None),
        make_memory(2, description="chroma", project="beta"),
        make_memory(3, description="chroma"),
    ])  # fmt: skip

    assert set(ids(engine.recall(ask("chroma")).items)) == {uid(1), uid(3)}
    assert ids(engine.recall(ask("chroma", project=None)).items) == [uid(1)]


def test_sealed_project_sees_no_global_hits(make_engine: MakeEngine):
    engine = make_engine(
        [
            make_memory(1, description="chroma", project=None),
            make_memory(2, description="chroma", project="vault"),
        ],
        isolation={"vault": "sealed"},
    )

    assert ids(engine.recall(ask("chroma", project="vault")).items) == [uid(2)]


def test_hits_that_no_longer_hydrate_are_dropped(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_memory(2, description="chroma")]
    )
    del engine.planes.store.records[uid(1)]  # type: ignore[attr-defined]

    assert ids(engine.recall(ask("chroma")).items) == [uid(2)]


def test_post_fusion_guard_drops_a_hit_the_index_wrongly_returned(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_memory(2, description="chroma")]
    )
    engine.planes.store.invalidate(uid(1))  # type: ignore[attr-defined] # index not yet synced

    assert ids(engine.recall(ask("chroma")).items) == [uid(2)]


def test_kind_browse_lists_newest_first_and_skips_invalidated(make_engine: MakeEngine):
    engine = make_engine([
        make_memory(3, kind="convention"),
        make_memory(1, kind="convention"),
        make_memory(2, kind="convention"),
        make_memory(4, kind="fact"),
    ])  # fmt: skip
    invalidate(engine, uid(2))

    pack = engine.recall(ask("  ", kind="convention"))

    assert ids(pack.items) == [uid(1), uid(3)]  # uid(1) is the newest (1 hour old)
    assert {h.source for h in pack.items} == {"browse"}


def test_kind_filter_restricts_search(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma", kind="gotcha"), make_memory(2, description="chroma")]
    )

    assert ids(engine.recall(ask("chroma", kind="gotcha")).items) == [uid(1)]


@pytest.mark.parametrize(
    ("query", "overrides", "warning"),
    [
        ("", {}, "query is empty"),
        ("?!", {}, "no searchable"),
        ("chroma", {"kind": "fact", "scope": "notes"}, "scope 'notes' has none"),
        ("", {"kind": "fact", "scope": "notes"}, "scope 'notes' has none"),
    ],
)
def test_a_request_with_nothing_to_look_for_is_an_empty_pack_saying_why(
    make_engine: MakeEngine, query: str, overrides: dict[str, str], warning: str
):
    engine = make_engine(
        [make_memory(1, description="chroma"), make_note(2, "Chroma", body="chroma")]
    )
    pack = engine.recall(ask(query, **overrides))

    assert pack.items == () and warning in pack.warnings[0]
    assert pack.tokens <= pack.budget


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"limit": 0}, "limit"),
        ({"limit": 101}, "limit"),
        ({"budget": 0}, "budget"),
        ({"budget": 10_000_000}, "budget"),
        ({"scope": "everything"}, "scope"),
        ({"kind": "gossip"}, "kind"),
        ({"rrf_k": 0}, "rrf_k must be"),
        ({"k": 0}, "candidates per channel"),
        ({"k": 201}, "candidates per channel"),
        ({"routing": "smart"}, "routing must be"),
        ({"entities": ("memories", "people")}, "entities must"),
        ({"entities": ()}, "entities must"),
        ({"entities": ("notes",), "scope": "memories"}, "disagree"),
        ({"channel_weights": {"fts": -1.0}}, "weight"),
    ],
)
def test_bad_requests_raise_query_error(
    make_engine: MakeEngine, overrides: dict[str, object], message: str
):
    with pytest.raises(QueryError, match=message):
        make_engine().recall(ask("chroma", **overrides))


@pytest.mark.parametrize("query", BAD_QUERIES)
def test_bad_queries_never_crash_recall(make_engine: MakeEngine, query: str):
    engine = make_engine([make_memory(1, description="nul byte and or not")])
    try:
        pack = engine.recall(ask(query))
    except QueryError:
        return
    assert pack.tokens <= pack.budget


def test_request_weights_override_config_weights(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(1, description="chroma boot"), make_memory(2, description="chroma")]
    )

    pack = engine.recall(
        ask("chroma boot", channel_weights={"semantic": 0.0}, debug=True), config=RRF
    )

    assert pack.debug["weights"] == {"fts": 1.0, "semantic": 0.0}  # type: ignore[index]
    assert pack.items[0].score == pytest.approx(1 / (60 + 1))


def test_debug_reports_ranks_timings_and_config(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, description="chroma")])

    debug = engine.recall(ask("chroma", debug=True)).debug

    assert debug is not None
    assert debug["channels"] == {uid(1): {"fts": 1, "semantic": 1}}
    assert set(debug["timings_ms"]) >= {
        "embed",
        "fts",
        "semantic",
        "fusion",
        "graph",
        "hydrate",
        "pack",
        "total",
    }  # type: ignore[arg-type]
    assert debug["embedded"] is True
    assert debug["channel_status"] == {
        "fts": "on", "semantic": "on", "graph": "on", "session": "on"
    }  # fmt: skip
    assert debug["config"]["k"] == 60  # type: ignore[index]


def test_ages_come_from_the_clock(make_engine: MakeEngine):
    engine = make_engine(
        [make_memory(5, description="chroma"), make_memory(24 * 3, description="chroma")]
    )

    assert sorted(h.age for h in engine.recall(ask("chroma")).items) == ["3d", "5h"]


def test_the_session_prior_lifts_the_turns_of_the_best_hits_session(make_engine: MakeEngine):
    turn = {"kind": "episode"}
    engine = make_engine(
        [
            make_memory(1, description="chroma boot race", session_id="s1", **turn),
            make_memory(2, description="chroma again", session_id="s2", **turn),
            make_memory(3, description="chroma once more", session_id="s1", **turn),
        ],
        embedder=None,
    )

    plain = engine.recall(ask("chroma boot race"), config=RRF)
    lifted = engine.recall(ask("chroma boot race"), config=replace(RRF, session_prior=1.0))

    assert ids(plain.items) == [uid(1), uid(2), uid(3)]  # 2 is shorter than 3
    assert ids(lifted.items) == [uid(1), uid(3), uid(2)]  # 3 shares the best hit's session
    best = 1 / (60 + 1)
    assert lifted.items[1].score == pytest.approx(1 / (60 + 3) + best)


def test_the_session_prior_reads_turns_only_not_notes_written_in_a_session(
    make_engine: MakeEngine,
):
    # A gotcha and a runbook an agent wrote in one session are not turns of a
    # conversation: the runbook gains nothing from the gotcha being the best hit.
    engine = make_engine(
        [
            make_memory(1, description="chroma boot race", session_id="s1", kind="gotcha"),
            make_memory(2, description="chroma again", session_id="s2", kind="runbook"),
            make_memory(3, description="chroma once more", session_id="s1", kind="runbook"),
        ],
        embedder=None,
    )

    lifted = engine.recall(ask("chroma boot race"), config=replace(RRF, session_prior=1.0))

    assert ids(lifted.items) == [uid(1), uid(2), uid(3)]


@pytest.mark.parametrize("kind", [None, "episode"])
def test_a_turn_that_asks_falls_below_the_turns_that_tell(make_engine: MakeEngine, kind):
    # The question turn shares more of the query's words than the answer after it;
    # `asking_turns` lowers it by 3 x the spread of the fused scores, more than a
    # three-hit list can span, so both telling turns pass it. Lowered after the
    # expansion (any kind), or at hydration where a kind filter turns expansion off.
    turn = {"kind": "episode", "session_id": "s1"}
    engine = make_engine(
        [
            make_memory(1, description="Caroline: what got you into chroma boot race?", **turn),
            make_memory(2, description="Melanie: chroma boot race, my brother's idea", **turn),
            make_memory(3, description="Melanie: chroma again today", **turn),
        ],
        embedder=None,
    )

    query = "what got you into chroma boot race"
    plain = engine.recall(ask(query, kind=kind), config=RRF)
    lowered = engine.recall(ask(query, kind=kind), config=replace(RRF, asking_turns=3.0))

    assert ids(plain.items)[0] == uid(1)
    assert ids(lowered.items) == [uid(2), uid(3), uid(1)]


def test_a_question_in_a_note_is_not_lowered(make_engine: MakeEngine):
    # Only conversation turns are read as asking: a note that ends in a question
    # mark (an open question an agent wrote down) keeps its place.
    engine = make_engine(
        [
            make_memory(1, description="why does the chroma boot race happen?", kind="gotcha"),
            make_memory(2, description="chroma boot", kind="fact"),
            make_memory(3, description="chroma again", kind="fact"),
        ],
        embedder=None,
    )

    lowered = engine.recall(
        ask("why does the chroma boot race happen"), config=replace(RRF, asking_turns=3.0)
    )

    assert ids(lowered.items)[0] == uid(1)


def test_ranked_makes_each_hit_when_first_read_and_only_those_a_pack_reads(monkeypatch):
    """A 1,000-token pack holds a few of the up to 100 ranked: only those become Hits."""
    from recall import recall as pipeline
    from recall.packing import pack
    from recall.results import to_hit
    from recall.scoring import Scored
    from recall.tokens import ByteEstimate
    from tests.recall.conftest import NOW, make_memory

    made: list[str] = []

    def counted(record, **kwargs):
        made.append(record.id)
        return to_hit(record, **kwargs)

    monkeypatch.setattr(pipeline, "to_hit", counted)
    scored = [
        Scored(make_memory(n, description="x" * 400), 1.0 / n, (), "fts") for n in range(1, 101)
    ]
    ranked = pipeline.Ranked(scored, NOW)

    packed = pack(ranked, budget=1000, counter=ByteEstimate())

    assert 0 < len(packed.items) < len(made) + 1 < 100  # the items, and the one that did not fit
    assert ranked[0] is ranked[0] and len(made) == len(set(made))  # made once each
    assert ranked[0][0] == to_hit(scored[0].record, now=NOW, source="fts", score=1.0, sources=())
    assert [h.id for h, _ in ranked[98:]] == [scored[98].record.id, scored[99].record.id]
    assert packed.omitted == 100 - len(packed.items)


def test_with_no_word_matched_only_meaning_above_the_floor_is_kept():
    def gathered(fts: list[Candidate]) -> Gathered:
        near = [Candidate(uid(1), 1, 0.55), Candidate(uid(2), 2, 0.31)]
        return Gathered(lists={FTS: fts, SEMANTIC: near}, status={FTS: "on", SEMANTIC: "on"})

    nothing = gathered([])
    _meaning_floor(nothing, 0.40, Filter())
    assert [c.id for c in nothing.lists[SEMANTIC]] == [uid(1)] and nothing.warnings == []

    worded = gathered([Candidate(uid(3), 1, 2.0)])  # a word matched: meaning is left alone
    _meaning_floor(worded, 0.40, Filter())
    assert len(worded.lists[SEMANTIC]) == 2

    far = gathered([])
    _meaning_floor(far, 0.60, Filter())  # nothing close: an empty pack that says why
    assert far.lists[SEMANTIC] == [] and "no memory answers this" in far.warnings[0]


def test_a_long_memory_comes_whole_when_the_budget_has_room(make_engine: MakeEngine):
    steps = " ".join(f"Step {n}: drain queue {n}, then restart worker {n}." for n in range(90))
    runbook = make_memory(1, description="how to restart the workers", body=steps)
    engine = make_engine([runbook])

    small = engine.recall(ask("restart the workers", budget=1000)).items[0]
    large = engine.recall(ask("restart the workers", budget=8000)).items[0]

    # 500 tokens an item at the default budget; a quarter of a larger one.
    assert small.truncated and small.tokens <= 500
    assert not large.truncated and "Step 89" in (large.text or "")
    assert RecallConfig().item_cap(1000) == 500 and RecallConfig().item_cap(8000) == 2000
    assert RecallConfig(item_tokens=0).item_cap(8000) == 0  # no cap stays no cap


def test_filters_no_memory_passes_make_an_empty_pack_that_names_them(make_engine: MakeEngine):
    """A tag no memory carries (or any filter nothing in scope passes) is an empty pack
    whose warning names the filters; one that lets memories through says nothing."""
    engine = make_engine(
        [make_memory(1, description="chroma boot race", tags=("ops",)), make_memory(2)]
    )

    pack = engine.recall(ask("chroma boot race", tags=("deploy",), min_importance=0.2))

    assert pack.items == () and pack.warnings == (
        "nothing in scope passes the filters (tags, min_importance): no memory answers this",
    )
    passed = engine.recall(ask("chroma boot race", tags=("ops",)))
    assert ids(passed.items) == [uid(1)] and not passed.warnings
    unrelated = engine.recall(ask("quokka zebra", tags=("ops",)))
    assert not any("passes the filters" in w for w in unrelated.warnings)
