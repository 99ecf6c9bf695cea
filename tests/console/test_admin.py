"""The admin: a refused change is a form error on the page, never a 500."""

from __future__ import annotations

import pytest
from django.test import Client

from console import services, tokens
from console.models import AgentToken, Project

pytestmark = pytest.mark.django_db

SEALED_MESSAGE = "vault is sealed (nothing in or out): its token may name no other project."


@pytest.fixture
def projects() -> dict[str, Project]:
    return {
        slug: services.project_create(slug=slug, isolation=isolation)
        for slug, isolation in (("alpha", "open"), ("beta", "open"), ("vault", "sealed"))
    }


def test_adding_a_token_that_mixes_a_sealed_project_is_a_form_error(
    admin_client: Client, projects: dict[str, Project]
) -> None:
    response = admin_client.post(
        "/admin/console/agenttoken/add/",
        {"agent": "mixer", "projects": [projects["vault"].pk, projects["alpha"].pk]},
    )

    assert response.status_code == 200
    assert SEALED_MESSAGE in response.content.decode()
    assert response.context["adminform"].form.errors["projects"] == [SEALED_MESSAGE]
    assert not AgentToken.objects.exists()


def test_changing_a_token_to_mix_a_sealed_project_is_a_form_error(
    admin_client: Client, projects: dict[str, Project]
) -> None:
    token, secret = tokens.token_create(agent="coder", projects=["alpha"])

    response = admin_client.post(
        f"/admin/console/agenttoken/{token.pk}/change/",
        {"agent": "coder", "projects": [projects["alpha"].pk, projects["vault"].pk]},
    )

    assert response.status_code == 200
    assert SEALED_MESSAGE in response.content.decode()
    assert list(token.projects.values_list("slug", flat=True)) == ["alpha"]
    assert tokens.token_verify(secret) == token


def test_a_sealed_project_alone_saves_from_the_admin(
    admin_client: Client, projects: dict[str, Project]
) -> None:
    response = admin_client.post(
        "/admin/console/agenttoken/add/", {"agent": "vaulter", "projects": [projects["vault"].pk]}
    )

    assert response.status_code == 302
    assert list(AgentToken.objects.get().projects.values_list("slug", flat=True)) == ["vault"]


def test_a_token_without_projects_is_a_form_error(admin_client: Client) -> None:
    response = admin_client.post("/admin/console/agenttoken/add/", {"agent": "lonely"})

    assert response.status_code == 200
    assert "projects" in response.context["adminform"].form.errors
    assert not AgentToken.objects.exists()


@pytest.mark.parametrize(
    "model", ["project", "memory", "note", "edge", "setting", "agenttoken", "retrievalevent",
              "indexjob"],
)  # fmt: skip
def test_every_admin_list_and_add_page_renders(admin_client: Client, model: str) -> None:
    assert admin_client.get(f"/admin/console/{model}/").status_code == 200
    assert admin_client.get(f"/admin/console/{model}/add/").status_code == 200


def test_the_admin_names_its_models_in_english(admin_client: Client) -> None:
    page = admin_client.get("/admin/").content.decode()
    assert ">Memories<" in page and "Memorys" not in page


def test_an_admin_page_names_its_icon_so_the_browser_asks_for_no_favicon(
    admin_client: Client,
) -> None:
    # Each admin page made the browser ask for /favicon.ico: a 404 in the server log
    # and in the browser's console, where the console's own pages name an empty icon.
    page = admin_client.get("/admin/console/agenttoken/").content.decode()

    assert '<link rel="icon" href="data:,">' in page
    assert "Agent tokens" in page and "Django administration" in page  # the admin as it was


def test_the_token_list_says_each_token_projects_and_scope(
    admin_client: Client, projects: dict[str, Project]
) -> None:
    # It showed the agent, the prefix and a may-write icon: which projects a token
    # opened took a click per token, and an admin token looked like any other.
    tokens.token_create(agent="coder", projects=["beta", "alpha"], may_write=True)
    tokens.token_create(agent="reader", projects=["vault"])
    tokens.token_create(agent="maker", projects=["alpha"], may_write=True, may_admin=True)

    page = admin_client.get("/admin/console/agenttoken/").content.decode()

    rows = {
        row.split(">", 1)[1].split("<", 1)[0]: row
        for row in page.split('<th class="field-agent">')[1:]
    }
    assert set(rows) >= {"coder", "reader", "maker"}, list(rows)
    for agent, projects_said, scope in (
        ("coder", "alpha, beta", "read-write"),
        ("reader", "vault", "read-only"),
        ("maker", "alpha", "read-write, admin"),
    ):
        row = rows[agent].split("</tr>", 1)[0]
        assert f'<td class="field-project_slugs">{projects_said}</td>' in row, row
        assert f'<td class="field-scope">{scope}</td>' in row, row
