"""What the PostgreSQL planes add to their contracts (tests/contracts/test_*_index.py).

On a real PostgreSQL with pgvector (tests/pg.py): joining a caller's
transaction, the schema made beside an open transaction, guards on dims and
models, table names, and the common-word rule of the full-text scoring.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import psycopg
import pytest

from recall import background
from recall.errors import ConfigError, IndexUnavailable
from recall.indexes import pg_bm25, pg_text_index
from recall.indexes.pg_text_index import PgTextIndex
from recall.indexes.pg_vector_index import PgVectorIndex
from recall.types import Doc, Filter, VectorRow
from tests import pg

DIMS = 4
EVERYTHING = Filter(active_only=False)


def doc(id: str, body: str, **fields: Any) -> Doc:
    values: dict[str, Any] = {"item": "memory", "project": "a", "active": True, "kind": "fact"}
    values |= {"name": "", "title": "", "description": ""} | fields
    return Doc(id=id, body=body, **values)


def row(id: str, *values: float, model: str = "m1") -> VectorRow:
    vector = np.zeros(DIMS)
    vector[: len(values)] = values
    unit = tuple((vector / np.linalg.norm(vector)).tolist())
    return VectorRow(id=id, item="memory", project="a", active=True, kind="fact", vector=unit,
                     model=model)  # fmt: skip


@pytest.fixture
def table(request: pytest.FixtureRequest) -> str:
    return pg.table_for(request.node.nodeid)


@pytest.fixture
def caller() -> Iterator[psycopg.Connection[Any]]:
    """A caller's own connection, in a transaction (as Django's is in a request)."""
    with psycopg.connect(pg.database_url()) as conn:
        yield conn
        conn.rollback()


def test_writes_on_a_borrowed_connection_commit_and_roll_back_with_the_caller(
    table: str, caller: psycopg.Connection[Any]
) -> None:
    borrowed = PgTextIndex(dsn=pg.database_url(), borrow=lambda: caller, table=table)
    owned = PgTextIndex(dsn=pg.database_url(), table=table)
    assert borrowed.joins_caller and not owned.joins_caller

    borrowed.upsert([doc("m1", "kraken")])
    assert [c.id for c in borrowed.search("kraken", where=EVERYTHING, limit=5)] == ["m1"]
    assert owned.count() == 0  # not committed: nobody else sees it
    caller.rollback()
    assert borrowed.count() == owned.count() == 0

    borrowed.upsert([doc("m2", "kraken")])
    caller.commit()
    assert owned.ids() == {"m2"}


def test_a_new_plane_object_beside_an_open_transaction_does_not_wait_for_it(
    table: str, caller: psycopg.Connection[Any]
) -> None:
    """The schema check takes no lock: a second object for the same table (a new
    wiring, a second worker thread) must not queue behind the caller's writes."""
    PgVectorIndex(dsn=pg.database_url(), borrow=lambda: caller, dims=DIMS, table=table).upsert(
        [row("m1", 1)]
    )  # the caller now holds a lock on the table, uncommitted
    done: list[int] = []
    other = threading.Thread(
        target=lambda: done.append(
            PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table).count()
        )  # fmt: skip
    )
    other.start()
    other.join(timeout=20)

    assert done == [0]


def test_a_table_of_other_dims_is_a_config_error(table: str) -> None:
    PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table).upsert([row("m1", 1)])

    with pytest.raises(ConfigError, match="dims"):
        PgVectorIndex(dsn=pg.database_url(), dims=DIMS * 2, table=table).count()


def test_rows_of_another_model_are_refused_until_cleared(table: str) -> None:
    index = PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table)
    index.upsert([row("m1", 1, model="model-one")])

    with pytest.raises(ConfigError, match="model-two"):
        index.upsert([row("m2", 1, model="model-two")])
    with pytest.raises(ConfigError, match="mixes"):
        index.upsert([row("m2", 1, model="model-one"), row("m3", 1, model="model-two")])
    index.clear()
    index.upsert([row("m2", 1, model="model-two")])
    assert index.stored_model() == "model-two"


@pytest.mark.parametrize("name", ["Recall", "a-b", "x; drop table y", "", "9lives", "t" * 49])
def test_table_names_are_plain_identifiers(name: str) -> None:
    with pytest.raises(ValueError, match="identifier"):
        PgTextIndex(dsn=pg.database_url(), table=name)


def test_an_unreachable_server_is_index_unavailable() -> None:
    index = PgTextIndex(dsn="postgresql://nobody@/nowhere?host=/nonexistent&connect_timeout=1")

    with pytest.raises(IndexUnavailable, match="text table"):
        index.count()


def test_non_finite_and_wrong_length_vectors_are_refused(table: str) -> None:
    index = PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table)

    with pytest.raises(ValueError, match="finite"):
        index.upsert([VectorRow(id="m", item="memory", project="a", active=True, kind="fact",
                                vector=(float("nan"),) * DIMS, model="m1")])  # fmt: skip
    with pytest.raises(ValueError, match="dims"):
        index.search((1.0, 0.0), where=EVERYTHING, limit=3)


