"""Routing (Dakera CE-12) and fabriq's per-request knobs `k`, `strict`, `entities`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from recall.config import RecallConfig
from recall.errors import IndexUnavailable
from recall.requests import RecallRequest
from recall.routing import (
    AUTO,
    BM25,
    HYBRID,
    IDENTIFIER,
    KEYWORD,
    NATURAL,
    TEMPORAL,
    VECTOR,
    classify,
    default_shares,
    route,
)
from recall.testing import FakeEmbedder
from tests.recall.conftest import NOW, MakeEngine, SpySearches, ids, make_memory, make_note

WEIGHTS = {"fts": 0.6, "semantic": 0.4, "graph": 0.3}
SHARES = {IDENTIFIER: 0.0, TEMPORAL: 0.1, KEYWORD: 0.25, NATURAL: 0.75}


def ask(query: str, **kw: object) -> RecallRequest:
    return RecallRequest(query=query, project="alpha", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("chroma-boot-race", IDENTIFIER),
        ("01HZX000000000000000000001", IDENTIFIER),
        ("src/app/main.py", IDENTIFIER),
        ("parseArgs", IDENTIFIER),
        ("MAX_RETRIES", IDENTIFIER),
        ("When did the deploy break?", TEMPORAL),
        ("what changed in 2024", TEMPORAL),
        ("the outage last Tuesday", TEMPORAL),
        ("deploys two weeks ago", TEMPORAL),
        ("chroma", KEYWORD),
        ("chroma boot race", KEYWORD),
        ("overheating pumps", KEYWORD),
        ("why does the chroma container start before postgres", NATURAL),
        ("chroma boot race?", NATURAL),
        ("What is the retry policy of the billing api", NATURAL),
        ("the boot order of chroma and redis services", NATURAL),
    ],
)
def test_classify_names_the_query_class(query: str, expected: str) -> None:
    assert classify(query) == expected


def test_each_mode_sets_the_text_and_meaning_weights() -> None:
    question = "why does the chroma container start before postgres"

    hybrid = route(HYBRID, question, WEIGHTS, SHARES)
    bm25 = route(BM25, question, WEIGHTS, SHARES)
    vector = route(VECTOR, question, WEIGHTS, SHARES)
    auto = route(AUTO, question, WEIGHTS, SHARES)
    ident = route(AUTO, "chroma-boot-race", WEIGHTS, SHARES)

    assert hybrid.weights == WEIGHTS and hybrid.decision is None
    assert bm25.weights == {"fts": 1.0, "semantic": 0.0, "graph": 0.3}
    assert vector.weights == {"fts": 0.0, "semantic": 1.0, "graph": 0.3}
    assert auto.decision == NATURAL
    assert auto.weights == pytest.approx({"fts": 0.25, "semantic": 0.75, "graph": 0.3})
    assert ident.decision == IDENTIFIER and ident.weights["semantic"] == 0.0
    assert auto.as_debug() == {"mode": AUTO, "class": NATURAL, "weights": auto.weights}


def test_auto_keeps_weights_the_caller_chose_or_a_channel_that_is_off() -> None:
    question = "why does the chroma container start before postgres"

    chosen = route(AUTO, question, WEIGHTS, SHARES, given={"fts": 0.6})
    off = route(AUTO, question, {**WEIGHTS, "semantic": 0.0}, SHARES)
    graph_only = route(AUTO, question, WEIGHTS, SHARES, given={"graph": 1.0})

    assert chosen.weights == WEIGHTS and chosen.decision == NATURAL
    assert off.weights == {**WEIGHTS, "semantic": 0.0}
    assert graph_only.weights["semantic"] == pytest.approx(0.75)


def test_routing_knobs_are_checked_when_the_config_is_built() -> None:
    with pytest.raises(ValueError, match="routing must be one of"):
        RecallConfig(routing="smart")
    with pytest.raises(ValueError, match="no query class"):
        RecallConfig(routing_weights={**default_shares(), "slang": 0.5})
    with pytest.raises(ValueError, match="within 0..1"):
        RecallConfig(routing_weights={**default_shares(), NATURAL: 1.5})
    with pytest.raises(ValueError, match="depth must be within"):
        RecallConfig(depth=300)


@pytest.mark.parametrize(("routing", "embeds"), [(BM25, 0), (HYBRID, 1), (VECTOR, 1)])
def test_bm25_routing_never_embeds(make_engine: MakeEngine, routing: str, embeds: int) -> None:
    embedder = FakeEmbedder()
    engine = make_engine([make_memory(1, description="chroma boot race")], embedder=embedder)
    vectors = engine.planes.vectors
    assert isinstance(vectors, SpySearches)

    pack = engine.recall(ask("why does chroma race at boot", routing=routing, debug=True))

    assert embedder.calls == embeds and vectors.searches == embeds
    assert pack.debug is not None and pack.debug["embedded"] is (embeds == 1)
    assert pack.debug["routing"]["mode"] == routing  # type: ignore[index]


def test_auto_routing_decision_and_weights_are_in_debug(make_engine: MakeEngine) -> None:
    embedder = FakeEmbedder()
    engine = make_engine([make_memory(1, description="chroma boot race")], embedder=embedder)
    config = RecallConfig(routing=AUTO, routing_weights=SHARES)

    by_name = engine.recall(ask("chroma-boot-race", debug=True), config=config)
    question = engine.recall(ask("why does chroma race at boot", debug=True), config=config)

    assert by_name.debug is not None and question.debug is not None
    assert by_name.debug["routing"] == {
        "mode": AUTO,
        "class": IDENTIFIER,
        "weights": {**RecallConfig().channel_weights, "fts": 1.0, "semantic": 0.0},
    }  # the expand channels (graph, session) keep their configured weights
    assert embedder.calls == 1  # only the question was embedded
    assert question.debug["routing"]["class"] == NATURAL  # type: ignore[index]
    assert question.debug["weights"]["semantic"] == pytest.approx(0.75)  # type: ignore[index]


def test_the_request_routing_overrides_the_config(make_engine: MakeEngine) -> None:
    engine = make_engine([make_memory(1, description="chroma boot race")])

    pack = engine.recall(ask("chroma", routing=HYBRID, debug=True), config=RecallConfig())

    assert pack.debug is not None
    weights = dict(RecallConfig().channel_weights)
    assert pack.debug["routing"] == {"mode": HYBRID, "class": None, "weights": weights}


def test_k_is_the_candidates_per_channel(make_engine: MakeEngine) -> None:
    engine = make_engine([make_memory(i, description="chroma boot race") for i in range(1, 9)])
    only_text = {"channel_weights": {"semantic": 0.0}, "debug": True}

    deep = engine.recall(ask("chroma", **only_text))
    shallow = engine.recall(ask("chroma", k=3, **only_text))

    assert deep.total_found == 8 and shallow.total_found == 3
    assert deep.debug is not None and shallow.debug is not None
    assert (deep.debug["k"], shallow.debug["k"]) == (RecallConfig().depth, 3)


def test_strict_turns_a_channel_failure_into_an_error(make_engine: MakeEngine) -> None:
    engine = make_engine([make_memory(1, description="chroma boot race")])
    vectors = engine.planes.vectors
    assert isinstance(vectors, SpySearches)
    vectors.fail = True

    lenient = engine.recall(ask("chroma boot", routing=HYBRID))
    with pytest.raises(IndexUnavailable, match="strict recall: semantic channel skipped"):
        engine.recall(ask("chroma boot", routing=HYBRID, strict=True))

    assert ids(lenient.items) == [make_memory(1).id]
    assert any("semantic channel skipped" in w for w in lenient.warnings)


def test_strict_with_every_channel_working_is_an_ordinary_recall(make_engine: MakeEngine) -> None:
    engine = make_engine([make_memory(1, description="chroma boot race")])

    pack = engine.recall(ask("chroma boot", strict=True))

    assert ids(pack.items) == [make_memory(1).id] and pack.warnings == ()


@pytest.mark.parametrize(
    ("entities", "scope", "items"),
    [
        (("memories",), "all", ["memory"]),
        (("notes",), "all", ["note"]),
        (("memories", "notes"), "all", ["memory", "note"]),
        (("notes",), "notes", ["note"]),
        (None, "notes", ["note"]),  # scope stays an alias
    ],
)
def test_entities_picks_memories_notes_or_both(
    make_engine: MakeEngine, entities: tuple[str, ...] | None, scope: str, items: list[str]
) -> None:
    engine = make_engine(
        [make_memory(1, description="chroma boot race"), make_note(2, "Chroma boot race")]
    )

    pack = engine.recall(ask("chroma boot race", entities=entities, scope=scope))

    assert sorted(h.kind if h.kind == "note" else "memory" for h in pack.items) == items


def test_an_identifier_cut_from_a_long_memory_shows_the_sentence_naming_it(
    make_engine: MakeEngine,
) -> None:
    """An identifier is not embedded, so no sentence was nearest in meaning: the pack
    showed the runbook's head. The sentence holding the query's words is shown."""
    steps = [f"Step {n} checks the replica lag and logs the figure." for n in range(60)]
    steps[40] = "If the ledger rejects writes with error code ZX-4471-QP, rotate the key."
    engine = make_engine([make_memory(1, description="", body=" ".join(steps))])

    pack = engine.recall(ask("zx-4471-qp", budget=200, debug=True))

    [item] = pack.items
    assert pack.debug is not None and pack.debug["embedded"] is False
    assert item.truncated and item.text is not None and "ZX-4471-QP" in item.text


def test_an_identifier_nothing_holds_gets_an_empty_pack_that_says_so(
    make_engine: MakeEngine,
) -> None:
    engine = make_engine([make_memory(1, description="chroma boot race")])

    pack = engine.recall(ask("ZX4471QP"))

    assert pack.items == ()
    assert any("nothing in scope holds the query's words" in w for w in pack.warnings)


def test_words_held_only_outside_the_filters_get_a_warning_that_names_them(
    make_engine: MakeEngine,
) -> None:
    # A `since` left out the one memory holding the words, and the warning said that
    # nothing in scope held them (an agent then wrote the memory again).
    engine = make_engine([
        make_memory(1, description="chroma boot race", created=NOW - timedelta(days=3)),
        make_memory(2, description="the lunch order", created=NOW),
    ])  # fmt: skip

    pack = engine.recall(ask("chroma boot", since=NOW - timedelta(days=1)))

    assert pack.items == ()
    assert any(
        w.startswith("nothing in scope that passes the filters (since) holds the query's words")
        for w in pack.warnings
    ), pack.warnings


def test_a_browse_no_memory_passes_says_so(make_engine: MakeEngine) -> None:
    engine = make_engine([make_memory(1, description="chroma boot race", tags=("a",))])

    listed = engine.recall(ask("", kinds=("fact",), tags=("a",)))
    empty = engine.recall(ask("", kinds=("fact",), tags=("c",)))

    assert len(listed.items) == 1 and listed.warnings == ()
    assert empty.items == ()
    assert empty.warnings == ("nothing in scope passes the filters (kinds, tags): nothing to list",)
