"""A follower of the vector copy's journal (recall/indexes/copy_follow.py) moves to the
newest snapshot the worker publishes: it maps it, lets the rows it followed go, and
follows the journal from the new snapshot's position; a process that read the plane
because no snapshot was there adopts the first one published; searches in threads
meanwhile see the old copy or the new one, never a mix."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from recall.indexes import copy_snapshot
from recall.indexes.copy_parts import Sketching
from recall.indexes.hot_vectors import HotVectorIndex
from recall.indexes.lance_index import LanceIndex
from recall.types import VectorRow
from tests.contracts.test_copy_journal import Unread, alike, serving_child, writes
from tests.contracts.test_copy_snapshot import DIMS, FILTERS, answers, rows


@pytest.fixture
def plane(tmp_path: Path) -> Path:
    LanceIndex(tmp_path / "v", dims=DIMS, auto_index=False).upsert(rows(700, seed=1))
    return tmp_path / "v"


def copy(
    plane: Path,
    snaps: Path | None,
    *,
    unread: bool = False,
    exact_below: int = 32768,
    journal: bool = True,
) -> HotVectorIndex:
    """A journal-following copy (or, `journal` False, one polling the plane) whose
    partitions are scanned exactly (never sketched), so that its answers are the
    plane's (with `exact_below` past their sizes)."""
    inner = (Unread if unread else LanceIndex)(plane, dims=DIMS)
    return HotVectorIndex(inner, poll_seconds=0, warm=True, snapshots=snaps, journal=journal,
                          sketching=Sketching(above=1 << 30), exact_below=exact_below)  # fmt: skip


def planes_answers(plane: Path) -> list[list[tuple[str, float]]]:
    return answers(LanceIndex(plane, dims=DIMS))  # type: ignore[arg-type]


def mapped_from(index: HotVectorIndex, snap: copy_snapshot.Snapshot) -> bool:
    """Whether every flat partition's vectors are pages of `snap`'s files."""

    def file_of(array: np.ndarray) -> Path | None:
        while array is not None and not isinstance(array, np.memmap):
            array = array.base  # type: ignore[assignment]
        return None if array is None else Path(str(array.filename)).parent

    flat = [p for p in index._parts.values() if p.index is None]
    return bool(flat) and all(file_of(p.matrix) == snap.path for p in flat)


def burst(worker: HotVectorIndex, count: int, seed: int) -> None:
    """More rows than a snapshot's spare room: a follower's partitions outgrow their
    mapped arrays and hold private copies."""
    batch = rows(count, seed=seed, prefix="b")
    for start in range(0, count, 100):
        worker.upsert(batch[start : start + 100])


def test_a_follower_moves_to_the_newer_snapshot_and_follows_on_from_it(
    plane: Path, tmp_path: Path
) -> None:
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps)
    first = worker.publish()
    served = copy(plane, snaps, unread=True)
    burst(worker, 400, seed=61)
    served.refresh()
    assert not mapped_from(served, first)  # grown past the spare room: private copies

    second = worker.publish()
    writes(worker)  # journaled after the second snapshot's position
    served.refresh()

    assert mapped_from(served, second)
    assert len(served._book) == len(LanceIndex(plane, dims=DIMS).ids())
    assert answers(served) == answers(worker)
    assert alike(answers(served), planes_answers(plane))
    worker.delete(["b0001"])  # and it follows on
    assert served.refresh() == 1 and served._book.find("b0001") is None


def test_a_copy_without_a_journal_moves_to_the_newer_snapshot_and_polls_on(
    plane: Path, tmp_path: Path
) -> None:
    """`RECALL_VECTOR_JOURNAL` off: a copy polling the plane maps each newer snapshot
    (its private rows let go), then reads the plane's rows written and deleted since."""
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps, journal=False)
    first = worker.publish()
    served = copy(plane, snaps, journal=False)
    assert mapped_from(served, first)
    burst(worker, 400, seed=61)
    served.refresh()
    assert not mapped_from(served, first)  # grown past the spare room: private copies

    second = worker.publish()
    writes(worker)  # after the second snapshot: rows new, moved, replaced, deleted
    assert served.refresh() > 0

    assert mapped_from(served, second)
    assert len(served._book) == len(LanceIndex(plane, dims=DIMS).ids())
    assert alike(answers(served), planes_answers(plane))
    worker.delete(["b0001"])  # and it polls on
    assert served.refresh() == 1 and served._book.find("b0001") is None


