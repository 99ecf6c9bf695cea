"""recall/timetravel.py: the valid-time rule, the cold lexical ranking, the cold pack."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from recall import background, bm25, timetravel
from recall.engine import Engine
from recall.errors import QueryError
from recall.planes import Planes
from recall.query import words
from recall.requests import RecallRequest, SearchRequest
from recall.testing import InMemoryStore, InMemoryTextIndex
from recall.types import Filter, Record

T = datetime(2024, 3, 1, tzinfo=UTC)
DAY = timedelta(days=1)


def memory(ident: str, project: str | None = "alpha", text: str = "", **fields: object) -> Record:
    return Record(ident, "memory", project, "fact", ident, ident, text, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("valid_from", "invalid_at", "instant", "valid"),
    [
        (T, None, T, True),  # the interval includes its start
        (T, None, T - DAY, False),
        (T, T + DAY, T + DAY, False),  # and excludes its end
        (T, T + DAY, T + DAY / 2, True),
        (None, None, T, True),  # no start: valid since always
        (T, T + DAY, None, False),  # no instant: the normal rule (closed = not valid)
        (T, None, None, True),
    ],
)
def test_valid_at(
    valid_from: datetime | None, invalid_at: datetime | None, instant: datetime | None, valid: bool
) -> None:
    record = memory("m", valid_from=valid_from, invalid_at=invalid_at)

    assert timetravel.valid_at(record, instant) is valid


def test_lexical_scores_are_bm25f_of_one_stream() -> None:
    records = [memory("a", text="queue queue choice"), memory("b", text="the cache"),
               memory("c", text="queue")]  # fmt: skip

    found = timetravel.lexical(records, "queues", limit=10)

    # "queues" stems to "queue": df 2 of N 3; one-letter names are no words. Each
    # count also holds `prior_rows` rows of English of the mean length, a share
    # 1 - exp(-f x length) of them holding "queues" (recall/background.py).
    avg = (3 + 2 + 1) / 3
    rows = timetravel.PARAMS.prior_rows
    share = 1 - math.exp(-background.frequency("queues") * avg)
    weight = bm25.idf(2 + rows * share, 3 + rows) ** 2
    k1, b = 1.2, 0.4

    def expected(tf: int, length: int) -> float:
        v = tf / (1 - b + b * length / avg)
        return weight * v * (k1 + 1) / (v + k1)

    assert [(c.id, c.rank) for c in found] == [("a", 1), ("c", 2)]
    assert found[0].score == pytest.approx(expected(2, 3))
    assert found[1].score == pytest.approx(expected(1, 1))
    df, n = 2 + rows * share, 3 + rows
    assert math.isclose(weight, math.log(1 + (n - df + 0.5) / (df + 0.5)) ** 2)


def test_lexical_counts_whole_terms_and_reads_a_changed_text_afresh() -> None:
    cachet = [memory("a", text="cachet cachet"), memory("b", text="cache")]

    assert [c.id for c in timetravel.lexical(cachet, "cache", limit=10)] == ["b"]

    # The same memory with another text (a later revision) is tokenized again:
    # the kept terms belong to a text, not to an id.
    revised = [memory("a", text="the cache here"), memory("b", text="cache")]
    found = timetravel.lexical(revised, "cache", limit=10)
    assert [c.id for c in found] == ["b", "a"]
    assert found[0].score > found[1].score  # the shorter text first


def test_naive_instants_are_query_errors() -> None:
    with pytest.raises(QueryError, match="as_of must carry a time zone"):
        timetravel.validate(RecallRequest("q", "alpha", as_of=datetime(2024, 1, 1)))
    with pytest.raises(QueryError, match="recorded_as_of must carry a time zone"):
        timetravel.validate(SearchRequest("q", recorded_as_of=datetime(2024, 1, 1)))


def engine_over(store: InMemoryStore) -> Engine:
    return Engine(Planes(text=InMemoryTextIndex(), store=store), background_rebuild=False)


def test_a_cold_recall_packs_the_memory_known_then_in_scope_only() -> None:
    store = InMemoryStore()
    store.revise(memory("old", text="deploy on fridays"), T)
    store.revise(memory("old", text="never deploy on fridays"), T + DAY)
    store.revise(memory("other", "beta", text="deploy on fridays"), T)
    store.revise(memory("gone", text="deploy fridays too"), T)
    store.remove("gone", T + DAY)

    pack = engine_over(store).recall(
        RecallRequest("deploy fridays", "alpha", recorded_as_of=T + DAY / 2, debug=True)
    )
    later = engine_over(store).recall(
        RecallRequest("deploy fridays", "alpha", recorded_as_of=T + 2 * DAY)
    )

    assert [h.id for h in pack.items] == ["gone", "old"]
    assert "never" not in (pack.items[1].text or "")
    assert pack.debug is not None and pack.debug["tier"] == "cold"
    assert pack.warnings == (timetravel.COLD_ONLY,)
    assert [h.id for h in later.items] == ["old"] and "never" in (later.items[0].text or "")


def test_as_known_applies_the_filter_after_the_rule() -> None:
    rows = [memory("a", valid_from=T, invalid_at=T + DAY), memory("b", "beta", valid_from=T)]

    live = timetravel.as_known(rows, where=Filter(projects=("alpha",)), instant=T)
    closed = timetravel.as_known(rows, where=Filter(projects=("alpha",)), instant=T + DAY)

    assert [(r.id, r.active) for r in live] == [("a", True)]
    assert closed == []


def reference_lexical(records: list[Record], query: str) -> list[tuple[str, float]]:
    """BM25F of one stream over each text's `terms`, as the ranking defines it."""
    wanted = dict.fromkeys(timetravel.terms(query))
    bags = []
    for r in records:
        tokens = timetravel.terms(" ".join((r.name, r.description, r.body, " ".join(r.tags))))
        bags.append((r.id, len(tokens), {t: n for t in wanted if (n := tokens.count(t))}))
    dfs = {t: sum(1 for _, _, c in bags if t in c) for t in wanted}
    avg = sum(n for _, n, _ in bags) / len(bags)
    known = background.term_frequencies(words(query), timetravel.terms)
    weights = bm25.term_weights(dfs, len(bags), timetravel.PARAMS, background.Prior(known, avg))
    scored = [(bm25.score([c], [n], weights, avglen=avg, params=timetravel.PARAMS), i)
              for i, n, c in bags if c]  # fmt: skip
    return [(i, v) for v, i in sorted(scored, key=lambda s: (-s[0], s[1]))]


WORDS = st.sampled_from(["queue", "queues", "queued", "a", "I", "7", "x1", "發", "票", "the",
                         "Cache", "cachet", "caching", "généralement", "état", "_"])  # fmt: skip


@given(
    texts=st.lists(st.lists(WORDS, max_size=12).map(" ".join), min_size=1, max_size=8),
    query=st.lists(WORDS, min_size=1, max_size=4).map(" ".join),
)
def test_the_lexical_ranking_counts_what_each_texts_terms_would(
    texts: list[str], query: str
) -> None:
    records = [
        memory(f"m{n}", text=text, tags=("queue",) * (n % 2)) for n, text in enumerate(texts)
    ]

    found = timetravel.lexical(records, query, limit=100)

    expected = reference_lexical(records, " ".join(words(query)))
    assert [c.id for c in found] == [i for i, _ in expected]
    assert [c.score for c in found] == pytest.approx([v for _, v in expected])