def test_a_common_word_scores_but_selects_no_rows(
    table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_text_index.DocumentFrequencies, "COMMON_MIN", 3)
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    index.upsert([doc(f"c{n}", "the usual words") for n in range(10)])
    index.upsert([doc("t", "the thread dump"), doc("u", "a thread dump")])

    found = index.search("the thread", where=EVERYTHING, limit=20)
    assert [c.id for c in found] == ["t", "u"]  # "the" (11 of 12 rows) selects none alone...
    assert found[0].score > found[1].score  # ...but still counts where "thread" selected
    assert len(index.search("the", where=EVERYTHING, limit=20)) == 11  # alone, it selects


def test_idf_weighs_rare_words_above_common_ones(table: str) -> None:
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    index.upsert([doc("dead", "dead letter queue", name="queue-dead-letter")])
    index.upsert([doc("vacuum", "autovacuum reclaims dead tuples")])
    index.upsert([doc(f"x{n}", "dead code") for n in range(5)])

    assert index.search("autovacuum dead", where=EVERYTHING, limit=1)[0].id == "vacuum"


def test_the_score_is_bm25f_over_weighted_occurrences(table: str) -> None:
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    index.upsert([doc("a", "kraken kraken"), doc("b", "", name="kraken"), doc("c", "squid")])
    body, name = pg_bm25.FIELD_WEIGHT["C"], pg_bm25.FIELD_WEIGHT["A"]
    # Weighted lengths: a two body words, b one name word, c one body word.
    average = (2 * body + name + body) / 3
    # "kraken" is in 2 of 3 rows, and in a share of the prior's rows of English
    # (recall/background.py): 1 - exp(-f x the mean length) of them.
    rows = pg_bm25.PRIOR_ROWS
    df = 2 + rows * (1 - math.exp(-background.frequency("kraken") * average))
    idf = math.log(1 + (3 + rows - df + 0.5) / (df + 0.5))
    weight = idf ** (1 + pg_bm25.QUERY_IDF_POWER)
    k1, b = pg_bm25.K1, pg_bm25.B

    def bm25(tf: float, length: float) -> float:
        return weight * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average))

    found = {c.id: c for c in index.search("kraken", where=EVERYTHING, limit=5)}
    expected = {"a": bm25(2 * body, 2 * body), "b": bm25(name, name)}
    assert sorted(found) == ["a", "b"]
    for row_id, score in expected.items():
        assert found[row_id].score == pytest.approx(score, rel=1e-5)
    best = max(expected, key=lambda k: expected[k])
    assert found[best].rank == 1


def test_rows_written_under_other_length_weights_read_as_drift(table: str) -> None:
    """An older release counted `doclen` at other weights: those rows must be rewritten."""
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    written = doc("a", "kraken")
    index.upsert([written])
    assert index.fingerprints() == [("a", written.fingerprint())]
    with psycopg.connect(pg.database_url(), autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL("UPDATE {} SET fingerprint = %s").format(psycopg.sql.Identifier(table)),
            [written.fingerprint()],  # as the release before LENGTHS stored it
        )

    assert index.fingerprints() == [("a", f"old:{written.fingerprint()}")]
    index.upsert([written])
    assert index.fingerprints() == [("a", written.fingerprint())]


def test_a_short_row_lacking_a_word_does_not_outrank_one_holding_every_word(table: str) -> None:
    """The case IDF times ts_rank (length divided by 1 + log) got wrong: the note
    of a two-word title outranked the memory that held both query words."""
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    index.upsert([
        doc("memory", "Warm the albatross cache first.", name="alpha-albatross",
            description="The albatross service needs a warm cache before traffic"),
        doc("note", "", title="albatross notes", description="Notes on albatross"),
    ])  # fmt: skip
    others = ("gazetteer", "bergamot", "cormorant", "vermilion")  # "cache" is common, as there
    index.upsert([
        doc(word, f"Warm the {word} cache first.", name=f"x-{word}",
            description=f"The {word} service needs a warm cache before traffic")
        for word in others
    ])  # fmt: skip

    found = [c.id for c in index.search("albatross cache", where=EVERYTHING, limit=10)]
    assert found[:2] == ["memory", "note"] and sorted(found[2:]) == sorted(others)