def test_a_process_started_before_any_snapshot_adopts_the_first_one(
    plane: Path, tmp_path: Path
) -> None:
    snaps = tmp_path / "snaps"
    served = copy(plane, snaps)  # nothing published yet: every row read from the plane
    assert served._cursor is None
    worker = copy(plane, snaps)
    worker.publish()
    writes(worker)

    served.refresh()

    snap = copy_snapshot.current(snaps)
    assert snap is not None
    assert served._cursor is not None and mapped_from(served, snap)  # the plane's rows gone
    assert answers(served) == answers(worker)
    for name in ("version", "changes", "block", "blocks", "count", "fingerprints"):
        setattr(served.inner, name, _unread)  # it follows the journal: no plane read now
    worker.upsert(rows(5, seed=71, prefix="z"))
    assert served.refresh() == 5


def through_a_switch(served: HotVectorIndex, check: Callable[[], bool]) -> None:
    """Three threads search `served` (each answer passed to `check`) while it refreshes,
    moving to the newer snapshot: no search raises and every answer passes."""
    stop, seen, failed = threading.Event(), [], []

    def search() -> None:
        try:
            while not stop.is_set():
                seen.append(check())
        except Exception as exc:  # a search that raised mid-switch
            failed.append(exc)

    threads = [threading.Thread(target=search) for _ in range(3)]
    for thread in threads:
        thread.start()

    def until(count: int) -> None:  # searches done, or every thread ended by an error
        while len(seen) < count and any(t.is_alive() for t in threads):
            stop.wait(0.01)

    until(3)
    served.refresh()
    until(len(seen) + 6)
    stop.set()
    for thread in threads:
        thread.join()

    assert not failed and all(seen), (failed, seen.count(False))


@pytest.mark.parametrize("journal", [True, False], ids=["journal", "polling"])
def test_searches_in_threads_while_the_copy_switches_see_the_planes_answers(
    plane: Path, tmp_path: Path, journal: bool
) -> None:
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps, journal=journal)
    worker.publish()
    served = copy(plane, snaps, unread=journal, journal=journal)
    burst(worker, 400, seed=67)
    writes(worker)
    served.refresh()
    newer = worker.publish()
    want = planes_answers(plane)

    through_a_switch(served, lambda: alike(answers(served, filters=_FEW), _few(want)))
    assert mapped_from(served, newer)


def test_searches_in_threads_while_graphs_switch_see_the_old_copy_or_the_new(
    plane: Path, tmp_path: Path
) -> None:
    """Partitions past `exact_below` (USearch graphs, viewed from the snapshot's file):
    a follower copies its graph on the first followed write, then maps the newer
    snapshot's graph in its place; searches meanwhile see one copy or the other."""
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps, exact_below=200)  # project "a": 424 active rows
    worker.publish()
    served = copy(plane, snaps, unread=True, exact_below=200)
    burst(worker, 400, seed=67)
    writes(worker)
    served.refresh()
    assert not served._parts[("a", True)].viewed  # written to: a private copy
    old = answers(served, filters=_FEW)
    newer = worker.publish()
    new = answers(copy(plane, snaps, unread=True, exact_below=200), filters=_FEW)

    through_a_switch(served, lambda: answers(served, filters=_FEW) in (old, new))
    graph = served._parts[("a", True)]
    assert graph.viewed and answers(served, filters=_FEW) == new
    assert mapped_from(served, newer)


_FEW = [FILTERS[0], FILTERS[2], FILTERS[4]]


