"""Bitemporal memory in the console: the revision history page (list, diffs, escaping,
who may see it) and the inspector's as-of controls."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.test import Client

from console import history, services, tokens
from console.mcp import SPECS, TOKEN_ENV
from console.models import MemoryRevision, Project, ProjectMember

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}
HOSTILE = '<script>alert("x")</script> <img src=x onerror=alert(1)>'


@pytest.fixture
def project(planes: Path) -> Project:
    return services.project_create(slug="billing-api")


def test_a_small_change_in_a_long_body_is_shown_with_its_context_not_the_whole_body() -> None:
    # A one-word change in a 200,000-character body printed the whole body twice:
    # a 155,000 px page to scroll for one marked word.
    lines = [f"Line {n} of the runbook says step {n}." for n in range(1, 101)]
    edited = [*lines[:49], "Line 50 of the runbook says step fifty.", *lines[50:]]
    words = " ".join(f"w{n}" for n in range(1000))

    diff = str(history.body_diff("\n".join(lines), "\n".join(edited)))
    one_line = str(history.body_diff(words, words.replace(" w500 ", " changed ")))

    assert diff.splitlines() == [
        '<span class="diff-skip">… 46 unchanged lines …</span>',
        "Line 47 of the runbook says step 47.",
        "Line 48 of the runbook says step 48.",
        "Line 49 of the runbook says step 49.",
        "Line 50 of the runbook says step <del>50.</del> <ins>fifty.</ins>",
        "Line 51 of the runbook says step 51.",
        "Line 52 of the runbook says step 52.",
        "Line 53 of the runbook says step 53.",
        '<span class="diff-skip">… 47 unchanged lines …</span>',
    ]
    assert one_line.startswith('<span class="diff-skip">… 475 unchanged words …</span> w475 ')
    assert "<del>w500</del> <ins>changed</ins>" in one_line
    assert one_line.endswith(' w525 <span class="diff-skip">… 474 unchanged words …</span>')
    short = str(history.body_diff("Deploy on Fridays.\nOK.", "Never deploy on Fridays.\nOK."))
    assert short == "<del>Deploy</del> <ins>Never deploy</ins> on Fridays.\nOK."  # all shown


def test_each_revision_is_listed_and_diffed_against_its_predecessor(
    admin_client: Client, project: Project
) -> None:
    m = services.memory_create(
        project=project, name="deploy-day", description="Deploys", body="Deploy on Fridays.\nOK."
    )
    services.memory_update(memory=m, body="Never deploy on Fridays.\nOK.", importance=0.9)
    services.memory_archive(memory=m)

    html = admin_client.get(f"/memories/{m.pk}/revisions/").content.decode()

    listed = [f'<td data-label="#">{n}</td><td data-label="Change"><span class="badge">{op}</span>'
              for n, op in ((3, "archive"), (2, "edit"), (1, "create"))]  # fmt: skip
    at = [html.index(row) for row in listed]
    assert at == sorted(at)  # newest first, as the page says and as the diffs run
    assert "#1 → #2" in html and "#2 → #3" in html
    assert "<del>Deploy</del> <ins>Never deploy</ins> on Fridays." in html
    body_diff = '<h3 class="diff-label" id="body-diff-2">Body</h3>'  # says what it diffs
    assert f'{body_diff}<pre class="diff" aria-labelledby="body-diff-2">' in html
    assert (
        '<th scope="row">importance</th><td data-label="Before"><del>0.5</del></td>'
        '<td data-label="After"><ins>0.9</ins></td>' in html
    )
    assert '<th scope="row">invalid_at</th>' in html  # the archive closed its valid time
    closed = html.split('<th scope="row">invalid_at</th>', 1)[1].split("</tr>", 1)[0]
    assert '<td data-label="Before"><span class="muted">—</span></td>' in closed  # not struck
    assert re.search(r"<ins>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC</ins>", closed), closed
    assert (
        f'href="/memories/{m.pk}/revisions/"'
        in admin_client.get(f"/memories/{m.pk}/").content.decode()
    )


def test_two_chosen_revisions_are_compared(admin_client: Client, project: Project) -> None:
    m = services.memory_create(project=project, name="plan", body="alpha")
    services.memory_update(memory=m, body="beta")
    services.memory_update(memory=m, body="gamma")

    html = admin_client.get(f"/memories/{m.pk}/revisions/", {"a": 1, "b": 3}).content.decode()
    partial = admin_client.get(
        f"/memories/{m.pk}/revisions/", {"a": 1, "b": 3}, HTTP_HX_REQUEST="true"
    )

    assert "#1 → #3" in html and "<del>alpha</del> <ins>gamma</ins>" in html
    assert "#1 → #2" not in html
    assert "<html" not in partial.content.decode() and 'id="revisions"' in partial.content.decode()


def test_a_revision_compared_with_itself_is_explained_not_diffed(
    admin_client: Client, project: Project
) -> None:
    # "#1 → #1" with no change read as if nothing had been recorded.
    m = services.memory_create(project=project, name="plan", body="alpha")
    services.memory_update(memory=m, body="beta")

    html = admin_client.get(f"/memories/{m.pk}/revisions/", {"a": 1, "b": 1}).content.decode()
    partial = admin_client.get(f"/memories/{m.pk}/revisions/", {"a": 1, "b": 1}, **HX)

    for page in (html, partial.content.decode()):
        assert "#1 → #1" not in page
        said = page.split("data-same-revision>", 1)[1].split("</p>", 1)[0]
        assert "#1 is the same revision on both sides" in said
        assert "#1 → #2" in page and "<del>alpha</del> <ins>beta</ins>" in page  # the default


def test_a_memory_with_one_revision_offers_no_comparison(
    admin_client: Client, project: Project
) -> None:
    m = services.memory_create(project=project, name="plan", body="alpha")

    html = admin_client.get(f"/memories/{m.pk}/revisions/").content.decode()

    assert 'name="a"' not in html and "data-one-revision" in html
    assert "alpha" in html


def test_hostile_text_shows_as_text_in_the_list_and_the_diff(
    admin_client: Client, project: Project
) -> None:
    m = services.memory_create(project=project, name="xss", description=HOSTILE, body="safe")
    services.memory_update(memory=m, body=f"safe {HOSTILE}", agent_id="<b>agent</b>")

    html = admin_client.get(f"/memories/{m.pk}/revisions/").content.decode()

    assert "<script>" not in html and "<img" not in html and "<b>agent" not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert "<ins>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_a_deleted_memorys_history_stays_readable(admin_client: Client, project: Project) -> None:
    m = services.memory_create(project=project, name="gone", body="was here")
    pk = m.pk
    services.memory_delete(memory=m)

    response = admin_client.get(f"/memories/{pk}/revisions/")

    assert response.status_code == 200
    assert "delete</span>" in response.content.decode() and "deleted" in response.content.decode()
    assert [r.op for r in history.revisions_of(memory_id=pk)] == ["create", "delete"]


def test_deleting_a_replacement_is_recorded_as_such_on_the_old_version(
    admin_client: Client, project: Project
) -> None:
    # The old version's history read "edit", its one row superseded_by_id -> blank.
    old = services.memory_create(project=project, name="webhooks", body="retry for 3 days")
    new = services.memory_supersede(memory=old, name="webhooks-v2", body="retry for 5 days")
    services.memory_delete(memory=new)

    page = admin_client.get(f"/memories/{old.pk}/revisions/").content.decode()

    ops = [r.op for r in history.revisions_of(memory_id=old.pk)]
    assert ops == ["create", "supersede", "unsupersede"]
    assert '<span class="badge">replacement deleted</span>' in page


def test_a_project_the_person_does_not_see_is_a_404(client: Client, project: Project) -> None:
    m = services.memory_create(project=project, name="secret", body="x")
    other = services.project_create(slug="other")
    user = User.objects.create_user("pat", password="pw-long-enough-123")
    ProjectMember.objects.create(user=user, project=other)
    client.force_login(user)

    assert client.get(f"/memories/{m.pk}/revisions/").status_code == 404
    assert client.get("/memories/01HZZZZZZZZZZZZZZZZZZZZZZZ/revisions/").status_code == 404
    ProjectMember.objects.create(user=user, project=project)
    assert client.get(f"/memories/{m.pk}/revisions/").status_code == 200
    assert MemoryRevision.objects.filter(memory_id=m.pk).count() == 1


def test_the_inspector_recalls_as_of_and_as_recorded(
    admin_client: Client, project: Project
) -> None:
    from console import indexing

    m = services.memory_create(
        project=project, name="queue", description="zebrafish queue is RabbitMQ",
        valid_from=datetime(2024, 1, 1, tzinfo=UTC),
    )  # fmt: skip
    services.memory_supersede(
        memory=m,
        description="zebrafish queue is Kafka",
        valid_from=datetime(2024, 6, 1, tzinfo=UTC),
    )
    indexing.apply_pending()
    ask = {"mode": "recall", "query": "zebrafish queue", "project": "billing-api"}

    page = admin_client.get("/inspect/").content.decode()
    march = admin_client.get("/inspect/", {**ask, "as_of": "2024-03-01T00:00"}, **HX)
    now = admin_client.get("/inspect/", ask, **HX)

    assert 'name="as_of"' in page and 'name="recorded_as_of"' in page
    assert 'type="datetime-local"' in page
    html = march.content.decode()
    assert "data-tier" in html and "valid as of 2024-03-01T00:00:00+00:00" in html
    assert "RabbitMQ" in html and "Kafka" not in html
    current = now.content.decode()
    assert "Kafka" in current and "valid as of" not in current


def test_each_revision_names_who_changed_it(
    admin_client: Client, project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # History said "AGENT —" for every change made in the console.
    m = services.memory_create(project=project, name="deploy-day", description="Deploys")
    edited = {"kind": m.kind, "name": m.name, "description": "Deploys on Mondays", "body": "",
              "tags": "", "importance": m.importance, "seen": m.updated.isoformat()}  # fmt: skip
    admin_client.post(f"/memories/{m.pk}/edit/", edited, **HX)
    _, secret = tokens.token_create(agent="claude", projects=["billing-api"], may_write=True)
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    answer = agent.patch(
        f"/api/v1/memories/{m.pk}", {"importance": 0.9}, content_type="application/json"
    )
    assert answer.status_code == 200, answer.content

    monkeypatch.setenv(TOKEN_ENV, secret)  # one MCP tool call, as `manage.py mcp` runs it
    tool = next(spec for spec in SPECS if spec.name == "memory_archive").build()
    assert not tool.fn(id=m.pk).is_error
    services.memory_restore(memory=m)  # no request, no tool call: the system

    by = list(MemoryRevision.objects.filter(memory_id=m.pk).values_list("op", "changed_by"))
    assert by == [("create", ""), ("edit", "admin"), ("edit", "claude (agent)"),
                  ("archive", "claude (agent)"), ("restore", "")]  # fmt: skip
    html = admin_client.get(f"/memories/{m.pk}/revisions/").content.decode()
    assert '<td data-label="Changed by">admin</td>' in html
    assert '<td data-label="Changed by">claude (agent)</td>' in html


def test_a_first_body_reads_without_a_stray_space_and_a_replacement_is_a_link(
    admin_client: Client, project: Project
) -> None:
    m = services.memory_create(project=project, name="plan", body="One.\nTwo.")
    new = services.memory_supersede(memory=m, body="Three.")

    html = admin_client.get(f"/memories/{m.pk}/revisions/").content.decode()

    assert '<pre class="diff" aria-labelledby="body-diff-1"><ins>One.\nTwo.</ins>' in html
    replaced = html.split('<th scope="row">superseded_by_id</th>', 1)[1].split("</tr>", 1)[0]
    assert f'<ins><a href="/memories/{new.pk}/">{new.pk}</a></ins>' in replaced
