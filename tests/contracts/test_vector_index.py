"""The VectorIndex contract, run against every adapter.

LanceIndex and the in-memory reference must agree: cosine scores, best
first, ties by id, 1-based ranks, scope and validity applied before the
limit. Adapter-specific behaviour (durability, ANN index, model guard) is
tested below the shared suite.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from recall.errors import ConfigError, IndexUnavailable
from recall.indexes import layout
from recall.indexes.hot_vectors import HotVectorIndex
from recall.indexes.lance_index import LanceIndex, sql_string, where_sql
from recall.indexes.pg_vector_index import PgVectorIndex
from recall.ports import KeepsTextHashes, VectorIndex
from recall.testing import InMemoryVectorIndex
from recall.types import Filter, VectorRow
from tests import pg
from tests.contracts import filter_cases

ROOT = Path(__file__).resolve().parents[2]
DIMS = 8
Factory = Callable[[], VectorIndex]


def unit(*values: float) -> tuple[float, ...]:
    """A DIMS-long unit vector from its leading components."""
    v = np.zeros(DIMS, dtype=np.float64)
    v[: len(values)] = values
    return tuple((v / np.linalg.norm(v)).tolist())


def row(id: str, vector: tuple[float, ...], **overrides: object) -> VectorRow:
    """A VectorRow with defaults: active project-a memory of kind fact."""
    fields: dict[str, object] = {
        "id": id,
        "item": "memory",
        "project": "a",
        "active": True,
        "kind": "fact",
        "vector": vector,
        "model": "test-model",
    }
    fields.update(overrides)
    return VectorRow(**fields)  # type: ignore[arg-type]


EVERYTHING = Filter(active_only=False)
X = unit(1)


@pytest.fixture(params=["lance", "hot", "hot-flat", "memory", "postgres"])
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Factory:
    """Builds the adapter; calling it again reopens the same store."""
    if request.param == "lance":
        return lambda: LanceIndex(tmp_path / "vectors", dims=DIMS)
    if request.param.startswith("hot"):  # "hot": HNSW on every partition, however small
        plane, exact_below = tmp_path / "vectors", 0 if request.param == "hot" else 8192
        return lambda: HotVectorIndex(
            LanceIndex(plane, dims=DIMS), exact_below=exact_below, poll_seconds=0, warm=True
        )
    if request.param == "postgres":
        url, table = pg.database_url(), pg.table_for(tmp_path)
        return lambda: PgVectorIndex(dsn=url, dims=DIMS, table=table)
    only = InMemoryVectorIndex()
    return lambda: only


@pytest.fixture
def index(factory: Factory) -> VectorIndex:
    return factory()


def ids(found: list) -> list[str]:  # type: ignore[type-arg]
    return [c.id for c in found]


def test_satisfies_the_port(index: VectorIndex) -> None:
    assert isinstance(index, VectorIndex)


def test_results_are_best_first_with_cosine_scores_and_ranks(index: VectorIndex) -> None:
    index.upsert([row("far", unit(0, 1)), row("near", unit(1, 0.2)), row("same", X)])

    found = index.search(X, where=EVERYTHING, limit=10)

    assert ids(found) == ["same", "near", "far"]
    assert [c.rank for c in found] == [1, 2, 3]
    assert found[0].score == pytest.approx(1.0, abs=1e-5)
    assert found[1].score == pytest.approx(1 / np.sqrt(1.04), abs=1e-5)
    assert found[2].score == pytest.approx(0.0, abs=1e-5)


def test_opposite_vectors_score_minus_one(index: VectorIndex) -> None:
    index.upsert([row("opposite", unit(-1))])

    (found,) = index.search(X, where=EVERYTHING, limit=1)

    assert found.score == pytest.approx(-1.0, abs=1e-5)


def test_ties_break_by_id_ascending(index: VectorIndex) -> None:
    index.upsert([row(i, X) for i in ["c", "a", "d", "b"]])

    assert ids(index.search(X, where=EVERYTHING, limit=2)) == ["a", "b"]


def test_ties_beyond_the_first_window_still_break_by_id(index: VectorIndex) -> None:
    names = [f"m{n:03d}" for n in range(60)]
    index.upsert([row(i, X) for i in reversed(names)])

    found = index.search(X, where=EVERYTHING, limit=3)

    assert ids(found) == names[:3]
    assert [c.rank for c in found] == [1, 2, 3]


def test_filter_applies_before_the_limit(index: VectorIndex) -> None:
    close = unit(1, 0.01)
    decoys = [row(f"out{n:02d}", close, project="other") for n in range(25)]
    decoys += [row(f"old{n:02d}", close, active=False) for n in range(25)]
    index.upsert([*decoys, row("wanted", unit(1, 1))])

    found = index.search(X, where=Filter(projects=("a",)), limit=5)

    assert ids(found) == ["wanted"]


def test_limit_caps_the_results(index: VectorIndex) -> None:
    index.upsert([row(f"m{n}", unit(1, n / 10)) for n in range(10)])

    found = index.search(X, where=EVERYTHING, limit=4)

    assert ids(found) == ["m0", "m1", "m2", "m3"]


@pytest.mark.parametrize("limit", [0, -1])
def test_a_non_positive_limit_returns_nothing(index: VectorIndex, limit: int) -> None:
    index.upsert([row("a1", X)])

    assert index.search(X, where=EVERYTHING, limit=limit) == []


def test_an_empty_index_returns_nothing(index: VectorIndex) -> None:
    assert index.search(X, where=EVERYTHING, limit=5) == []
    assert index.count() == 0
    assert index.ids() == set()


def test_upsert_replaces_a_row_by_id(index: VectorIndex) -> None:
    index.upsert([row("m", unit(0, 1)), row("n", unit(1, 1))])
    index.upsert([row("m", X)])

    found = index.search(X, where=EVERYTHING, limit=5)

    assert ids(found) == ["m", "n"]
    assert found[0].score == pytest.approx(1.0, abs=1e-5)
    assert index.count() == 2


def test_upsert_replaces_the_metadata_too(index: VectorIndex) -> None:
    index.upsert([row("m", X)])
    index.upsert([row("m", X, active=False)])

    assert index.search(X, where=Filter(), limit=5) == []
    assert ids(index.search(X, where=EVERYTHING, limit=5)) == ["m"]


def test_delete_removes_rows_and_ignores_unknown_ids(index: VectorIndex) -> None:
    index.upsert([row("m", X), row("n", X), row("o", X)])

    index.delete(["n", "never-there"])

    assert index.ids() == {"m", "o"}
    assert index.count() == 2
    assert ids(index.search(X, where=EVERYTHING, limit=5)) == ["m", "o"]


@pytest.mark.parametrize("adapter", ["lance", "postgres"])
def test_the_durable_planes_hand_back_their_vectors_by_text_hash(
    adapter: str, tmp_path: Path
) -> None:
    """What a reindex copies instead of embedding again: one vector per text hash,
    the latest written for an id, rows without a hash left out."""
    plane: VectorIndex = (
        LanceIndex(tmp_path / "vectors", dims=DIMS)
        if adapter == "lance"
        else PgVectorIndex(dsn=pg.database_url(), dims=DIMS, table=pg.table_for(tmp_path))
    )
    assert isinstance(plane, KeepsTextHashes)
    y = unit(0, 1)
    plane.upsert([row("x", X, text_hash="hx"), row("y", unit(1, 1), text_hash="old")])
    plane.upsert([row("y", y, text_hash="hy"), row("z", unit(0, 0, 1))])  # z: no hash

    found = plane.hashed_vectors()

    assert sorted(found) == ["hx", "hy"]
    np.testing.assert_allclose(found["hx"], X, atol=1e-6)
    np.testing.assert_allclose(found["hy"], y, atol=1e-6)
    assert all(v.dtype == np.float32 for v in found.values())


def test_vectors_returns_the_stored_vectors_of_known_ids(index: VectorIndex) -> None:
    y = unit(0, 1)
    index.upsert([row("x", X), row("y", y, project="b", active=False), row("z", unit(1, 1))])

    found = index.vectors(["y", "x", "unknown"])

    assert sorted(found) == ["x", "y"]  # whatever the scope: a read by id
    np.testing.assert_allclose(found["x"], X, atol=1e-3)  # the hot copy may hold f16
    np.testing.assert_allclose(found["y"], y, atol=1e-3)
    assert index.vectors([]) == {}


def test_delete_nothing_is_fine(index: VectorIndex) -> None:
    index.upsert([row("m", X)])
    index.delete([])

    assert index.count() == 1


def test_clear_empties_the_index(index: VectorIndex) -> None:
    index.upsert([row("m", X), row("n", X)])

    index.clear()

    assert index.count() == 0
    assert index.search(X, where=EVERYTHING, limit=5) == []
    index.upsert([row("p", X)])
    assert index.ids() == {"p"}


def test_stored_model_names_the_rows_embedding_model(index: VectorIndex) -> None:
    assert index.stored_model() is None

    index.upsert([row("m", X), row("n", X)])
    assert index.stored_model() == "test-model"

    index.clear()
    assert index.stored_model() is None


SCOPED = [
    row("in-a", X, project="a"),
    row("in-b", X, project="b"),
    row("global", X, project=None),
]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (Filter(projects=("a",), include_global=True), ["global", "in-a"]),
        (Filter(projects=("a",), include_global=False), ["in-a"]),
        (Filter(projects=("a", "b"), include_global=False), ["in-a", "in-b"]),
        (Filter(projects=None, include_global=True), ["global", "in-a", "in-b"]),
        (Filter(projects=None, include_global=False), ["in-a", "in-b"]),
        (Filter(projects=(), include_global=True), ["global"]),
        (Filter(projects=(), include_global=False), []),
    ],
)
def test_scope_and_include_global(index: VectorIndex, where: Filter, expected: list[str]) -> None:
    index.upsert(SCOPED)

    assert ids(index.search(X, where=where, limit=10)) == expected


KINDED = [
    row("fact", X, kind="fact"),
    row("gotcha", X, kind="gotcha"),
    row("note", X, item="note", kind="note"),
]


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (Filter(kinds=("gotcha",)), ["gotcha"]),
        (Filter(kinds=("gotcha", "fact")), ["fact", "gotcha"]),
        (Filter(items=("note",)), ["note"]),
        (Filter(items=("memory",)), ["fact", "gotcha"]),
        (Filter(items=("memory",), kinds=("fact",)), ["fact"]),
        (Filter(kinds=()), []),
    ],
)
def test_items_and_kinds_filters(index: VectorIndex, where: Filter, expected: list[str]) -> None:
    index.upsert(KINDED)

    assert ids(index.search(X, where=where, limit=10)) == expected


@pytest.mark.parametrize(
    "project", ["o'brien", "x') OR ('1'='1", 'quo"te', "back\\slash", "per%cent_", "ünï"]
)
def test_filter_values_are_data_not_sql(index: VectorIndex, project: str) -> None:
    index.upsert([row("hit", X, project=project), row("miss", X, project="other")])

    found = index.search(X, where=Filter(projects=(project,), include_global=False), limit=10)

    assert ids(found) == ["hit"]


def test_every_filter_agrees_with_the_reference_predicate(index: VectorIndex) -> None:
    rng = np.random.default_rng(3)
    rows = [
        row(
            f"r{n:02d}",
            unit(*rng.standard_normal(DIMS)),
            project=[None, "a", "b"][n % 3],
            active=n % 4 != 0,
            item=["memory", "note"][n % 5 == 0],
            kind=["fact", "gotcha"][n % 2],
        )
        for n in range(40)
    ]
    index.upsert(rows)
    filters = [
        Filter(projects=p, include_global=g, active_only=a, items=i, kinds=k)
        for p, g, a, i, k in itertools.product(
            [None, ("a",), ("a", "b")],
            [True, False],
            [True, False],
            [None, ("note",)],
            [None, ("gotcha",)],
        )
    ]
    for where in filters:
        expected = {
            r.id
            for r in rows
            if where.admits(project=r.project, active=r.active, item=r.item, kind=r.kind)
        }
        assert set(ids(index.search(X, where=where, limit=100))) == expected, where


def test_search_with_a_vector_of_the_wrong_length_raises(index: VectorIndex) -> None:
    index.upsert([row("m", X)])

    with pytest.raises(ValueError):
        index.search((1.0, 0.0, 0.0), where=EVERYTHING, limit=5)


def test_search_accepts_numpy_arrays(index: VectorIndex) -> None:
    index.upsert([row("m", X)])

    assert ids(index.search(np.asarray(X, dtype=np.float32), where=EVERYTHING, limit=5)) == ["m"]


def test_upsert_with_a_vector_of_the_wrong_length_raises(index: VectorIndex) -> None:
    if isinstance(index, InMemoryVectorIndex):
        pytest.skip("the in-memory reference has no fixed dimension to check")

    with pytest.raises(ValueError, match="dims"):
        index.upsert([row("short", (1.0, 0.0))])


def test_reopening_keeps_the_rows(factory: Factory) -> None:
    first = factory()
    if isinstance(first, InMemoryVectorIndex):
        pytest.skip("the in-memory reference has no storage to reopen")
    first.upsert([row("m", X), row("n", unit(0, 1), project=None)])

    again = factory()

    assert again.ids() == {"m", "n"}
    assert ids(again.search(X, where=EVERYTHING, limit=5)) == ["m", "n"]


# -- LanceIndex only ------------------------------------------------------------


def test_importing_the_module_does_not_import_lancedb() -> None:
    code = (
        "import sys, recall.indexes.lance_index as m; m.LanceIndex('unused');"
        "print('lancedb' in sys.modules, 'pyarrow' in sys.modules)"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )

    assert out.stdout.split() == ["False", "False"]


def test_rows_of_another_model_are_refused(tmp_path: Path) -> None:
    index = LanceIndex(tmp_path, dims=DIMS)
    index.upsert([row("m", X, model="model-one")])

    with pytest.raises(ConfigError, match="model-two"):
        LanceIndex(tmp_path, dims=DIMS).upsert([row("n", X, model="model-two")])
    with pytest.raises(ConfigError, match="mixes"):
        index.upsert([row("n", X, model="model-one"), row("o", X, model="model-two")])


def test_another_model_is_accepted_once_the_index_is_cleared(tmp_path: Path) -> None:
    index = LanceIndex(tmp_path, dims=DIMS)
    index.upsert([row("m", X, model="model-one")])
    index.clear()

    index.upsert([row("n", X, model="model-two")])

    assert index.ids() == {"n"}


def test_reopening_with_other_dims_is_a_config_error(tmp_path: Path) -> None:
    LanceIndex(tmp_path, dims=DIMS).upsert([row("m", X)])

    with pytest.raises(ConfigError, match="dims"):
        LanceIndex(tmp_path, dims=DIMS * 2).count()


def test_an_unusable_directory_raises_index_unavailable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")

    with pytest.raises(IndexUnavailable):
        LanceIndex(blocker / "vectors", dims=DIMS).count()


def test_damaged_data_files_raise_index_unavailable_when_read_whole(tmp_path: Path) -> None:
    # The in-process copy loads the table with `blocks`: a damaged data file raised
    # pyarrow's own error from inside the read, and the copy's thread printed 50
    # lines of traceback under the one-line warning `manage.py search` gave.
    index = LanceIndex(tmp_path / "vectors", dims=DIMS)
    index.upsert([row("m", X)])
    for data in (tmp_path / "vectors").glob("*.lance/data/*.lance"):
        data.write_bytes(b"\x13" * data.stat().st_size)

    with pytest.raises(IndexUnavailable, match="cannot read vector table"):
        list(LanceIndex(tmp_path / "vectors", dims=DIMS).blocks(10))


def test_non_finite_vectors_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="finite"):
        LanceIndex(tmp_path, dims=DIMS).upsert([row("m", (float("nan"),) * DIMS)])


def test_the_ann_index_is_built_past_the_threshold_and_new_rows_stay_visible(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(5)
    vectors = rng.standard_normal((400, DIMS))
    index = LanceIndex(tmp_path, dims=DIMS, index_threshold=300)
    index.upsert([row(f"m{n:03d}", unit(*v)) for n, v in enumerate(vectors)])
    assert index.has_ann_index()

    index.upsert([row("fresh", unit(*vectors[0]), project="b")])
    found = index.search(unit(*vectors[0]), where=Filter(projects=("b",)), limit=3)

    assert ids(found) == ["fresh"]
    assert found[0].score == pytest.approx(1.0, abs=1e-3)
    assert LanceIndex(tmp_path, dims=DIMS).has_ann_index()


def test_ann_scores_are_exact_cosines(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    vectors = np.asarray([unit(*v) for v in rng.standard_normal((400, DIMS))])
    index = LanceIndex(tmp_path, dims=DIMS, index_threshold=300)
    index.upsert([row(f"m{n:03d}", tuple(v)) for n, v in enumerate(vectors)])
    query = np.asarray(unit(*rng.standard_normal(DIMS)))

    found = index.search(query, where=EVERYTHING, limit=10)

    assert index.has_ann_index()
    cosines = vectors @ query
    for candidate in found:
        assert candidate.score == pytest.approx(cosines[int(candidate.id[1:])], abs=1e-5)
    assert [c.score for c in found] == sorted((c.score for c in found), reverse=True)
    assert found[0].id == f"m{int(np.argmax(cosines)):03d}"


def test_a_handle_opened_before_another_built_the_index_still_scores_exactly(
    tmp_path: Path,
) -> None:
    rng = np.random.default_rng(8)
    vectors = np.asarray([unit(*v) for v in rng.standard_normal((400, DIMS))])
    reader = LanceIndex(tmp_path, dims=DIMS, read_consistency=timedelta(0))
    writer = LanceIndex(tmp_path, dims=DIMS, index_threshold=300)
    assert reader.count() == 0  # opens the reader's handle: no index yet
    writer.upsert([row(f"m{n:03d}", tuple(v)) for n, v in enumerate(vectors)])
    query = np.asarray(unit(*rng.standard_normal(DIMS)))

    found = reader.search(query, where=EVERYTHING, limit=5)

    assert writer.has_ann_index() and not reader.has_ann_index()
    cosines = vectors @ query
    assert [c.score for c in found] == pytest.approx(
        [cosines[int(c.id[1:])] for c in found], abs=1e-5
    )


def test_without_auto_index_optimize_builds_the_index(tmp_path: Path) -> None:
    rng = np.random.default_rng(9)
    index = LanceIndex(tmp_path, dims=DIMS, index_threshold=300, auto_index=False)
    index.upsert(
        [row(f"m{n:03d}", unit(*v)) for n, v in enumerate(rng.standard_normal((400, DIMS)))]
    )
    assert not index.has_ann_index()

    index.optimize()

    assert index.has_ann_index()
    assert index.count() == 400


def indexed_columns(index: LanceIndex) -> set[str]:
    return {c for i in index._handle().list_indices() for c in i.columns}


def test_a_large_table_finds_rows_by_id_and_seq_through_b_trees(tmp_path: Path) -> None:
    rng = np.random.default_rng(10)
    index = LanceIndex(tmp_path, dims=DIMS, index_threshold=300)
    index.upsert(
        [row(f"m{n:03d}", unit(*v)) for n, v in enumerate(rng.standard_normal((400, DIMS)))]
    )
    assert indexed_columns(index) >= {"vector", "project", "active", "id", "seq"}
    table = index._handle()
    for name in ("id_idx", "seq_idx"):  # as a table indexed before they were built
        table.drop_index(name)
    assert not indexed_columns(index) & {"id", "seq"}

    index.optimize()

    assert indexed_columns(index) >= {"id", "seq"}
    mark = index.changes(0).high_water
    index.upsert([row("m001", unit(1, 0)), row("fresh", unit(0, 1))])  # one updated, one new
    assert sorted(index.changes(mark).ids) == ["fresh", "m001"]
    assert index.count() == 401  # merge-insert still replaces by id
    index.delete(["m002"])
    assert index.count() == 400 and "m002" not in index.ids()


def test_optimize_keeps_every_row_searchable(tmp_path: Path) -> None:
    index = LanceIndex(tmp_path, dims=DIMS)
    for n in range(5):
        index.upsert([row(f"m{n}", unit(1, n / 10))])
    index.delete(["m4"])

    index.optimize()

    assert index.count() == 4
    assert ids(index.search(X, where=EVERYTHING, limit=10)) == ["m0", "m1", "m2", "m3"]


@pytest.mark.parametrize(
    ("where", "sql"),
    [
        (Filter(active_only=False), None),
        (Filter(), "active = true"),
        (Filter(active_only=False, include_global=False), "project IS NOT NULL"),
        (
            Filter(projects=("a", "b"), active_only=False),
            "(project IN ('a', 'b') OR project IS NULL)",
        ),
        (
            Filter(projects=("o'b",), include_global=False, items=("memory",), kinds=("fact",)),
            "active = true AND item IN ('memory') AND kind IN ('fact') AND project IN ('o''b')",
        ),
        (Filter(projects=(), include_global=False, active_only=False), "false"),
    ],
)
def test_where_sql(where: Filter, sql: str | None) -> None:
    assert where_sql(where) == sql


def test_sql_string_refuses_nul() -> None:
    with pytest.raises(ValueError):
        sql_string("a\x00b")


def test_fingerprints_list_one_pair_per_row_as_written(index: VectorIndex) -> None:
    index.upsert([row("a", X, fingerprint="f1"), row("b", X, fingerprint="f2")])
    index.upsert([row("a", X, fingerprint="f3")])
    assert sorted(index.fingerprints()) == [("a", "f3"), ("b", "f2")]


def test_a_table_in_an_older_layout_is_cleared_on_open(tmp_path: Path) -> None:
    LanceIndex(tmp_path / "v", dims=DIMS).upsert([row("a", X)])
    (tmp_path / "v" / layout.MARKER).unlink()

    assert LanceIndex(tmp_path / "v", dims=DIMS).ids() == set()


UPSERT_SAME_IDS = """
import sys
from recall.indexes.lance_index import LanceIndex
from recall.types import VectorRow
index = LanceIndex(sys.argv[1], dims=8)
vector = (1.0,) + (0.0,) * 7
for round in range(20):  # each round inserts ids no process has written yet
    index.upsert([
        VectorRow(id=f"m{round}-{i}", item="memory", project="a", active=True, kind="fact",
                  vector=vector, model="test-model", fingerprint=sys.argv[2])
        for i in range(3)
    ])
