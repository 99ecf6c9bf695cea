"""A derived plane whose folder is damaged: named in one line, and rebuilt by `reindex`.

An operator cut the tantivy index's meta.json short, and in another run overwrote
LanceDB's data files: `index_status`, `sync_indexes --repair` and `reindex` each
ended in a traceback, `reindex` included, though rebuilding from the database is
what it is for; deleting the folder by hand, which the README did not say, was
the only way out.
"""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from console import indexing, selectors, services, wiring

pytestmark = pytest.mark.django_db


def cut_text(planes: Path) -> None:
    (next(planes.glob("text/*/**/meta.json"))).write_text("garbage{")


def overwrite_vectors(planes: Path) -> None:
    files = list(planes.glob("vectors/*.lance/data/*.lance"))
    assert files
    for data in files:
        data.write_bytes(b"\x13" * data.stat().st_size)


@pytest.mark.parametrize(
    ("damage", "plane", "aside"),
    [
        (cut_text, "full-text", "text/*.unreadable-*"),
        (overwrite_vectors, "vector", "vectors.unreadable-*"),
    ],
)
def test_a_damaged_plane_is_named_and_reindex_rebuilds_it(
    planes: Path, damage: Callable[[Path], None], plane: str, aside: str
) -> None:
    if connection.vendor == "postgresql":
        pytest.skip("the PostgreSQL planes are tables, not folders (the embedded pass runs this)")
    project = services.project_create(slug="ops", name="Ops")
    memory = services.memory_create(
        project=project, name="pager-rota", description="The pager rota changes on Mondays"
    )
    indexing.apply_pending()
    wiring.reset()
    damage(planes)
    wiring.reset()  # a process started on the damaged folder

    for command in (["index_status"], ["sync_indexes", "--repair"]):
        with pytest.raises(
            CommandError, match=rf"the {plane} plane at .* cannot be read \("
        ) as said:
            call_command(*command, stdout=StringIO())
        assert "`manage.py reindex` sets a damaged folder aside" in str(said.value), command
    out = StringIO()
    call_command("reindex", stdout=out)
    status = StringIO()
    call_command("index_status", "--fail-on-drift", stdout=status)

    assert f"the {plane} plane at" in out.getvalue() and "set it aside as" in out.getvalue()
    assert len(list(planes.glob(aside))) == 1  # renamed, not deleted
    assert "no drift" in status.getvalue()
    found = selectors.memory_search(query="pager rota", projects=[project.slug])
    assert [h.id for h in found.hits][:1] == [memory.pk]


def test_an_index_worker_started_on_a_damaged_text_plane_says_so_in_one_line(
    planes: Path,
) -> None:
    # It ended in a traceback through tantivy's open (`make run` reindexes first).
    if connection.vendor == "postgresql":
        pytest.skip("the PostgreSQL planes are tables, not folders (the embedded pass runs this)")
    project = services.project_create(slug="ops", name="Ops")
    services.memory_create(project=project, name="pager-rota", description="Mondays")
    indexing.apply_pending()
    wiring.reset()
    cut_text(planes)
    wiring.reset()

    with pytest.raises(CommandError, match=r"the full-text plane at .* cannot be read \(") as said:
        call_command("index_worker", "--keep-writer", "5", stdout=StringIO())
    assert "`manage.py reindex` sets a damaged folder aside" in str(said.value)
