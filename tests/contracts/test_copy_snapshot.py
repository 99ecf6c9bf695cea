"""The vector copy's snapshot (recall/indexes/copy_snapshot.py): a serving process maps
the arrays the index worker wrote and answers exactly as a copy read from the plane,
follows the plane's writes made since, and a writer killed mid-snapshot leaves the
last snapshot whole."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from recall.indexes import copy_snapshot
from recall.indexes.hot_vectors import HotVectorIndex, Sketching
from recall.indexes.lance_index import LanceIndex
from recall.types import Facets, Filter, VectorRow

DIMS = 16
SKETCHING = Sketching(above=80, dims=4, pool=24)
FILTERS = [
    Filter(active_only=False),
    Filter(projects=("a",), include_global=False),
    Filter(projects=("b",)),
    Filter(projects=("a",), kinds=("event",)),
    Filter(min_importance=0.5, tags=("t1",)),
    Filter(agent_id="ag1", since=datetime(2026, 1, 1, 2, tzinfo=UTC)),
]


def rows(count: int, seed: int, prefix: str = "m") -> list[VectorRow]:
    """Rows over three projects' partitions, active and not, with every facet set;
    every fifth fingerprint is not 16 hex digits (the book keeps those apart)."""
    rng = np.random.default_rng(seed)
    points = rng.normal(size=(count, 4)) @ rng.normal(size=(4, DIMS))
    points += 0.2 * rng.normal(size=(count, DIMS))
    start = datetime(2026, 1, 1, tzinfo=UTC)
    return [
        VectorRow(
            id=f"{prefix}{i:04d}",
            item="memory" if i % 7 else "note",
            project=("a", "b", None)[i % 3] if i % 2 else "a",
            active=i % 11 != 0,
            kind="event" if i % 4 == 0 else "fact",
            vector=tuple(p.tolist()),
            model="m",
            fingerprint=f"odd-{i}" if i % 5 == 0 else f"{rng.integers(1 << 62):016x}",
            tags=(f"t{i % 3}",),
            agent_id=f"ag{i % 2}",
            session_id=f"s{i % 4}",
            importance=(i % 10) / 10,
            created=start + timedelta(minutes=i),
        )
        for i, p in enumerate(points)
    ]


def copy(path: Path, snapshots: Path | None = None, **knobs: object) -> HotVectorIndex:
    options: dict[str, object] = {"sketching": SKETCHING}
    options.update(knobs)
    return HotVectorIndex(
        LanceIndex(path, dims=DIMS), poll_seconds=0, warm=True, snapshots=snapshots, **options
    )  # type: ignore[arg-type]


def answers(
    index: HotVectorIndex, seed: int = 5, filters: list[Filter] = FILTERS
) -> list[list[tuple[str, float]]]:
    queries = np.random.default_rng(seed).normal(size=(12, DIMS))
    return [
        [(c.id, c.score) for c in index.search(q, where=where, limit=limit)]
        for q in queries
        for where in filters
        for limit in (1, 10, 40)
    ]


def mapped(index: HotVectorIndex) -> bool:
    """Whether every flat partition's vectors are pages of a snapshot file."""
    flat = [p for p in index._parts.values() if p.index is None]

    def from_file(array: np.ndarray) -> bool:
        while array is not None and not isinstance(array, np.memmap):
            array = array.base  # type: ignore[assignment]
        return array is not None

    return bool(flat) and all(from_file(p.matrix) for p in flat)


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            h.update(path.name.encode() + path.read_bytes())
    return h.hexdigest()


@pytest.fixture
def plane(tmp_path: Path) -> Path:
    writer = LanceIndex(tmp_path / "v", dims=DIMS, auto_index=False)
    writer.upsert(rows(700, seed=1))
    return tmp_path / "v"


def test_a_mapped_snapshot_answers_as_a_copy_read_from_the_plane(
    plane: Path, tmp_path: Path
) -> None:
    worker = copy(plane, tmp_path / "snaps")
    before = answers(worker)
    published = worker.publish()
    assert copy_snapshot.current(tmp_path / "snaps") == published
    assert mapped(worker) and answers(worker) == before  # the writer maps what it wrote

    served = copy(plane, tmp_path / "snaps")
    loaded = copy(plane)  # no snapshot: every row read from the plane

    assert mapped(served) and not mapped(loaded)
    assert any(p.basis is not None for p in served._parts.values())  # a sketch mapped
    assert answers(served) == answers(loaded) == answers(worker)
    assert served.vectors(["m0003", "m0010"]).keys() == {"m0003", "m0010"}
    for (id_, vector), want in zip(
        served.vectors(["m0003", "m0010"]).items(), loaded.vectors(["m0003", "m0010"]).values(),
        strict=True,
    ):  # fmt: skip
        assert np.array_equal(vector, want), id_