def _few(full: list[list[tuple[str, float]]]) -> list[list[tuple[str, float]]]:
    """`answers(..., filters=_FEW)` picked out of the answers under every filter."""
    picked, per = [], 6 * 3  # filters x limits, per query
    for start in range(0, len(full), per):
        for n in (0, 2, 4):
            picked.extend(full[start + 3 * n : start + 3 * n + 3])
    return picked


_SERVING = """
import ctypes, json, sys
from pathlib import Path
import numpy as np
from recall.indexes.hot_vectors import HotVectorIndex
from recall.indexes.lance_index import LanceIndex

def anon_mb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024

def mapped_from(index):  # the snapshot folders the partitions' vectors are mapped from
    found = set()
    for part in index._parts.values():
        array = part.matrix
        while array is not None and not isinstance(array, np.memmap):
            array = array.base
        found.add(None if array is None else Path(array.filename).parent.name)
    return sorted(found, key=str)

libc = ctypes.CDLL("libc.so.6")
plane, snaps = Path(sys.argv[1]), Path(sys.argv[2])
index = HotVectorIndex(LanceIndex(plane, dims=384), poll_seconds=0, warm=True,
                       snapshots=snaps, journal=True, release=lambda: libc.malloc_trim(0))
for line in sys.stdin:  # one step per line the test writes
    index.catch_up()
    libc.malloc_trim(0)
    print(json.dumps({"anon": anon_mb(), "rows": len(index._book),
                      "snapshot": mapped_from(index),
                      "lancedb": "lancedb" in sys.modules}), flush=True)
"""


def _unread(*_: object) -> None:
    raise AssertionError("the plane was read")


def big_rows(count: int, seed: int, prefix: str) -> list[VectorRow]:
    vectors = np.random.default_rng(seed).normal(size=(count, 384)).astype(np.float32)
    return [
        VectorRow(id=f"{prefix}{i:05d}", item="memory", project=("a", "b")[i % 2], active=True,
                  kind="fact", vector=tuple(v.tolist()), model="m", fingerprint=f"{i:016x}")
        for i, v in enumerate(vectors)
    ]  # fmt: skip


@pytest.mark.skipif(
    not sys.platform.startswith("linux"),
    reason="reads the process's RssAnon from /proc/self/status, which only Linux has",
)
def test_a_serving_process_gives_back_its_followed_rows_after_a_republish(
    tmp_path: Path,
) -> None:
    plane, snaps = tmp_path / "v", tmp_path / "snaps"
    LanceIndex(plane, dims=384, auto_index=False).upsert(big_rows(2000, 1, "m"))
    worker = HotVectorIndex(LanceIndex(plane, dims=384), poll_seconds=0, warm=True,
                            snapshots=snaps, journal=True)  # fmt: skip
    first = worker.publish()
    with serving_child(tmp_path, _SERVING, plane, snaps) as child:
        assert child.stdin is not None and child.stdout is not None

        def step() -> dict[str, Any]:
            child.stdin.write("step\n")  # type: ignore[union-attr]
            child.stdin.flush()  # type: ignore[union-attr]
            return json.loads(child.stdout.readline())  # type: ignore[union-attr,no-any-return]

        mapped = step()
        burst = big_rows(5000, 2, "w")
        for start in range(0, len(burst), 500):
            worker.upsert(burst[start : start + 500])
        followed = step()
        newer = worker.publish()
        switched = step()
        child.stdin.close()
    assert child.returncode == 0
    assert mapped["snapshot"] == [first.path.name]
    assert None in followed["snapshot"]  # private copies
    assert followed["rows"] == switched["rows"] == 7000
    assert switched["snapshot"] == [newer.path.name] and not switched["lancedb"]
    # The 5,000 followed rows' vectors alone are 7.3 MB (and the partitions' whole arrays
    # were copied when they outgrew the snapshot's spare room): at least that goes back.
    grown = followed["anon"] - mapped["anon"]
    given_back = followed["anon"] - switched["anon"]
    assert grown > 7.3 and given_back > 7.3, (mapped, followed, switched)
