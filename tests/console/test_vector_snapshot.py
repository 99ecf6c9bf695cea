"""The index worker writes the vector copy's snapshot; a serving process started after
maps it instead of reading the whole plane (recall/indexes/copy_snapshot.py)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.db import connection

from console import indexing, services, wiring
from console.management.commands import index_worker
from console.models import IndexJob
from recall.indexes import copy_snapshot
from recall.indexes.hot_vectors import HotVectorIndex
from recall.types import Filter


def _mapped(index: HotVectorIndex) -> bool:
    def from_file(array: np.ndarray) -> bool:
        while array is not None and not isinstance(array, np.memmap):
            array = array.base  # type: ignore[assignment]
        return array is not None

    return bool(index._parts) and all(from_file(p.matrix) for p in index._parts.values())


@pytest.mark.django_db
def test_the_idle_index_worker_writes_the_copy_a_new_process_maps(planes: Path) -> None:
    if connection.vendor == "postgresql":
        pytest.skip("the PostgreSQL profile's vectors are pgvector's: no in-process copy")
    assert isinstance(wiring.vector_index(), HotVectorIndex)  # the embedded profile's wiring
    project = services.project_create(slug="ops")
    made = services.memory_create(project=project, name="pager-rota", description="Mondays")
    indexing.apply_pending()
    options = {"interval": 0.01, "maintain_every": 0, "expire_every": 0, "snapshot_every": 300}

    def idle_passes(n: int) -> str:
        passes, out = iter(range(n)), StringIO()
        index_worker.Command(stdout=out, stderr=StringIO())._loop(
            lambda: next(passes, None) is None, 0, options, services.plane_folders()
        )
        return out.getvalue()

    # Not at once: the first snapshot loads the worker's copy of the whole plane while
    # jobs queue, so it waits a period, as every later one does.
    assert "snapshot" not in idle_passes(3)
    assert copy_snapshot.current(planes / "vectors-copy") is None
    options["snapshot_every"] = 0.05  # idle passes 0.01 s apart: one writes, later ones not
    said = idle_passes(12)

    assert said.count("wrote the vector copy's snapshot") == 1, said
    snap = copy_snapshot.current(planes / "vectors-copy")
    assert snap is not None and made.pk in _ids(snap)
    assert not services.vector_copy_publish()  # the plane has not moved since

    wiring.reset()  # a serving process started now
    served = wiring.vector_index()
    assert isinstance(served, HotVectorIndex) and served.wait_ready(timeout=60)
    assert _mapped(served)
    assert served._cursor is not None  # it follows the journal, not the plane
    model = wiring.embedder()
    assert model is not None
    query = model.embed(["pager rota Mondays"])[0]
    found = served.search(query, where=Filter(projects=("ops",)), limit=3)
    assert made.pk in [c.id for c in found]

    second = services.memory_create(project=project, name="rota-swap", description="Swaps")
    indexing.apply_pending()  # the plane moved: the next idle snapshot is written again
    assert services.vector_copy_publish()
    now = copy_snapshot.current(planes / "vectors-copy")
    assert now is not None and now.path != snap.path and second.pk in _ids(now)


def _ids(snap: copy_snapshot.Snapshot) -> set[str]:
    """The ids a snapshot's book holds (UTF-8 bytes by key, `recall.indexes.copy_rows.Ids`)."""
    return {b.decode() for b in snap.array("book.names").tolist()}


@pytest.mark.django_db
def test_a_snapshot_that_fails_is_one_line_and_the_worker_goes_on(
    planes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plane folder deleted while the idle worker wrote the snapshot ended the worker
    # ("CommandError: the vector plane ..."): its rebuild never ran.
    def fail() -> bool:
        raise OSError("No space left on device")

    monkeypatch.setattr(services, "vector_copy_publish", fail)
    made = services.memory_create(
        project=services.project_create(slug="ops"), name="pager-rota", description="Mondays"
    )
    passes = iter(range(3))
    options = {"interval": 0.01, "maintain_every": 0, "expire_every": 0, "snapshot_every": 0.01}
    err = StringIO()

    index_worker.Command(stdout=StringIO(), stderr=err)._loop(
        lambda: next(passes, None) is None, 0, options, services.plane_folders()
    )

    assert err.getvalue().count("writing the vector copy's snapshot failed") >= 1, err.getvalue()
    assert not IndexJob.objects.filter(item_id=made.pk).exists()  # applied all the same