def test_a_partitions_graph_is_saved_and_restored_whole(plane: Path, tmp_path: Path) -> None:
    """A partition past `exact_below` is a USearch graph: the snapshot holds the graph
    itself (a graph built again answers differently: HNSW is approximate)."""
    worker = copy(plane, tmp_path / "snaps", exact_below=200)  # project "a": 424 active rows
    worker.publish()

    served = copy(plane, tmp_path / "snaps", exact_below=200)

    assert served._parts[("a", True)].index is not None
    assert answers(served) == answers(worker)


def test_a_mapped_books_ids_are_the_snapshots_pages_not_python_objects(tmp_path: Path) -> None:
    """The book's ids are mapped from the snapshot (bytes by key, keys in id order) and
    found by binary search; held as a list of strings and a dict, rebuilt from the
    snapshot's JSON, 20,000 ids of 36 characters took 4.3 MB of Python objects (about
    16 MB of each serving process's private memory at 100,000 rows)."""
    import tracemalloc

    plane = LanceIndex(tmp_path / "v", dims=DIMS, auto_index=False)
    many = [VectorRow(**{**_fields(r), "id": f"{n:08d}-0000-4000-8000-{n:012d}"})
            for n, r in enumerate(rows(20000, seed=4))]  # fmt: skip
    plane.upsert(many)
    worker = copy(tmp_path / "v", tmp_path / "snaps")
    snap = worker.publish()
    tracemalloc.start()
    try:
        book, _ = worker._mapped(copy_snapshot.current(tmp_path / "snaps") or snap)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert held < 1_000_000, held
    assert len(book) == 20000 and book.find("00000000-0000-4000-8000-000000000000") is not None
    assert book.find("00019999-0000-4000-8000-000000019999") is not None
    assert book.find("00020000-0000-4000-8000-000000020000") is None
    assert book.find("0000") is None and book.find("") is None
    key = book.find(many[7].id)
    assert key is not None and book.names.id(key[0]) == many[7].id
    book.drop(many[7].id)
    assert book.find(many[7].id) is None and len(book) == 19999
    again = book.add(many[7].id, ("b", True), "memory", "fact", "0123456789abcdef", Facets())
    assert book.find(many[7].id) == (again, ("b", True))
    assert sorted(book.names) == sorted(r.id for r in many)
    ninth = book.find(many[9].id)
    assert ninth is not None
    book.drop(many[9].id)  # a free key
    keys = [again, key[0], ninth[0], 0, 19999, again]
    assert book.names.ids_of(np.array(keys, np.uint64)) == [book.names.id(k) for k in keys]
    assert book.names.ids_of(np.array([again, ninth[0]], np.uint64)) == [many[7].id, ""]
    reused = book.add("x", ("b", True), "memory", "fact", "0123456789abcdef", Facets())
    grown = book.add("y", ("b", True), "memory", "fact", "0123456789abcdef", Facets())
    assert (reused, grown) == (ninth[0], 20000)
    first = book.names.id(0)
    assert book.names.ids_of(np.array([grown, 0, reused], np.uint64)) == ["y", first, "x"]
    assert book.find("y") == (20000, ("b", True)) and len(book) == 20001


def _mapped_files() -> set[str]:
    with open("/proc/self/maps", encoding="utf-8") as maps:
        return {line.split(None, 5)[5].strip() for line in maps if len(line.split()) > 5}


@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc/self/maps, which only Linux has"
)
def test_a_restored_graph_is_viewed_from_the_snapshot_and_copied_on_its_first_write(
    plane: Path, tmp_path: Path
) -> None:
    """A graph partition is mapped from the snapshot's file (pages shared by every
    process mapping it), not loaded into private memory; a write to it copies it
    first (a view is read-only), even once the snapshot's files are removed."""
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps, exact_below=200)  # project "a": 424 active rows
    snap = worker.publish()
    served = copy(plane, snaps, exact_below=200)
    graphs = {str(p) for p in snap.path.glob("*.usearch")}
    assert served._parts[("a", True)].index is not None and graphs
    assert graphs <= _mapped_files()
    assert answers(served) == answers(worker)
    worker.publish()
    worker.publish()  # the first snapshot's files are swept
    assert not snap.path.exists()

    new = VectorRow(**{**_fields(rows(1, seed=3, prefix="w")[0]), "project": "a", "active": True})
    served.upsert([new])
    served.delete(["m0000"])

    found = served.search(np.asarray(new.vector), where=Filter(projects=("a",)), limit=3)
    assert found[0].id == "w0000" and found[0].score == pytest.approx(1.0, abs=1e-5)
    first = np.asarray(rows(700, seed=1)[0].vector)
    near = served.search(first, where=Filter(projects=("a",)), limit=40)
    assert "m0000" not in {c.id for c in near}
    assert not served._parts[("a", True)].viewed