def test_a_filtered_hnsw_scan_goes_on_until_the_page_is_full(
    table: str, caller: psycopg.Connection[Any]
) -> None:
    """The nearest 600 rows are archived; with pgvector's iterative scan the HNSW scan
    keeps going past ef_search (10) until 5 active rows are found."""
    rng = np.random.default_rng(7)
    near = [(f"a{n:04d}", False, (1.0, *rng.normal(0, 0.05, DIMS - 1))) for n in range(600)]
    far = [(f"b{n:02d}", True, (0.2, *rng.normal(0, 1, DIMS - 1))) for n in range(20)]
    rows = [
        VectorRow(id=i, item="memory", project="a", active=active, kind="fact",
                  vector=tuple(float(x) for x in v / np.linalg.norm(v)), model="m1")
        for i, active, v in ((i, a, np.array(v)) for i, a, v in near + far)
    ]  # fmt: skip
    PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table).upsert(rows)
    caller.execute("SET enable_seqscan = off")  # else the planner reads 620 rows exactly
    index = PgVectorIndex(
        dsn=pg.database_url(), borrow=lambda: caller, dims=DIMS, table=table, ef_search=10
    )
    plan = caller.execute(
        f"EXPLAIN SELECT id FROM {table} WHERE active ORDER BY embedding <=> '[1,0,0,0]' LIMIT 5"
    ).fetchall()
    assert any(f"{table}_hnsw" in line for (line,) in plan)  # the HNSW index is the scan

    found = index.search((1.0, 0.0, 0.0, 0.0), where=Filter(), limit=5)

    assert len(found) == 5 and all(c.id.startswith("b") for c in found)
    scores = [c.score for c in found]
    assert scores == sorted(scores, reverse=True)


def test_past_exact_below_rows_a_write_keeps_the_counts_until_they_expire(
    table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pg_text_index.DocumentFrequencies, "EXACT_BELOW", 3)
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    index.upsert([doc("k1", "kraken"), doc("k2", "kraken"), doc("s1", "squid")])
    before = index.search("kraken", where=EVERYTHING, limit=5)[0].score

    index.upsert([doc(f"s{n}", "squid") for n in range(2, 8)])  # N 3 -> 9: kraken's idf rises
    kept = index.search("kraken", where=EVERYTHING, limit=5)[0].score
    fresh = (
        PgTextIndex(dsn=pg.database_url(), table=table)
        .search("kraken", where=EVERYTHING, limit=5)[0]
        .score
    )

    assert kept == pytest.approx(before)  # the 3-row counts, a minute's worth
    assert fresh > before  # a process with no cache counts 9 rows

    small = PgTextIndex(dsn=pg.database_url(), table=pg.table_for(table + "-small"))
    small.upsert([doc("k1", "kraken"), doc("s1", "squid")])
    first = small.search("kraken", where=EVERYTHING, limit=5)[0].score
    small.upsert([doc("s2", "squid")])  # 2 rows, under EXACT_BELOW: recounted at once
    assert small.search("kraken", where=EVERYTHING, limit=5)[0].score > first


def test_a_table_made_before_the_filter_columns_gains_them_and_its_rows_drift(
    table: str,
) -> None:
    """The upgrade path: an older table has no tags ... created columns; the first use
    adds them, its old rows show as drift (their fingerprints lack the new fields),
    and rewriting them (what reindex does) makes them filterable."""
    old = doc("m1", "lantern", tags=("red",))
    with psycopg.connect(pg.database_url(), autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL(
                "CREATE TABLE {t} (id text PRIMARY KEY, item text NOT NULL, project text,"
                " active boolean NOT NULL, kind text NOT NULL, name text NOT NULL,"
                " title text NOT NULL, description text NOT NULL, body text NOT NULL,"
                " fingerprint text NOT NULL, updated timestamptz, doclen real NOT NULL,"
                " document tsvector NOT NULL, words tsvector NOT NULL)"
            ).format(t=psycopg.sql.Identifier(table))
        )
        conn.execute(
            psycopg.sql.SQL(
                "INSERT INTO {t} VALUES ('m1', 'memory', 'a', true, 'fact', '', '', '',"
                " 'lantern', 'old', NULL, 1, to_tsvector('simple', 'lantern'),"
                " to_tsvector('simple', 'lantern'))"
            ).format(t=psycopg.sql.Identifier(table))
        )
    index = PgTextIndex(dsn=pg.database_url(), table=table)
    try:
        assert [c.id for c in index.search("lantern", where=EVERYTHING, limit=5)] == ["m1"]
        assert index.search("lantern", where=Filter(tags=("red",)), limit=5) == []
        assert index.fingerprints() != [("m1", old.fingerprint())]  # drift: reindex it

        index.upsert([old])

        assert [c.id for c in index.search("lantern", where=Filter(tags=("red",)), limit=5)] == [
            "m1"
        ]
        assert index.fingerprints() == [("m1", old.fingerprint())]
    finally:
        index.drop()


def test_a_vector_table_from_before_text_hashes_gains_the_column_on_first_use(table: str) -> None:
    """An older release's table had no `text_hash`: the next process adds it, its old
    rows have none to offer a reindex, and rows written from then on do."""
    PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table).upsert([row("old", 1)])
    with psycopg.connect(pg.database_url(), autocommit=True) as conn:
        conn.execute(  # as the release before text hashes made it (the index goes with it)
            psycopg.sql.SQL("ALTER TABLE {} DROP COLUMN text_hash").format(
                psycopg.sql.Identifier(table)
            )
        )
    index = PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=table)  # a new process

    index.upsert([replace(row("new", 0, 1), text_hash="h-new")])

    assert index.ids() == {"old", "new"}
    assert list(index.hashed_vectors()) == ["h-new"]
