"""Notes written and edited in the console (console/views/memories.py `note_new`,
`note_edit`): before, a person could only read a note there; writing or fixing
one took the API or the Django admin."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console import indexing, selectors, services
from console.models import Note, Project, ProjectMember

pytestmark = pytest.mark.django_db
HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver/"}


@pytest.fixture
def project(planes: Path) -> Project:
    return services.project_create(slug="billing-api", name="Billing API")


@pytest.fixture
def note(project: Project) -> Note:
    made = services.note_create(
        project=project,
        title="Invoice retries",
        description="How failed invoices are retried",
        body="Retries run at **02:00** UTC by the quokka gate; see [[retry-policy]].",
        tags=["billing"],
    )
    indexing.apply_pending()
    return made


def fields(note: Note, **changed: Any) -> dict[str, Any]:
    data = {"title": note.title, "description": note.description, "body": note.body,
            "tags": ", ".join(note.tags), "source_url": note.source_url}  # fmt: skip
    return {**data, **changed}


def found(words: str) -> list[str]:
    indexing.apply_pending()
    return [h.id for h in selectors.memory_search(query=words, semantic=False).hits]


def test_a_note_written_in_the_console_is_searchable_at_once(
    admin_client: Client, project: Project
) -> None:
    form = admin_client.get("/notes/new/", {"project": project.slug}).content.decode()
    assert '<option value="billing-api" selected>' in form
    assert '<a class="button" href="/projects/billing-api/">Cancel</a>' in form

    response = admin_client.post("/notes/new/", {
        "project": project.slug, "title": "Dunning schedule", "description": "",
        "body": "Reminders go out on day 3, 7 and 14.", "tags": "billing, Dunning",
        "source_url": "https://wiki.example.org/dunning",
    }, **HX)  # fmt: skip

    made = Note.objects.get(title="Dunning schedule")
    assert response["HX-Redirect"] == f"/notes/{made.pk}/"
    assert (made.project, made.slug, made.tags) == (
        project,
        "dunning-schedule",
        ["billing", "dunning"],
    )
    assert found("reminders day") == [made.pk]
    page = admin_client.get(f"/notes/{made.pk}/").content.decode()
    assert "Created Dunning schedule." in page
    assert f'href="/notes/{made.pk}/edit/"' in page


def test_a_new_notes_slug_reads_its_title_with_the_accents_off(admin_client: Client) -> None:
    # "Hermès café notes" was `herm-s-caf-notes`; search folds accents the same way.
    response = admin_client.post("/notes/new/", {"title": "Hermès café notes"}, **HX)

    assert "HX-Redirect" in response
    assert Note.objects.get(title="Hermès café notes").slug == "hermes-cafe-notes"


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Развертывание сервиса", "razvertyvanie-servisa"),
        ("Ελληνικά σημειώσεις", "ellinika-simeioseis"),
        ("部署手順", "bushushoushun"),
        ("🚀 launch", "rocket-launch"),
        ("---", "untitled"),
    ],
)
def test_a_title_in_another_script_gets_a_slug_spelled_in_latin_letters(
    project: Project, title: str, slug: str
) -> None:
    # Every note titled in Cyrillic, Greek or Chinese was `untitled`, `untitled-2`, ...
    assert services.note_create(project=project, title=title).slug == slug


def test_notes_of_one_title_get_slugs_of_their_own(project: Project) -> None:
    made = [services.note_create(project=project, title="Webhook runbook") for _ in range(3)]
    elsewhere = services.note_create(project=None, title="Webhook runbook")

    assert [n.slug for n in made] == ["webhook-runbook", "webhook-runbook-2", "webhook-runbook-3"]
    assert elsewhere.slug == "webhook-runbook"  # another project's (here the inbox)


def test_an_edit_saves_reaches_the_index_and_keeps_the_slug(
    admin_client: Client, note: Note
) -> None:
    form = admin_client.get(f"/notes/{note.pk}/edit/").content.decode()
    assert 'value="Invoice retries"' in form and "Retries run at **02:00** UTC" in form

    body = "Retries moved to **04:00** UTC after the\r\nbatch window change."
    response = admin_client.post(f"/notes/{note.pk}/edit/", fields(note, body=body), **HX)

    assert response["HX-Redirect"] == f"/notes/{note.pk}/"
    note.refresh_from_db()
    assert note.body == body.replace("\r\n", "\n") and note.slug == "invoice-retries"
    assert found("batch window") == [note.pk]
    assert found("quokka") == []
    assert "Saved Invoice retries." in admin_client.get(f"/notes/{note.pk}/").content.decode()


def test_a_save_over_a_newer_save_is_refused_and_the_text_kept(
    admin_client: Client, note: Note
) -> None:
    page = admin_client.get(f"/notes/{note.pk}/edit/").content.decode()
    opened = re.search(r'name="seen" value="([^"]+)"', page)
    assert opened is not None
    services.note_update(note=note, body="Another tab's body.")

    mine = fields(note, body="My body, typed in the first tab.", seen=opened.group(1))
    response = admin_client.post(f"/notes/{note.pk}/edit/", mine, **HX)

    html = response.content.decode()
    assert response.status_code == 200 and "This note was saved again" in html
    assert "with the saved version (the link below)" in html
    assert "My body, typed in the first tab." in html
    note.refresh_from_db()
    assert note.body == "Another tab's body."
    again = re.search(r'name="seen" value="([^"]+)"', html)
    assert again is not None  # told once: saving again is deliberate
    admin_client.post(f"/notes/{note.pk}/edit/", {**mine, "seen": again.group(1)}, **HX)
    note.refresh_from_db()
    assert note.body == "My body, typed in the first tab."


@pytest.mark.parametrize(
    ("changed", "field", "said"),
    [
        ({"source_url": "javascript:alert(1)"}, "source_url", "is not an http(s) URL"),
        ({"tags": "ok, " + "x" * 65}, "tags", "A tag is at most 64 characters"),
        ({"title": ""}, "title", "Title is required."),
        ({"description": "d" * 151}, "description", "at most 150 characters"),
    ],
)
def test_bad_input_is_refused_at_its_field_and_changes_nothing(
    admin_client: Client, note: Note, changed: dict[str, str], field: str, said: str
) -> None:
    response = admin_client.post(f"/notes/{note.pk}/edit/", fields(note, **changed), **HX)

    html = response.content.decode()
    assert response.status_code == 200
    assert re.search(rf'id="id_{field}_error">[^<]*{re.escape(said)}', html), html
    assert Note.objects.get(pk=note.pk).updated == note.updated


def test_a_hostile_title_is_shown_as_text(admin_client: Client, note: Note) -> None:
    title = '<img src=x onerror="alert(1)">Retries'
    admin_client.post(f"/notes/{note.pk}/edit/", fields(note, title=title), **HX)

    html = admin_client.get(f"/notes/{note.pk}/").content.decode()
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;Retries" in html


def test_only_people_who_see_the_project_may_write_there(
    client: Client, note: Note, project: Project
) -> None:
    outsider = User.objects.create_user("pat", password=None)
    client.force_login(outsider)

    assert client.get(f"/notes/{note.pk}/edit/").status_code == 404
    assert client.post(f"/notes/{note.pk}/edit/", fields(note, body="x")).status_code == 404
    refused = client.post("/notes/new/", {"project": project.slug, "title": "Sneaky"}, **HX)
    assert "Project must be one of the choices offered" in refused.content.decode()
    assert not Note.objects.filter(title="Sneaky").exists()

    ProjectMember.objects.create(user=outsider, project=project)
    response = client.post(f"/notes/{note.pk}/edit/", fields(note, body="Granted now."), **HX)
    assert response["HX-Redirect"] == f"/notes/{note.pk}/"


def test_note_writes_need_a_login_and_the_csrf_token(note: Note) -> None:
    anonymous = Client()
    assert anonymous.post(f"/notes/{note.pk}/edit/", fields(note)).status_code == 302
    assert anonymous.post("/notes/new/", {"title": "x"}).status_code == 302

    guarded = Client(enforce_csrf_checks=True)
    guarded.force_login(User.objects.create_superuser("root", password=None))
    assert guarded.post(f"/notes/{note.pk}/edit/", fields(note, body="x")).status_code == 403
    assert Note.objects.get(pk=note.pk).body == note.body


def opened_form(admin_client: Client, note: Note) -> dict[str, str]:
    """The hidden fields of a note's edit form as it opens now."""
    page = admin_client.get(f"/notes/{note.pk}/edit/").content.decode()
    return {
        name: html.unescape(value)
        for name, value in re.findall(r'name="(seen|base)" value="([^"]*)"', page)
    }


