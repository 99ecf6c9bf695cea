"""The round trip a person makes: export a project from its page, import the file into
another project (preview, then import), at desktop and phone sizes; axe finds nothing
on the import page and nothing scrolls sideways."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from console import services
from console.models import Memory, Note
from tests.browser.conftest import PHONE, Watch, axe, log_in, overflow

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": {"width": 1280, "height": 800}, "phone": PHONE}


@pytest.mark.parametrize("size", SIZES)
def test_export_a_project_then_import_it_into_another(
    page: Any, user: User, watch: Watch, tmp_path: Path, size: str
) -> None:
    alpha = services.project_create(slug="alpha")
    beta = services.project_create(slug="beta")
    for n in range(5):
        services.memory_create(project=alpha, name=f"fact-{n}", description=f"Fact number {n}")
    services.note_create(project=alpha, title="Runbook", body="<b>bold</b> claims")
    page.set_viewport_size(SIZES[size])
    log_in(page, user)

    page.goto("/projects/alpha/")
    with page.expect_download() as download:
        page.click("[data-export]")
    saved = tmp_path / download.value.suggested_filename
    download.value.save_as(saved)
    assert saved.name.startswith("recall-alpha-") and saved.suffix == ".jsonl"

    page.goto("/projects/beta/")
    page.click("[data-import]")
    page.set_input_files("#import-file", str(saved))
    page.click("form[enctype] button[type=submit]")
    page.wait_for_selector("[data-preview]")
    assert page.inner_text("[data-new-memories]") == "5"
    assert page.inner_text("[data-new-notes]") == "1"
    assert axe(page) == [] and overflow(page) == 0
    assert Memory.objects.filter(project=beta).count() == 0  # the preview wrote nothing

    page.click("[data-preview] button[type=submit]")
    page.wait_for_url("**/projects/beta/")
    assert "Imported 5 memories and 1 note" in page.inner_text("#messages")
    assert Memory.objects.filter(project=beta).count() == 5
    assert Note.objects.filter(project=beta).count() == 1
    assert Memory.objects.filter(project=alpha).count() == 5  # the original stays
    assert overflow(page) == 0


def test_refused_lines_are_listed_by_their_own_numbers_inside_the_box(
    page: Any, user: User, watch: Watch, tmp_path: Path
) -> None:
    # The refused lines were an <ol> in the warning box: its markers (1. 2. 3.) stood
    # outside the box's padding, at the phone's left edge, and beside "bad.jsonl:3"
    # said a number that was not the line's.
    services.project_create(slug="beta")
    bad = tmp_path / "bad.jsonl"
    good = '{"type": "memory", "kind": "fact", "name": "ok", "description": "fine"}'
    bad.write_text('{not json\n{"type": "widget"}\n' + good + "\n")
    page.set_viewport_size(PHONE)
    log_in(page, user)
    page.goto("/projects/beta/import/")
    page.set_input_files("#import-file", str(bad))
    page.click("form[enctype] button[type=submit]")
    page.wait_for_selector("[data-errors]")
    assert page.inner_text("[data-bad]") == "2"
    markers = page.eval_on_selector_all(
        "[data-errors] li",
        "items => items.map(li => getComputedStyle(li).display === "
        "'list-item' && getComputedStyle(li).listStyleType !== 'none')",
    )
    assert markers == [False, False]
    assert page.inner_text("[data-errors] li:first-child").startswith("bad.jsonl:1: not JSON")
    assert axe(page) == [] and overflow(page) == 0
