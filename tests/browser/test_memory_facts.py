"""A memory page's facts column reads one fact a line at desktop size.

The label "Read in full by agents" set the width of the labels' column, so the
dates beside it (Created, Updated, Valid from) wrapped onto two lines each.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from console import services
from tests.browser.conftest import PHONE, log_in


def test_the_dates_of_a_memory_s_facts_fit_one_line(page: Any, user: User) -> None:
    project = services.project_create(slug="billing-api", name="Billing API")
    memory = services.memory_create(
        project=project, name="deploy-billing", description="Tag, wait for CI, promote."
    )
    log_in(page, user)

    page.goto(f"/memories/{memory.pk}/")

    facts = page.locator("#memory-facts")
    labels = facts.locator("dt").all_inner_texts()
    assert "Agent reads" in labels and "Read in full by agents" not in labels
    for label in ("Created", "Updated", "Valid from"):
        value = facts.locator(f"dt:text-is('{label}') + dd")
        line = value.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
        assert value.bounding_box()["height"] < 1.5 * line, label


def test_a_phone_shows_each_retrieval_with_its_query_and_inspect_link(
    page: Any, user: User
) -> None:
    # The history table scrolled sideways at 390 px: the query and its Inspect link
    # began past the right edge, under a scrollbar nothing pointed at.
    project = services.project_create(slug="billing-api", name="Billing API")
    memory = services.memory_create(
        project=project, name="deploy-billing", description="Tag, wait for CI, promote."
    )
    services.retrieval_record(
        kind="recalled", ids=[memory.pk], project="billing-api", agent="claude-code",
        query="how do I deploy billing", budget=300,
    )  # fmt: skip
    page.set_viewport_size(PHONE)
    log_in(page, user)

    page.goto(f"/memories/{memory.pk}/")

    wrap = page.locator(".history .table-wrap")
    assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
    link = page.locator(".history a.inspect-link")
    box = link.bounding_box()
    assert box is not None and box["x"] + box["width"] <= PHONE["width"]
    query = page.locator(".history td.q").bounding_box()
    assert query is not None and query["x"] + query["width"] <= PHONE["width"]
