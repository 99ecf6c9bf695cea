"""Text that would reverse or hide itself (bidi overrides and isolates, zero-width
characters) shows on every console page as `⟨U+202E⟩`, never as the characters
themselves; the stored text, and the edit form's boxes, keep them."""

from __future__ import annotations

from html import unescape
from pathlib import Path

import pytest
from django.test import Client

from console import indexing, services
from console.models import Memory, Project

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
RLO, PDF, ZWSP, LRI, PDI = "\u202e", "\u202c", "\u200b", "\u2066", "\u2069"
HIDDEN = (RLO, PDF, ZWSP, LRI, PDI, "\ufeff", "\u2060")
DESCRIPTION = f"Refund the {RLO}exe.fdp{PDF} invoices twice"
BODY = (
    f"Run {ZWSP}the refund{ZWSP} job.\n\n`code {LRI}x{PDI}` and a \ufeffmark\u2060.\n\n"
    f'![al{RLO}t](https://example.com/a.png) [link](https://example.com "ti{RLO}tle")'
)


@pytest.fixture
def memory(planes: Path) -> Memory:
    project: Project = services.project_create(slug="billing-api", name=f"Billing {RLO}API")
    made = services.memory_create(
        project=project, kind="gotcha", name="refund-trick", description=DESCRIPTION, body=BODY
    )
    indexing.apply_pending()
    return made


def _shown(html: str) -> str:
    for char in HIDDEN:
        assert char not in html, f"U+{ord(char):04X} is shown as it is stored"
    return html


def test_every_page_showing_memory_text_shows_each_hidden_character_as_its_code_point(
    admin_client: Client, memory: Memory
) -> None:
    pages = {
        "detail": admin_client.get(f"/memories/{memory.pk}/"),
        "list": admin_client.get("/projects/billing-api/"),
        "search": admin_client.get("/", {"q": "refund invoices", "semantic": "false"}, **HX),
        "palette": admin_client.get("/palette/", {"q": "refund"}, **HX),
        "recent": admin_client.get("/palette/", {"q": "", "recent": memory.pk}, **HX),
        "inspector": admin_client.get(
            "/inspect/", {"mode": "recall", "query": "refund invoices", "project": "billing-api"}
        ),
        "history": admin_client.get(f"/memories/{memory.pk}/revisions/"),
        "projects": admin_client.get("/projects/"),
    }

    for name, response in pages.items():
        assert response.status_code == 200, name
        html = _shown(response.content.decode())
        assert "refund" in html or name == "projects", name
        if name in ("detail", "list", "search", "palette", "history"):
            assert "⟨U+202E⟩exe.fdp⟨U+202C⟩" in html, name
    for name in ("list", "projects"):
        assert "Billing ⟨U+202E⟩API" in pages[name].content.decode(), name
    detail = pages["detail"].content.decode()
    assert "Run ⟨U+200B⟩the refund⟨U+200B⟩ job." in detail
    assert "<code>code ⟨U+2066⟩x⟨U+2069⟩</code>" in detail
    assert "⟨U+FEFF⟩mark⟨U+2060⟩" in detail
    assert "[image: al⟨U+202E⟩t]" in detail and 'title="ti⟨U+202E⟩tle"' in detail


def test_the_edit_form_keeps_the_stored_text_and_says_what_it_holds(
    admin_client: Client, memory: Memory
) -> None:
    html = admin_client.get(f"/memories/{memory.pk}/edit/").content.decode()

    assert "data-disguising" in html
    assert "U+202C, U+202E" in html.split("data-disguising", 1)[1].split("</p>", 1)[0]
    assert (
        unescape(html.split('name="description"', 1)[1].split('value="', 1)[1].split('"')[0])
        == DESCRIPTION
    )
    assert BODY in unescape(html.split("</textarea>", 1)[0])
    Memory.objects.filter(pk=memory.pk).update(description="plain", body="plain")
    plain = admin_client.get(f"/memories/{memory.pk}/edit/").content.decode()
    assert "data-disguising" not in plain


@pytest.mark.parametrize(
    "text",
    ["👨\u200d👩\u200d👧 family", "می\u200cخواهم", "plain ascii"],
)
def test_a_joiner_that_joins_a_script_is_shown_as_written(
    admin_client: Client, planes: Path, text: str
) -> None:
    made = services.memory_create(project=None, kind="fact", name="joined", description=text)

    html = admin_client.get(f"/memories/{made.pk}/").content.decode()

    assert text in html and "⟨U+" not in html
