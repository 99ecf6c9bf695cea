"""The demo data: loads through the services, links, supersedes, indexes cleanly."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from console import demo, indexing
from console.models import Edge, Memory, Note, Project

pytestmark = pytest.mark.django_db


def load() -> str:
    out = StringIO()
    call_command("demo", "--if-empty", stdout=out)
    return out.getvalue()


def test_demo_loads_projects_memories_links_and_notes(planes: Path) -> None:
    out = load()

    assert out.startswith("loaded 4 projects, 49 memories (1 superseded, 2 favorites), 4 notes")
    assert dict(Project.objects.values_list("slug", "isolation")) == {
        "billing-api": "open",
        "mobile-app": "open",
        "payroll": "confidential",
        "secret-lab": "sealed",
    }
    assert 40 <= Memory.objects.count() <= 60
    assert Memory.objects.filter(project=None, kind="constraint").count() >= 3
    assert Memory.objects.filter(favorite=True).count() == 2
    assert Note.objects.filter(project=None).count() == 2
    assert Note.objects.exclude(project=None).count() == 2


def test_demo_has_a_superseded_decision(planes: Path) -> None:
    load()

    old = Memory.objects.get(name="api-versioning-in-url")
    assert old.invalid_at is not None
    assert old.superseded_by is not None and old.superseded_by.name == "api-versioning-header"
    assert old.superseded_by.invalid_at is None


def test_demo_ages_count_back_from_the_load_and_stars_come_from_the_file(planes: Path) -> None:
    load()

    deploy = Memory.objects.get(name="deploy-billing")  # "days_ago": 120 in the file
    assert timedelta(days=120) <= timezone.now() - deploy.created < timedelta(days=120, hours=1)
    assert deploy.valid_from == deploy.created == deploy.updated
    assert deploy.source == "user_stated"
    starred = set(Memory.objects.filter(favorite=True).values_list("name", flat=True))
    assert starred == {"never-force-push-main", "deploy-billing"}


def test_demo_wikilinks_become_edges(planes: Path) -> None:
    load()

    deploy = Memory.objects.get(name="deploy-billing")
    targets = set(
        Edge.objects.filter(src=deploy, origin="wikilink").values_list("dst__name", flat=True)
    )
    assert targets == {"deploy-freeze-fridays", "smoke-tests", "rollback-billing"}
    assert Edge.objects.count() >= 10


def test_every_demo_link_resolves(planes: Path) -> None:
    load()

    memories = [s for s in demo.demo_records() if s["type"] == "memory"]
    assert len(memories) == 50  # 49 and the replacement of the superseded one
    for spec in memories:
        source = Memory.objects.get(name=spec["name"])
        assert source.out_edges.count() == spec["body"].count("[["), spec["name"]


def test_demo_is_indexed_without_drift(planes: Path) -> None:
    load()

    status = indexing.status()
    assert status.drift == 0
    assert status.pending == 0
    assert status.rows == Memory.objects.count() + Note.objects.count()


def test_if_empty_makes_a_second_load_a_no_op(planes: Path) -> None:
    load()
    before = (Memory.objects.count(), Note.objects.count(), Edge.objects.count())

    out = load()

    assert out.strip() == "memories exist already: demo data not loaded"
    assert (Memory.objects.count(), Note.objects.count(), Edge.objects.count()) == before


def test_loading_twice_without_the_flag_is_refused(planes: Path) -> None:
    load()

    with pytest.raises(CommandError, match="already loaded"):
        call_command("demo", stdout=StringIO())
