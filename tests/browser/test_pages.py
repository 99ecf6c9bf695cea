"""Every page, light and dark, at 1440x900 and 390x844: axe-core finds nothing,
nothing scrolls sideways, and a screenshot of each lands in
test-artifacts/screenshots/ (gitignored) for a person to look at.

The demo data (console/demo_data) fills the pages; set SCREENSHOT_DEMO=0 for
the small seed only.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User

from console import services
from console.models import Memory, Note, Project
from tests.browser.conftest import DESKTOP, PHONE, SCREENSHOTS, Watch, axe, log_in, overflow
from tests.browser.test_second_pass import CODE_BODY, world

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"desktop": DESKTOP, "phone": PHONE}
SCHEMES = ("light", "dark")


def data() -> dict[str, str]:
    """The demo data (or the small seed) plus what every page state needs; name -> url."""
    if os.environ.get("SCREENSHOT_DEMO", "1") == "1":
        from console.demo import demo_load

        demo_load()
        project = Project.objects.get(slug="billing-api")
        services.memory_create(
            project=project,
            kind="runbook",
            name="rollback-from-the-deploy-host",
            description="Roll back from the deploy host with kubectl",
            body=CODE_BODY,
        )
    else:
        world()
        project = Project.objects.get(slug="billing-api")
    active = Memory.objects.filter(project=project, invalid_at__isnull=True)
    memory = active.filter(body__contains="[[").order_by("name").first() or active.first()
    assert memory is not None
    services.retrieval_record(
        kind="recalled", ids=[memory.pk], project=project.slug, agent="claude-code"
    )
    code = active.filter(body__contains="```").first() or memory
    archived = active.exclude(pk__in=[memory.pk, code.pk]).order_by("name").last()
    assert archived is not None
    services.memory_archive(memory=archived)
    superseded = Memory.objects.filter(superseded_by__isnull=False).first()
    if superseded is None:
        other = active.exclude(pk__in=[memory.pk, code.pk, archived.pk]).first()
        assert other is not None
        services.memory_supersede(memory=other, description="A newer version")
        superseded = other
    note = Note.objects.filter(project=project).first() or services.note_create(
        project=project, title="Deploy notes", body="# Steps\n\n1. Ship"
    )
    # The longest unbroken words the forms take: nothing may scroll sideways for them.
    unbroken = services.memory_create(
        project=project, kind="fact", name="unbroken-" + "e" * 100, description="e" * 150,
        tags=["t" * 64],
    )  # fmt: skip
    long_note = services.note_create(project=project, title="T" * 200, description="d" * 150)
    return {
        "search-empty": "/",
        "search": "/?q=deploy+webhook",
        "search-none": "/?q=zzqxv+blorp",
        "memory": f"/memories/{memory.pk}/",
        "memory-code": f"/memories/{code.pk}/",
        "memory-archived": f"/memories/{archived.pk}/",
        "memory-superseded": f"/memories/{superseded.pk}/",
        "edit": f"/memories/{memory.pk}/edit/",
        "supersede": f"/memories/{memory.pk}/supersede/",
        "delete": f"/memories/{memory.pk}/delete/",
        "new-memory": "/memories/new/?project=billing-api",
        "note": f"/notes/{note.pk}/",
        "note-edit": f"/notes/{note.pk}/edit/",
        "memory-unbroken": f"/memories/{unbroken.pk}/",
        "note-unbroken": f"/notes/{long_note.pk}/",
        "note-unbroken-edit": f"/notes/{long_note.pk}/edit/",
        "new-note": "/notes/new/?project=billing-api",
        "favorites": "/favorites/",
        "projects": "/projects/",
        "project": "/projects/billing-api/",
        "project-filtered": "/projects/billing-api/?kind=runbook&archived=on&sort=name",
        "settings": "/settings/?preview_project=billing-api",
        "settings-preview": "/settings/preview/?preview_project=billing-api",
        "inspector": "/inspect/",
        "inspector-recall": "/inspect/?mode=recall&query=deploy+webhooks&project=billing-api",
        "inspector-global": "/inspect/?mode=recall&query=deploy",
        "inspector-briefing": "/inspect/?mode=briefing&project=billing-api&query=stripe",
        "palette-page": "/palette/?q=stri",
        "not-found": "/memories/01NOPE0000000000000000000/",
    }


def states(page: Any, urls: dict[str, str]) -> dict[str, Callable[[], None]]:
    """Name -> how to put the page in that state (beyond loading a URL)."""

    def edit_errors() -> None:
        page.goto(urls["edit"])
        page.fill("#id_name", "Bad Name")
        page.fill("#id_importance", "3")
        page.click("#memory-form button[type=submit]")
        page.wait_for_selector(".field-error")

    def settings_errors() -> None:
        page.goto(urls["settings"])
        page.fill("#id_briefing_config-budget", "0")
        page.locator("#err-briefing_config-budget").wait_for(state="visible")

    def palette(query: str) -> Callable[[], None]:
        def run() -> None:
            page.goto("/")
            page.keyboard.press("Control+k")
            if query:
                page.keyboard.type(query)
                page.wait_for_function(
                    "q => document.getElementById('palette-results').dataset.q === q", arg=query
                )
            else:
                page.locator("#palette-results [role=option]").first.wait_for()

        return run

    def goto(url: str) -> Callable[[], None]:
        return lambda: page.goto(url)

    found: dict[str, Callable[[], None]] = {name: goto(url) for name, url in urls.items()}
    found.update(
        {
            "edit-errors": edit_errors,
            "settings-errors": settings_errors,
            "palette": palette("stri"),
            "palette-empty": palette(""),
        }
    )
    return found


def test_every_page_has_no_axe_violations_in_both_themes_and_sizes(
    page: Any, user: User, browser: Any, live_server: Any, watch: Watch
) -> None:
    urls = data()
    watch.leave_unsaved = True  # the form-with-errors states are left for the next page
    anonymous = browser.new_context(base_url=live_server.url, viewport=DESKTOP)
    login = anonymous.new_page()
    log_in(page, user)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: dict[str, list[str]] = {}
    checked = 0
    for size, viewport in SIZES.items():
        page.set_viewport_size(viewport)
        login.set_viewport_size(viewport)
        for name, show in [("login", lambda: login.goto("/login/")), *states(page, urls).items()]:
            tab = login if name == "login" else page
            show()
            for scheme in SCHEMES:
                tab.emulate_media(color_scheme=scheme)
                key = f"{name}-{size}-{scheme}"
                problems[key] = axe(tab)
                wide = overflow(tab)
                if wide:
                    problems[key].append(f"scrolls sideways by {wide} px")
                modal = name.startswith("palette") and name != "palette-page"
                tab.screenshot(path=str(SCREENSHOTS / f"{key}.png"), full_page=not modal)
                checked += 1
            tab.emulate_media(color_scheme="light")
    anonymous.close()
    found = {key: lines for key, lines in problems.items() if lines}
    assert checked == 2 * 2 * (len(urls) + 5)
    assert found == {}, "\n".join(f"{k}: {line}" for k, v in found.items() for line in v)


def test_the_api_docs_page_draws_under_the_console_policy(page: Any, watch: Watch) -> None:
    # The docs page was sent without a Content-Security-Policy at all.
    page.goto("/api/v1/docs")
    page.wait_for_selector("#swagger-ui .opblock-summary-path[data-path='/api/v1/recall']")

    sent = page.request.get("/api/v1/docs").headers.get("content-security-policy", "")
    assert "script-src 'self';" in sent
    assert watch.csp == []
