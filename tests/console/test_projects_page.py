"""The Projects page names what its second count counts.

Its column said "Archived" over a count of every memory no longer valid, the
superseded ones too: a project with one archived memory and one superseded one
showed "Archived 2", while the project's own page said "2 archived or superseded
not shown".
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.test import Client

from console import indexing, services

pytestmark = pytest.mark.django_db


def test_the_projects_page_counts_archived_and_superseded_under_one_name(
    admin_client: Client, planes: Path
) -> None:
    project = services.project_create(slug="billing-api", name="Billing API")
    old = services.memory_create(project=project, name="old-rule", description="Cents")
    services.memory_supersede(memory=old, description="Integer cents")
    gone = services.memory_create(project=project, name="gone", description="Floats")
    services.memory_archive(memory=gone)

    page = admin_client.get("/projects/").content.decode()

    assert '<th scope="col" class="num">Archived or superseded</th>' in page
    assert '<td class="num" data-label="Archived or superseded">2</td>' in page


def test_the_archived_filters_say_they_bring_back_the_superseded_too(
    admin_client: Client, planes: Path
) -> None:
    # "Include archived" brought back superseded memories too, beside a hint that
    # counted "archived or superseded matches": the label named half of them.
    project = services.project_create(slug="billing-api", name="Billing API")
    old = services.memory_create(project=project, name="old-rule", description="Cents only")
    services.memory_supersede(memory=old, description="Integer cents only")
    indexing.apply_pending()

    listed = admin_client.get("/projects/billing-api/?archived=on").content.decode()
    searched = admin_client.get("/?q=cents").content.decode()

    assert "Include archived and superseded</label>" in listed
    assert f'href="/memories/{old.pk}/"' in listed  # what the box brings back
    assert "Include archived and superseded</label>" in searched
    assert re.search(r"1 archived or superseded match hidden · <a [^>]*>Show them</a>", searched)
