"""The vector copy's journal (recall/indexes/copy_journal.py): a process that mapped the
worker's snapshot follows the writes journaled since instead of reading the plane,
answers as a copy that reads the plane, never loads LanceDB while it does, ignores a
record torn by a writer killed mid-append, and reads the plane on a gap."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import pytest

from recall.indexes import copy_journal
from recall.indexes.hot_vectors import HotVectorIndex
from recall.indexes.lance_index import LanceIndex
from recall.types import Filter, VectorBlock, VectorRow
from tests.contracts.test_copy_snapshot import DIMS, SKETCHING, _fields, answers, mapped, rows

ROOT = Path(__file__).resolve().parents[2]
_ALL = Filter(active_only=False)


class Unread(LanceIndex):
    """A plane a follower must not read (its writes are the worker's)."""

    def _read(self, *_: Any, **__: Any) -> NoReturn:
        raise AssertionError("the plane was read")

    version = changes = block = blocks = search = count = fingerprints = _read  # type: ignore[assignment]


def copy(
    plane: Path, snaps: Path | None, *, journal: bool = True, unread: bool = False
) -> HotVectorIndex:
    inner = (Unread if unread else LanceIndex)(plane, dims=DIMS)
    return HotVectorIndex(
        inner, poll_seconds=0, warm=True, snapshots=snaps, journal=journal, sketching=SKETCHING
    )


def published(plane: Path, tmp_path: Path) -> tuple[HotVectorIndex, Path]:
    """The worker's copy of `plane` with its snapshot published, and the snapshots' folder."""
    snaps = tmp_path / "snaps"
    worker = copy(plane, snaps)
    worker.publish()
    return worker, snaps


@pytest.fixture
def plane(tmp_path: Path) -> Path:
    LanceIndex(tmp_path / "v", dims=DIMS, auto_index=False).upsert(rows(700, seed=1))
    return tmp_path / "v"


def alike(a: list[list[tuple[str, float]]], b: list[list[tuple[str, float]]]) -> bool:
    """The same rows found, scores equal to within float rounding (a copy that read
    the plane holds rows at other positions: a product sums in another order)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        got, want = dict(x), dict(y)
        if got.keys() != want.keys() or any(abs(got[i] - want[i]) > 1e-5 for i in got):
            return False
    return True


def writes(worker: HotVectorIndex) -> None:
    """New rows, a row moved to another partition, a row's vector replaced, deletions."""
    worker.upsert(rows(30, seed=9, prefix="n"))
    old = rows(700, seed=1)
    worker.upsert([VectorRow(**{**_fields(old[1]), "active": False})])
    fresh = rows(1, seed=99)[0].vector
    worker.upsert([VectorRow(**{**_fields(old[3]), "vector": fresh})])
    worker.delete(["m0002", "m0004", "n0007"])


def test_a_follower_answers_as_the_plane_after_writes_past_its_snapshot(
    plane: Path, tmp_path: Path
) -> None:
    worker, snaps = published(plane, tmp_path)
    writes(worker)

    served = copy(plane, snaps, unread=True)  # the snapshot, then the journal only
    polled = copy(plane, snaps, journal=False)  # the snapshot, then the plane's changes

    assert mapped(served) and served._cursor is not None
    assert answers(served) == answers(worker) and alike(answers(served), answers(polled))
    writes_after = rows(20, seed=17, prefix="p")
    worker.upsert(writes_after)
    worker.delete(["m0010"])
    assert served.refresh() == 20 + 1
    assert polled.refresh() > 0
    assert answers(served) == answers(worker) and alike(answers(served), answers(polled))

    worker.clear()  # a rebuild begins the plane again
    worker.upsert(writes_after[:5])
    served.refresh()
    assert answers(served) == answers(worker) and alike(answers(served), answers(copy(plane, None)))


def serving_child(tmp_path: Path, source: str, plane: Path, snaps: Path) -> subprocess.Popen[str]:
    """A process running the script `source` over the plane and snapshot folders (its
    two arguments), spoken to a line at a time on its stdin and stdout."""
    script = tmp_path / "serve.py"
    script.write_text(textwrap.dedent(source))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(script), str(plane), str(snaps)],
        env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip


