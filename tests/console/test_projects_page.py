"""The Projects page names what its second count counts.

Its column said "Archived" over a count of every memory no longer valid, the
superseded ones too: a project with one archived memory and one superseded one
showed "Archived 2", while the project's own page said "2 archived or superseded
not shown".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import Client

from console import services

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