"""


def test_processes_upserting_the_same_ids_leave_one_row_per_id(tmp_path: Path) -> None:
    """Two writers racing on merge-insert left duplicate rows before the write lock."""
    path = str(tmp_path / "v")
    LanceIndex(path, dims=DIMS).upsert([row("m0", X)])
    writers = [
        subprocess.Popen([sys.executable, "-c", UPSERT_SAME_IDS, path, name], cwd=ROOT)
        for name in ("one", "two", "three")
    ]
    assert [w.wait(timeout=300) for w in writers] == [0, 0, 0]

    index = LanceIndex(path, dims=DIMS)
    assert index.count() == len(index.ids()) == 61


def test_single_row_writes_are_compacted_every_few_writes(tmp_path: Path) -> None:
    """Every write adds a fragment and searches scan them all: the handle merges them."""
    index = LanceIndex(tmp_path / "v", dims=DIMS, compact_every=5)
    for i in range(12):
        index.upsert([row(f"m{i}", X)])
    index.delete(["m0"])

    fragments = index._handle().stats()["fragment_stats"]["num_fragments"]
    assert fragments <= 4  # without compaction: one per write, 13
    assert index.count() == 11
    assert ids(index.search(X, where=EVERYTHING, limit=3)) == ["m1", "m10", "m11"]


# -- Recall's attribute filters (tags ... until) ----------------------------------


@pytest.mark.parametrize("where", filter_cases.FILTERS, ids=range(len(filter_cases.FILTERS)))
def test_attribute_filters_agree_with_the_reference_predicate(
    index: VectorIndex, where: Filter
) -> None:
    rng = np.random.default_rng(5)
    rows = [
        row(f"a{n:02d}", unit(*rng.standard_normal(DIMS)), project=["alpha", None][n % 2],
            kind=["fact", "gotcha"][n % 3 == 0], **filter_cases.attributes(n))
        for n in range(filter_cases.GRID_SIZE)
    ]  # fmt: skip
    index.upsert(rows)
    expected = {r.id for r in rows if where.admits_record(r)}

    assert expected  # every case admits something, so a plane that drops all fails
    assert set(ids(index.search(X, where=where, limit=100))) == expected


@pytest.mark.parametrize(
    ("label", "refused", "admitted", "where"),
    filter_cases.NARROW,
    ids=[c[0] for c in filter_cases.NARROW],
)
def test_attribute_filters_apply_before_the_limit(
    index: VectorIndex,
    label: str,
    refused: dict[str, object],
    admitted: dict[str, object],
    where: Filter,
) -> None:
    """90 of 100 rows, all nearer the query, are refused: the page is still full."""
    near = [row(f"out{i:02d}", unit(1, 0.01 * i), **refused) for i in range(90)]
    far = [row(f"in{i}", unit(1, 2 + 0.1 * i), **admitted) for i in range(10)]
    index.upsert([*near, *far])

    assert ids(index.search(X, where=EVERYTHING, limit=10)) == [r.id for r in near[:10]]
    assert ids(index.search(X, where=where, limit=10)) == [r.id for r in far]