def test_two_tabs_changing_different_fields_of_a_note_both_keep_their_change(
    admin_client: Client, note: Note
) -> None:
    # Tab B, refused, saved again as told and put its old copy of the body back
    # over tab A's (a person's walk); memories merged field by field already.
    a, b = opened_form(admin_client, note), opened_form(admin_client, note)
    start = fields(note)

    admin_client.post(f"/notes/{note.pk}/edit/", {**start, **a, "body": "Tab A's body."}, **HX)
    second = admin_client.post(
        f"/notes/{note.pk}/edit/", {**start, **b, "description": "Tab B's line"}, **HX
    )

    note.refresh_from_db()
    assert (note.body, note.description) == ("Tab A's body.", "Tab B's line")
    assert second.headers.get("HX-Redirect") == f"/notes/{note.pk}/"  # saved, not refused
    shown = admin_client.get(f"/notes/{note.pk}/").content.decode()
    assert "with the change saved meanwhile" in shown


def test_two_tabs_changing_the_same_field_of_a_note_leave_it_to_the_person(
    admin_client: Client, note: Note
) -> None:
    a, b = opened_form(admin_client, note), opened_form(admin_client, note)
    start = fields(note)
    admin_client.post(
        f"/notes/{note.pk}/edit/",
        {**start, **a, "body": "Tab A's body.", "title": "Retries, by A"},
        **HX,
    )

    refused = admin_client.post(
        f"/notes/{note.pk}/edit/", {**start, **b, "body": "Tab B's body."}, **HX
    ).content.decode()

    note.refresh_from_db()
    assert note.body == "Tab A's body."
    assert "Changed there and here: body" in html.unescape(refused)
    assert "Tab B's body." in html.unescape(refused)  # the typed text kept
    assert 'value="Retries, by A"' in refused  # the other tab's title, not the old one


@pytest.mark.parametrize("url", ["/notes/new/", "edit"])
def test_every_field_s_error_comes_in_one_round(
    admin_client: Client, note: Note, project: Project, url: str
) -> None:
    """The source's error came only once the title was right: the service checked it,
    after the form."""
    typed = {"project": project.slug, "title": "", "source_url": "ftp://example.org/x"}
    if url == "edit":
        url, typed = f"/notes/{note.pk}/edit/", fields(note, title="", source_url="ftp://x")
    html = admin_client.post(url, typed, **HX).content.decode()

    assert re.search(r'id="id_title_error">[^<]*Title is required\.', html), html
    assert re.search(r'id="id_source_url_error">[^<]*is not an http\(s\) URL', html), html