_SERVING = """
import json, sys
from pathlib import Path
import numpy as np
from recall.indexes.hot_vectors import HotVectorIndex, Sketching
from recall.indexes.lance_index import LanceIndex
from recall.types import Filter

plane, snaps = Path(sys.argv[1]), Path(sys.argv[2])
index = HotVectorIndex(LanceIndex(plane, dims=16), poll_seconds=0.05, snapshots=snaps,
                       journal=True, sketching=Sketching(above=80, dims=4, pool=24))
assert index.wait_ready(timeout=60)
print("ready", flush=True)
sys.stdin.readline()  # the worker wrote meanwhile
index.catch_up()  # as the dedup hint does; the poller thread runs too
query = np.random.default_rng(5).normal(size=16)
found = [c.id for c in index.search(query, where=Filter(active_only=False), limit=800)]
print(json.dumps({"ids": found, "lancedb": "lancedb" in sys.modules,
                  "pyarrow": "pyarrow" in sys.modules}), flush=True)
"""


def test_a_serving_process_following_the_journal_never_loads_lancedb(
    plane: Path, tmp_path: Path
) -> None:
    worker, snaps = published(plane, tmp_path)
    writes(worker)
    with serving_child(tmp_path, _SERVING, plane, snaps) as child:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        worker.upsert(rows(10, seed=23, prefix="q"))
        worker.delete(["m0020"])
        child.stdin.write("go\n")
        child.stdin.flush()
        said = json.loads(child.stdout.readline())
    assert child.returncode == 0
    assert not said["lancedb"] and not said["pyarrow"]
    assert set(said["ids"]) == set(LanceIndex(plane, dims=DIMS).ids())


_KILLED_MID_APPEND = """
import os, signal, sys, types
from pathlib import Path
from recall.indexes import copy_journal
from recall.indexes.hot_vectors import HotVectorIndex, Sketching
from recall.indexes.lance_index import LanceIndex
from tests.contracts.test_copy_snapshot import rows

def write_half_then_die(fd, data):
    os.write(fd, data[: len(data) // 2])
    os.kill(os.getpid(), signal.SIGKILL)

plane, snaps = Path(sys.argv[1]), Path(sys.argv[2])
index = HotVectorIndex(LanceIndex(plane, dims=16), poll_seconds=0, warm=True, snapshots=snaps,
                       journal=True, sketching=Sketching(above=80, dims=4, pool=24))
index.upsert(rows(12, seed=31, prefix="r"))  # whole
copy_journal.os = types.SimpleNamespace(**{**vars(os), "write": write_half_then_die})
index.upsert(rows(12, seed=37, prefix="s"))  # the plane takes it; its record is torn
"""


def test_a_worker_killed_mid_append_leaves_a_torn_tail_that_is_ignored(
    plane: Path, tmp_path: Path
) -> None:
    snaps = tmp_path / "snaps"
    copy(plane, snaps).publish()
    script = tmp_path / "die.py"
    script.write_text(textwrap.dedent(_KILLED_MID_APPEND))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    done = subprocess.run(
        [sys.executable, str(script), str(plane), str(snaps)], env=env, timeout=300
    )

    assert done.returncode == -signal.SIGKILL
    (last,) = sorted(snaps.glob("journal-*.log"))
    whole = last.stat().st_size
    served = copy(plane, snaps, unread=True)
    assert served._cursor is not None  # still following: the torn tail is not a gap
    ids = {c.id for c in served.search(np.ones(DIMS), where=_ALL, limit=900)}
    assert {r.id for r in rows(12, seed=31, prefix="r")} <= ids
    assert not ids & {r.id for r in rows(12, seed=37, prefix="s")}

    # The batch is applied again (its job was never acknowledged): the next writer cuts
    # the torn tail off and appends, and the follower reconverges with the plane.
    copy(plane, snaps).upsert(rows(12, seed=37, prefix="s"))
    assert last.stat().st_size < whole + 2 * len(_record_of(rows(12, seed=37, prefix="s")))
    served.refresh()
    assert served._cursor is not None
    assert alike(answers(served), answers(copy(plane, snaps, journal=False)))


def _record_of(batch: list[VectorRow]) -> bytes:
    block = VectorBlock(
        ids=[r.id for r in batch], items=[r.item for r in batch],
        projects=[r.project for r in batch], active=[r.active for r in batch],
        kinds=[r.kind for r in batch], fingerprints=[r.fingerprint for r in batch],
        vectors=np.asarray([r.vector for r in batch], dtype=np.float32),
    )  # fmt: skip
    return copy_journal.encode_put(block)