def test_a_reader_follows_the_plane_past_its_snapshot_and_never_writes_the_files(
    plane: Path, tmp_path: Path
) -> None:
    worker = copy(plane, tmp_path / "snaps")
    worker.publish()
    before = digest(tmp_path / "snaps")
    other = LanceIndex(plane, dims=DIMS)  # another process's handle (the worker's)
    new = rows(30, seed=9, prefix="n")
    other.upsert(new)
    other.upsert([VectorRow(**{**_fields(rows(700, seed=1)[1]), "active": False})])  # moved
    other.delete(["m0002", "m0004"])

    served = copy(plane, tmp_path / "snaps")
    assert mapped(served)
    assert worker.refresh() == 30 + 1 + 2
    # The changes since, read from the plane, as the copy that wrote the snapshot read
    # them (a copy loaded from scratch fits its sketches over every row where these
    # keep the snapshot's directions, as a long-lived copy keeps its own).
    assert answers(served) == answers(worker)

    mine = rows(90, seed=13, prefix="o")
    served.upsert(mine)  # its own writes: into its private pages, never the files
    worker.upsert(mine)
    served.delete(["m0006", "n0001"])
    worker.delete(["m0006", "n0001"])
    assert answers(served) == answers(worker)
    assert digest(tmp_path / "snaps") == before


def _fields(row: VectorRow) -> dict[str, object]:
    return {name: getattr(row, name) for name in VectorRow.__dataclass_fields__}


def test_a_snapshot_under_other_settings_is_not_used(plane: Path, tmp_path: Path) -> None:
    copy(plane, tmp_path / "snaps").publish()

    other = copy(plane, tmp_path / "snaps", sketching=Sketching(above=100, dims=4, pool=24))

    assert not mapped(other)  # read from the plane instead
    assert answers(other) == answers(copy(plane, sketching=Sketching(above=100, dims=4, pool=24)))


def test_a_snapshot_of_another_models_vectors_is_not_used(plane: Path, tmp_path: Path) -> None:
    # A reindex to a model of another length begins the plane again; a copy that mapped
    # the old snapshot would put the new rows into matrices of the old length.
    copy(plane, tmp_path / "snaps").publish()
    shutil.rmtree(plane)
    longer = LanceIndex(plane, dims=DIMS * 2)
    wide = [VectorRow(**{**_fields(r), "vector": r.vector * 2}) for r in rows(40, seed=3)]
    longer.upsert(wide)
    for _ in range(12):  # past the old plane's version, as a plane written more would be
        longer.upsert(wide[:1])

    served = HotVectorIndex(
        LanceIndex(plane, dims=DIMS * 2), poll_seconds=0, warm=True, snapshots=tmp_path / "snaps",
        sketching=SKETCHING,
    )  # fmt: skip

    assert not mapped(served)
    query = np.asarray(wide[5].vector)
    assert served.search(query, where=Filter(active_only=False), limit=1)[0].id == "m0005"


_KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from recall.indexes import copy_snapshot
from recall.indexes.hot_vectors import HotVectorIndex, Sketching
from recall.indexes.lance_index import LanceIndex

written = 0
original = copy_snapshot._write_array

def write_then_die(*args, **kwargs):
    global written
    original(*args, **kwargs)
    written += 1
    if written == 6:  # some arrays on disk, the snapshot not yet named
        os.kill(os.getpid(), signal.SIGKILL)

copy_snapshot._write_array = write_then_die
plane, snaps = Path(sys.argv[1]), Path(sys.argv[2])
index = HotVectorIndex(LanceIndex(plane, dims=16), poll_seconds=0, warm=True, snapshots=snaps,
                       sketching=Sketching(above=80, dims=4, pool=24), exact_below=32768)
index.publish()
"""


def test_a_writer_killed_mid_snapshot_leaves_the_last_one_whole(
    plane: Path, tmp_path: Path
) -> None:
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps)
    first = worker.publish()
    want = answers(worker)
    LanceIndex(plane, dims=DIMS).upsert(rows(20, seed=21, prefix="k"))  # the plane moves on

    script = tmp_path / "die.py"
    script.write_text(textwrap.dedent(_KILLED_MID_WRITE))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, str(script), str(plane), str(snaps)], env=env, timeout=300
    )

    assert done.returncode == -signal.SIGKILL
    assert [p.name for p in snaps.glob("tmp-*")]  # the half-written one, never named
    assert copy_snapshot.current(snaps) == first
    served = copy(plane, snaps)
    assert mapped(served)
    assert worker.refresh() == 20
    assert answers(served) == answers(worker) != want  # the snapshot + the plane's rows since
    second = copy(plane, snaps).publish()  # the next writer sweeps the leftovers
    assert not list(snaps.glob("tmp-*"))
    assert sorted(p.name for p in snaps.glob("snap-*")) == sorted(
        [first.path.name, second.path.name]
    )
