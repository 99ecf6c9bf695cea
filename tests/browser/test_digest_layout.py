"""A project's digest: its two buttons read as two actions, not one box.

"Save edit" (the edit form's) and "Rebuild from the rows" (a form of its own
below) were stacked 1 px apart at 1280 px, their borders touching.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from console import indexing, services
from tests.browser.conftest import log_in


def test_save_edit_and_rebuild_stand_apart(page: Any, user: User) -> None:
    project = services.project_create(slug="billing-api", name="Billing API")
    for name, said in (
        ("deploy-billing", "Tag, wait for CI, promote."),
        ("cents", "Amounts in cents."),
    ):
        services.memory_create(project=project, name=name, description=said)
    indexing.apply_pending()
    log_in(page, user)
    page.goto("/projects/billing-api/")
    page.click("#digest button:has-text('Build now')")
    page.wait_for_selector("#digest-text")

    save = page.locator("#digest button:has-text('Save edit')").bounding_box()
    rebuild = page.locator("#digest button:has-text('Rebuild from the rows')").bounding_box()

    assert save is not None and rebuild is not None
    assert rebuild["y"] - (save["y"] + save["height"]) >= 8