@pytest.mark.parametrize("damage", ["gap", "unreadable", "plane replaced"])
def test_a_follower_reads_the_plane_on_a_gap_or_an_unreadable_record(
    plane: Path, tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    worker, snaps = published(plane, tmp_path)
    served = copy(plane, snaps)
    assert served._cursor is not None
    worker.upsert(rows(8, seed=41, prefix="g"))
    worker.upsert(rows(8, seed=43, prefix="h"))
    (path,) = snaps.glob("journal-*.log")
    if damage == "gap":  # its files gone (swept, or removed): a new journal begins
        path.unlink()
        worker.upsert(rows(8, seed=47, prefix="i"))
    elif damage == "plane replaced":  # rebuilt from the database: only what it lacks
        shutil.rmtree(plane)
        LanceIndex(plane, dims=DIMS, auto_index=False).upsert(rows(700, seed=1)[:300])
        worker = copy(plane, snaps)
        assert worker._cursor is None  # started since: the snapshot is another plane's
    else:  # a byte of the first record flipped, a whole record after it
        data = bytearray(path.read_bytes())
        data[40] ^= 0xFF
        path.write_bytes(bytes(data))

    with caplog.at_level(logging.WARNING, logger="recall.indexes.copy_follow"):
        served.refresh()
        served.refresh()

    assert served._cursor is None
    said = [r for r in caplog.records if "journal" in r.getMessage()]
    assert len(said) == 1, said
    assert alike(answers(served), answers(copy(plane, snaps, journal=False)))
    assert alike(answers(served), answers(worker))


def test_a_snapshot_of_a_copied_plane_is_written_again_to_be_followed(
    plane: Path, tmp_path: Path
) -> None:
    # A deployment copied (or restored) elsewhere: its snapshot names the old plane
    # folder, which no follower follows; the worker's publisher counts it as behind,
    # though the plane has not moved, and the snapshot it writes is followed.
    snaps = tmp_path / "snaps"
    copy(plane, snaps, journal=False).publish()  # written before the journal, too
    assert not copy(plane, snaps, journal=False).snapshot_behind()
    assert copy(plane, snaps).snapshot_behind()
    copy(plane, snaps).publish()
    assert not copy(plane, snaps).snapshot_behind()
    moved, moved_snaps = tmp_path / "moved" / "v", tmp_path / "moved" / "snaps"
    shutil.copytree(plane, moved)
    shutil.copytree(snaps, moved_snaps)

    worker = copy(moved, moved_snaps)
    assert copy(moved, moved_snaps)._cursor is None  # it reads the plane
    assert worker.snapshot_behind()
    worker.publish()

    served = copy(moved, moved_snaps, unread=True)
    assert served._cursor is not None and answers(served) == answers(worker)


def test_records_round_trip_and_files_are_swept_behind_a_kept_snapshot(tmp_path: Path) -> None:
    journal = copy_journal.Journal(tmp_path)
    start = journal.position()
    assert start > 0 and journal.position() == start  # numbered past earlier journals
    batch = rows(5, seed=3)
    first = journal.append(_record_of(batch))[1].number
    assert first == start + 1
    journal.append(copy_journal.encode_drop(["m0001"]))
    journal.append(copy_journal.encode_clear())

    records, cursor = copy_journal.read(tmp_path, copy_journal.Cursor(start))

    assert [r.op for r in records] == ["put", "drop", "clear"]
    assert [r.number for r in records] == [
        first,
        first + 1,
        first + 2,
    ] and cursor.number == first + 2
    put = records[0].block
    assert put is not None and put.ids == [r.id for r in batch]
    assert np.array_equal(put.vectors, np.asarray([r.vector for r in batch], dtype=np.float32))
    assert records[1].ids == ("m0001",)
    assert copy_journal.read(tmp_path, cursor) == ([], cursor)
    assert copy_journal.read(tmp_path, copy_journal.Cursor(first))[0][0].number == first + 1

    copy_journal.ROTATE_BYTES, saved = 1, copy_journal.ROTATE_BYTES
    try:
        journal.append(copy_journal.encode_clear())
        journal.append(copy_journal.encode_clear())
    finally:
        copy_journal.ROTATE_BYTES = saved
    assert len(list(tmp_path.glob("journal-*.log"))) == 3
    journal.sweep(first + 3)  # the first two files' records are all held
    assert len(list(tmp_path.glob("journal-*.log"))) == 1
    with pytest.raises(copy_journal.Broken):
        copy_journal.read(tmp_path, copy_journal.Cursor(first))
    assert [r.number for r in copy_journal.read(tmp_path, copy_journal.Cursor(first + 3))[0]] == [
        first + 4
    ]
