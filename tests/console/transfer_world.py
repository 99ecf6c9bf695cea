"""The projects the import and export tests share (tests/console/test_transfer*.py).

alpha holds two linked memories and a note, secret a memory, beta nothing, and one
memory is global; uploads land in the test's own folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from console import indexing, services
from console.models import Project


@pytest.fixture(name="_uploads", autouse=True)
def uploads_fixture(settings: Any, tmp_path: Path) -> None:
    settings.DATA_DIR = tmp_path  # the kept uploads land in the test's folder


@pytest.fixture(name="world")
def world_fixture(planes: Path) -> dict[str, Project]:
    alpha = services.project_create(slug="alpha")
    secret = services.project_create(slug="secret")
    services.project_create(slug="beta")
    a = services.memory_create(project=alpha, name="deploy-steps", description="Deploy on Fridays")
    b = services.memory_create(project=alpha, name="rollback", description="Roll back with git")
    services.association_write(src=a, dst=b, rel="relates_to")
    services.note_create(project=alpha, title="Runbook", body="Ask before you deploy.")
    services.memory_create(project=secret, name="vault-code", description="The code is 1234")
    services.memory_create(project=None, name="house-style", description="Write plainly")
    indexing.apply_pending()
    return {p.slug: p for p in Project.objects.all()}
