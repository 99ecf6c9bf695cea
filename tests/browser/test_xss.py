"""Stored XSS in the browser: hostile text renders inert on every page.

Names are slugs, so the payloads sit in what people and agents can write
freely: descriptions, bodies, tags, note titles, project descriptions, agent
names and queries in the retrieval history, plus literal \\x01/\\x02 sentinel
characters. Each page is checked for the injected elements themselves (so a
broken escape fails even though the CSP would also stop it), and the `page`
fixture fails the test on any dialog or CSP report.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from console import selectors, services
from console.models import Memory, Note
from tests.browser.conftest import log_in, shoot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TAGS = "<script>alert('s')</script><img src=x onerror=alert('i')>"
DESCRIPTION = f"boomtown {TAGS} \x01owned\x02"
BODY = f"""# boomtown

{TAGS}

<a href="javascript:alert('a')">raw link</a> [md link](javascript:alert('m'))
[spaced](  javascript:alert('sp')) <svg onload=alert('svg')></svg>
[[<img src=x onerror=alert('w')>]] [[x" onmouseover="alert('q')]]
<iframe src="javascript:alert('f')"></iframe> \x01owned\x02 boomtown
"""

INSPECT_DOM = """() => {
  const all = [...document.querySelectorAll('*')];
  return {
    scripts: [...document.scripts].map(s => s.getAttribute('src')),
    images: document.images.length,
    frames: document.querySelectorAll('iframe, svg, object, embed').length,
    jsLinks: [...document.querySelectorAll('[href], [src], [action]')].filter(el =>
      /^\\s*javascript:/i.test(el.getAttribute('href') || el.getAttribute('src')
        || el.getAttribute('action') || '')).length,
    handlers: all.filter(el => [...el.attributes].some(a => a.name.startsWith('on'))).length,
    sentinels: /[\\x01\\x02]/.test(document.body.innerText),
    marks: [...document.querySelectorAll('mark')].map(m => m.textContent.toLowerCase()),
    pwned: window.__pwned === true,
  };
}"""


def evil() -> tuple[Memory, Note]:
    project = services.project_create(slug="billing-api", description=DESCRIPTION)
    memory = services.memory_create(
        project=project,
        kind="gotcha",
        name="xss-probe",
        description=DESCRIPTION[:150],
        body=BODY,
        tags=["<img src=x onerror=alert('t')>"],
        agent_id="<script>alert('agent')</script>",
    )
    services.favorite_toggle(item=memory, value=True)
    note = services.note_create(
        project=project,
        title=f"boomtown {TAGS}",
        slug="boomtown-note",
        description=DESCRIPTION[:150],
        body=BODY,
    )
    services.favorite_toggle(item=note, value=True)
    pack = selectors.memory_recall(query=f"boomtown {TAGS}", project="billing-api")
    services.retrieval_record(
        kind="recalled",
        ids=[h.id for h in pack.items],
        query=f"boomtown {TAGS}",
        project="billing-api",
        agent="<img src=x onerror=alert('h')>",
    )
    return memory, note


def assert_inert(page: Any, where: str) -> dict[str, Any]:
    found: dict[str, Any] = page.evaluate(INSPECT_DOM)
    assert all(src and src.startswith("/static/") for src in found["scripts"]), (where, found)
    assert found["images"] == 0, where
    assert found["frames"] == 0, where
    assert found["jsLinks"] == 0, where
    assert found["handlers"] == 0, where
    assert not found["pwned"], where
    if "/edit/" not in where and "/supersede/" not in where:
        assert not found["sentinels"], where  # a form field keeps the stored value as is
    assert all(m.startswith("boom") for m in found["marks"]), (where, found["marks"])
    return found


def test_hostile_text_renders_inert_on_every_page(page: Any, user: User) -> None:
    memory, note = evil()
    log_in(page, user)

    page.fill("#id_q", "boomtown")
    page.wait_for_selector("#results .hit")
    assert "<script>" in page.locator("#results").inner_text()  # shown as text
    assert assert_inert(page, "search (htmx)")["marks"]
    page.uncheck("#id_semantic")
    page.wait_for_function("() => location.search.includes('semantic=false')")
    page.wait_for_selector("#results .hit")
    assert_inert(page, "search fts")

    page.keyboard.press("Control+k")
    page.keyboard.type("boomt")
    page.wait_for_function("() => document.getElementById('palette-results').dataset.q === 'boomt'")
    assert page.locator("#palette-results .pal-item").count() == 2
    assert assert_inert(page, "palette")["marks"]
    page.keyboard.press("Escape")

    urls = [
        f"/memories/{memory.pk}/",
        f"/memories/{memory.pk}/edit/",
        f"/memories/{memory.pk}/supersede/",
        f"/memories/{memory.pk}/delete/",
        f"/notes/{note.pk}/",
        "/favorites/",
        "/projects/",
        "/palette/?q=boomtown",
        "/inspect/?mode=recall&query=boomtown&project=billing-api",
        "/inspect/?mode=briefing&project=billing-api",
        "/settings/?preview_project=billing-api",
    ]
    for url in urls:
        page.goto(url)
        assert_inert(page, url)

    page.goto(f"/memories/{memory.pk}/")
    body = page.locator(".body").inner_text()
    assert "<script>alert('s')</script>" in body
    assert page.locator(".body a", has_text="md link").count() == 0  # javascript: is no link
    page.click("#actions >> text=Delete…")
    page.wait_for_selector("#confirm-slot .confirm")
    assert_inert(page, "delete confirm (htmx)")
    shoot(page, "xss-memory")
