"""A tantivy writer killed with SIGKILL mid-batch loses nothing it confirmed.

A child process upserts numbered batches and prints each batch number once
`upsert` has returned (committed). The parent kills it with SIGKILL while it
is writing, then checks that the index opens, searches, holds every
confirmed batch whole (and any unconfirmed batch whole or not at all), and
that a fresh writer takes the lock at once: the lock dies with its holder.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from recall.indexes.tantivy_index import TantivyIndex
from recall.types import Doc, Filter

ROOT = Path(__file__).resolve().parents[2]
BATCH = 200

WRITER = """
import sys
from recall.indexes.tantivy_index import TantivyIndex
from recall.types import Doc

ix = TantivyIndex(sys.argv[1], lock_timeout_s=5)
start = int(sys.argv[2])
filler = " ".join(f"word{n % 97}" for n in range(300))
for batch in range(start, start + 10_000):
    docs = [
        Doc(id=f"b{batch:05d}-{n:03d}", item="memory", project="crash", active=True,
            kind="fact", name=f"batch-{batch}", title="crash test", description="",
            body=f"survivor {filler}")
        for n in range({batch})
    ]
    ix.upsert(docs)
    print(batch, flush=True)
""".replace("{batch}", str(BATCH))


def run_and_kill(path: Path, start: int, confirmed_before_kill: int, delay: float) -> list[int]:
    """Start a writer, let it confirm some batches, SIGKILL it mid-write."""
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), str(start)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    confirmed = []
    deadline = time.monotonic() + 60
    while len(confirmed) < confirmed_before_kill and time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        confirmed.append(int(line))
    time.sleep(delay)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=10)
    confirmed.extend(int(line) for line in child.stdout.read().split())
    child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    return confirmed


@pytest.mark.parametrize("delay", [0.0, 0.013, 0.041])
def test_sigkill_mid_write_keeps_every_confirmed_batch(tmp_path: Path, delay: float) -> None:
    path = tmp_path / "fts"
    confirmed = run_and_kill(path, start=0, confirmed_before_kill=3, delay=delay)
    confirmed += run_and_kill(path, start=1000, confirmed_before_kill=2, delay=delay)
    assert len(confirmed) >= 5

    index = TantivyIndex(path, lock_timeout_s=0.5)
    ids = index.ids()
    batches: dict[str, int] = {}
    for doc_id in ids:
        batches[doc_id[:6]] = batches.get(doc_id[:6], 0) + 1

    for batch in confirmed:
        assert batches.get(f"b{batch:05d}") == BATCH, f"confirmed batch {batch} incomplete"
    assert set(batches.values()) == {BATCH}, "a batch was committed in part"
    hits = index.search("survivor", where=Filter(projects=("crash",)), limit=5)
    assert [h.rank for h in hits] == [1, 2, 3, 4, 5]

    index.upsert([Doc(id="after", item="memory", project="crash", active=True, kind="fact",
                      name="after", title="", description="", body="phoenix")])  # fmt: skip

    assert [h.id for h in index.search("phoenix", where=Filter(), limit=5)] == ["after"]
    assert index.count() == len(ids) + 1
