"""A person's walk through the console at 1366x800 and 390x844: what tripped them.

Long unbroken text from agents and people (a project's name, a digest line, a
refused setting quoted back) widened pages on a phone; a markdown table that
scrolls sideways took no focus; the palette's Enter opened a memory when the
person had typed the name of a command.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from console import digesting, indexing, services
from tests.browser.conftest import PHONE, axe, log_in, overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDE_TABLE = "| " + "h" * 300 + " | x |\n|---|---|\n| " + "v" * 400 + " | y |\n"


def test_a_project_named_in_one_long_word_keeps_the_projects_page_inside_a_phone(
    page: Any, user: User
) -> None:
    services.project_create(slug="imported", name="N" * 200, description="D" * 500)
    log_in(page, user)
    page.set_viewport_size(PHONE)
    page.goto("/projects/")

    assert overflow(page) == 0


def test_a_digest_line_in_one_long_word_keeps_the_project_page_inside_a_phone(
    page: Any, user: User
) -> None:
    project = services.project_create(slug="billing-api")
    services.memory_create(
        project=project, kind="fact", name="price-keys", description="Cache keys embed a version."
    )
    indexing.apply_pending()
    digesting.rebuild("billing-api")
    services.digest_edit(project="billing-api", text="w" * 3000, by="ada")
    log_in(page, user)
    page.set_viewport_size(PHONE)
    page.goto("/projects/billing-api/")

    assert page.locator(".digest-sentences li").count() == 1
    assert overflow(page) == 0


def test_a_refused_setting_quoted_back_leaves_its_table_inside_the_card_on_a_phone(
    page: Any, user: User
) -> None:
    log_in(page, user)
    page.set_viewport_size(PHONE)
    page.goto("/settings/")
    page.fill("#id_briefing_config-tag", "x" * 64 + "!" * 200)
    page.locator("#err-briefing_config-tag").wait_for(state="visible")

    widths = page.evaluate(
        "() => { const w = document.querySelector('#section-briefing_config .table-wrap');"
        " return [w.scrollWidth, w.clientWidth]; }"
    )
    assert widths[0] <= widths[1], "the settings table scrolls sideways, its help cut short"


def test_a_markdown_table_wider_than_the_page_is_reached_by_keyboard(page: Any, user: User) -> None:
    project = services.project_create(slug="billing-api")
    memory = services.memory_create(
        project=project, kind="reference", name="price-table", body="Prices:\n\n" + WIDE_TABLE
    )
    log_in(page, user)
    page.goto(f"/memories/{memory.pk}/")

    table = page.locator(".markdown table")
    assert table.get_attribute("tabindex") == "0"
    assert page.evaluate("() => document.querySelector('.markdown table').tagName") == "TABLE"
    assert table.get_attribute("role") is None  # still read as a table
    assert axe(page) == []


def test_typing_a_commands_name_in_the_palette_and_enter_runs_it(page: Any, user: User) -> None:
    project = services.project_create(slug="billing-api")
    services.memory_create(
        project=project,
        kind="fact",
        name="release-notes",
        description="Every new release gets a note in the changelog.",
    )
    indexing.apply_pending()
    log_in(page, user)
    page.keyboard.press("Control+k")
    page.keyboard.type("new note")
    page.wait_for_function(
        "() => document.getElementById('palette-results').dataset.q === 'new note'"
    )
    titles = page.locator("#palette-results [role=option] .pal-title").all_inner_texts()
    assert titles[0] == "New note" and "release-notes" in titles  # the memory stays listed

    page.keyboard.press("Enter")
    page.wait_for_url("**/notes/new/")
