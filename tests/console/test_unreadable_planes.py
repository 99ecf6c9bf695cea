"""A derived plane whose folder is damaged: named in one line, and rebuilt by `reindex`.

An operator cut the tantivy index's meta.json short, and in another run overwrote
LanceDB's data files: `index_status`, `sync_indexes --repair` and `reindex` each
ended in a traceback, `reindex` included, though rebuilding from the database is
what it is for; deleting the folder by hand, which the README did not say, was
the only way out.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from console import indexing, selectors, services, wiring
from console.models import Memory
from recall.errors import IndexUnavailable
from tests.console.api_world import build_world, call

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

    for command in (["index_status"], ["sync_indexes"], ["sync_indexes", "--repair"]):
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


@pytest.mark.django_db(transaction=True)
def test_a_damaged_plane_table_gets_advice_for_a_table(planes: Path) -> None:
    """On PostgreSQL the planes are tables: index_status, sync_indexes and reindex
    told the operator to let reindex set "a damaged folder" aside, and reindex then
    failed asking whether the database was up."""
    if connection.vendor != "postgresql":
        pytest.skip("the embedded planes are folders (the test above runs on them)")
    services.memory_create(project=services.project_create(slug="ops"), name="pager-rota")
    indexing.apply_pending()
    table = wiring.text_index().table  # type: ignore[attr-defined]
    with connection.cursor() as cur:
        cur.execute(f'ALTER TABLE "{table}" RENAME COLUMN fingerprint TO fingerprint_gone')
    try:
        for command in (["index_status"], ["sync_indexes"], ["reindex"]):
            with pytest.raises(CommandError, match=r"the full-text plane cannot be read") as said:
                call_command(*command, stdout=StringIO())
            assert "the plane is a table in the database" in str(said.value), command
            assert "folder" not in str(said.value), command
    finally:
        with connection.cursor() as cur:
            cur.execute(f'ALTER TABLE "{table}" RENAME COLUMN fingerprint_gone TO fingerprint')


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


def test_a_server_on_a_damaged_text_plane_takes_writes_and_answers_by_meaning(
    planes: Path, monkeypatch: Any
) -> None:
    # Every write answered 503 after committing (its dedup hint built the engine,
    # which opened the damaged folder), an Idempotency-Key write could not be made
    # at all, and every Recall and Search answered 503 though the vectors were whole.
    if connection.vendor == "postgresql":
        pytest.skip("the PostgreSQL planes are tables, not folders (the embedded pass runs this)")
    world = build_world()
    wiring.reset()
    cut_text(planes)
    wiring.reset()  # a server started on the damaged folder
    alpha = world.client("alpha")

    written = [
        call(
            alpha,
            "post",
            "/memories",
            {
                "project": "alpha",
                "name": f"wombat-{n}",
                "kind": "fact",
                "body": f"The wombat burrow {n}",
            },
        )
        for n in range(2)
    ]
    keyed = alpha.post(
        "/api/v1/memories",
        json.dumps({"project": "alpha", "name": "keyed", "kind": "fact", "body": "Keyed write"}),
        content_type="application/json",
        HTTP_IDEMPOTENCY_KEY="k-1",
    )
    recalled = call(alpha, "post", "/recall", {"query": "albatross cache", "project": "alpha"})
    searched = call(alpha, "get", "/search", {"q": "albatross cache"})

    assert [r.status_code for r in written] == [201, 201] and keyed.status_code == 201
    assert Memory.objects.filter(name__in=["wombat-0", "wombat-1", "keyed"]).count() == 3
    assert recalled.status_code == 200, recalled.content
    assert world.memories["alpha"].pk in [i["id"] for i in recalled.json()["items"]]
    assert any("full-text" in w or "fts" in w for w in recalled.json()["warnings"])
    assert searched.status_code == 200, searched.content
    assert world.memories["alpha"].pk in [h["id"] for h in searched.json()["hits"]]

    call_command("reindex", stdout=StringIO())  # mended: the same process reads it again
    found = call(alpha, "get", "/search", {"q": "wombat burrow"})
    assert {h["id"] for h in found.json()["hits"]} >= {r.json()["memory"]["id"] for r in written}


def test_a_dedup_hint_that_cannot_be_made_leaves_the_kept_write_a_201(
    planes: Path, monkeypatch: Any
) -> None:
    # The hint runs after the write commits: its failure answered 503 for a write
    # that was kept, and the agent's retry then met its own memory.
    world = build_world()

    def unreadable(**_: Any) -> None:
        raise IndexUnavailable("cannot open the vector table")

    monkeypatch.setattr(selectors, "memory_dedup_hint", unreadable)
    r = call(world.client("alpha"), "post", "/memories", {"project": "alpha", "name": "kept"})

    assert r.status_code == 201, r.content
    assert r.json()["memory"]["name"] == "kept"
    assert Memory.objects.filter(name="kept").exists()
