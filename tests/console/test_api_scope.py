"""Scope guards: a token for project A can reach nothing of project B, on any endpoint.

Naming a project the token does not cover is 403; an item of another project
is 404, exactly like an id that does not exist (ids are never confirmed
across projects). Sealed and confidential isolation hold on every path.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from console import indexing
from console.models import Memory, Note
from tests.console.api_world import World, call, world_fixture  # noqa: F401

MEMORY = "{memory}"
NOTE = "{note}"

# (method, path, body, status) for token "alpha" against project beta's items.
CROSS_PROJECT = [
    ("post", "/recall", {"query": "bergamot", "project": "beta"}, 403),
    ("get", "/search", {"q": "bergamot", "project": "beta"}, 403),
    ("get", "/search", {"q": "bergamot", "project": ["alpha", "beta"]}, 403),
    ("post", "/briefing", {"project": "beta"}, 403),
    ("post", "/prompt-recall", {"project": "beta", "prompt": "bergamot cache"}, 403),
    ("post", "/memories", {"project": "beta", "name": "planted", "description": "x"}, 403),
    ("get", f"/memories/{MEMORY}", None, 404),
    ("patch", f"/memories/{MEMORY}", {"description": "defaced"}, 404),
    ("post", f"/memories/{MEMORY}/supersede", {"description": "defaced"}, 404),
    ("post", f"/memories/{MEMORY}/archive", None, 404),
    ("post", f"/memories/{MEMORY}/restore", None, 404),
    ("post", f"/memories/{MEMORY}/favorite", {"favorite": True}, 404),
    ("get", "/notes", {"project": "beta"}, 403),
    ("post", "/notes", {"project": "beta", "title": "planted"}, 403),
    ("get", f"/notes/{NOTE}", None, 404),
    ("patch", f"/notes/{NOTE}", {"title": "defaced"}, 404),
    ("post", f"/notes/{NOTE}/favorite", {"favorite": True}, 404),
]


def _fill(value: Any, world: World, project: str) -> Any:
    if isinstance(value, str):
        return value.replace(MEMORY, world.memories[project].pk).replace(
            NOTE, world.notes[project].pk
        )
    if isinstance(value, dict):
        return {k: _fill(v, world, project) for k, v in value.items()}
    return value


@pytest.mark.parametrize(("method", "path", "body", "status"), CROSS_PROJECT)
@pytest.mark.parametrize(("token", "other"), [("alpha", "beta"), ("beta", "alpha")])
def test_a_token_cannot_reach_another_project(
    world: World, token: str, other: str, method: str, path: str, body: Any, status: int
) -> None:
    body = _fill(body, world, other)
    if isinstance(body, dict) and "project" in body:
        body["project"] = (
            [token, other] if isinstance(body["project"], list) else other
        )  # the other project, named
    before_m = Memory.objects.get(pk=world.memories[other].pk)
    before_n = Note.objects.get(pk=world.notes[other].pk)

    r = call(world.client(token), method, _fill(path, world, other), body)

    assert r.status_code == status, r.content
    assert set(r.json()) == {"detail", "field", "code"}
    assert world.memories[other].pk not in r.content.decode()
    after_m = Memory.objects.get(pk=before_m.pk)
    after_n = Note.objects.get(pk=before_n.pk)
    assert (after_m.description, after_m.favorite, after_m.invalid_at) == (
        before_m.description, before_m.favorite, before_m.invalid_at,
    )  # fmt: skip
    assert (after_n.title, after_n.favorite) == (before_n.title, before_n.favorite)
    assert Memory.objects.filter(name="planted").count() == 0
    assert Note.objects.filter(title="planted").count() == 0


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/recall", {"query": "cache warm traffic service", "limit": 100}),
        ("get", "/search", {"q": "cache warm traffic service", "limit": 200}),
        ("post", "/briefing", {}),
        ("get", "/notes", {"limit": 100}),
    ],
)
def test_unscoped_calls_see_only_the_token_projects_and_global(
    world: World, method: str, path: str, body: Any
) -> None:
    r = call(world.client("alpha"), method, path, body)

    assert r.status_code == 200
    seen = r.content.decode()
    for other in ("beta", "conf", "vault"):
        assert world.memories[other].pk not in seen
        assert world.notes[other].pk not in seen
    assert world.memories["alpha"].pk in seen or world.notes["alpha"].pk in seen


@pytest.mark.parametrize("token", ["alpha", "beta", "conf"])
@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/recall", {"query": "vermilion cache warm"}),
        ("post", "/recall", {"query": "vermilion", "scope": "memories", "limit": 100}),
        ("get", "/search", {"q": "vermilion", "limit": 200}),
        ("post", "/briefing", {}),
        ("post", "/prompt-recall", {"prompt": "vermilion service cache traffic warm"}),
    ],
)
def test_a_sealed_project_never_appears_to_other_tokens(
    world: World, token: str, method: str, path: str, body: Any
) -> None:
    r = call(world.client(token), method, path, body)

    assert r.status_code == 200
    assert world.memories["vault"].pk not in r.content.decode()
    assert "vermilion" not in r.content.decode()


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/recall", {"query": "gazetteer cache warm", "limit": 100}),
        ("post", "/recall", {"query": "", "kind": "gotcha", "limit": 100}),
        ("get", "/search", {"q": "gazetteer cache warm", "limit": 200}),
        ("get", "/search", {"q": "gazetteer", "semantic": "false"}),
        ("post", "/briefing", {}),
        ("post", "/prompt-recall", {"prompt": "gazetteer service cache traffic warm"}),
        ("get", "/notes", {"limit": 100}),
    ],
)
def test_a_sealed_token_sees_no_global_items(
    world: World, method: str, path: str, body: Any
) -> None:
    r = call(world.client("vault"), method, path, body)

    assert r.status_code == 200
    seen = r.content.decode()
    assert world.memories[None].pk not in seen and world.notes[None].pk not in seen
    for other in ("alpha", "beta", "conf"):
        assert world.memories[other].pk not in seen


def test_a_sealed_token_cannot_read_global_items(world: World) -> None:
    client = world.client("vault")

    assert call(client, "get", f"/memories/{world.memories[None].pk}").status_code == 404
    assert call(client, "get", f"/notes/{world.notes[None].pk}").status_code == 404
    assert call(client, "get", f"/memories/{world.memories['vault'].pk}").status_code == 200


def test_a_sealed_token_still_recalls_its_own_project(world: World) -> None:
    pack = call(world.client("vault"), "post", "/recall", {"query": "vermilion"}).json()

    assert world.memories["vault"].pk in [i["id"] for i in pack["items"]]
    assert pack["project"] == "vault"  # said once: no item names another
    assert {i.get("project", pack["project"]) for i in pack["items"]} == {"vault"}


def test_a_confidential_project_stays_inside(world: World) -> None:
    for token in ("alpha", "beta", "vault"):
        for method, path, body in (
            ("post", "/recall", {"query": "cormorant cache"}),
            ("get", "/search", {"q": "cormorant", "limit": 200}),
        ):
            r = call(world.client(token), method, path, body)
            assert world.memories["conf"].pk not in r.content.decode(), (token, path)
    own = call(world.client("conf"), "post", "/recall", {"query": "cormorant cache"}).json()
    assert world.memories["conf"].pk in [i["id"] for i in own["items"]]


def test_an_agent_write_into_its_project_never_leaks_to_another(world: World) -> None:
    body = {"name": "alpha-secret", "description": "The zanzibar passphrase rotates weekly"}
    assert call(world.client("alpha"), "post", "/memories", body).status_code == 201
    indexing.apply_pending()

    r = call(world.client("beta"), "post", "/recall", {"query": "zanzibar passphrase"})

    assert "alpha-secret" not in r.content.decode()
    mine = call(world.client("alpha"), "post", "/recall", {"query": "zanzibar passphrase"})
    assert "alpha-secret" in mine.content.decode()


def test_a_token_over_a_newly_sealed_project_mix_is_refused(world: World) -> None:
    from console.models import Project

    Project.objects.filter(slug="beta").update(isolation="sealed")

    r = call(world.client("alpha_beta"), "post", "/recall", {"query": "x", "project": "alpha"})

    assert r.status_code == 403
    assert "sealed" in r.json()["detail"]


def test_creating_a_taken_slug_says_no_more_for_a_sealed_project(world: World) -> None:
    """Slugs are one namespace, so an admin token's create must fail on a taken one and
    thereby learns that it is taken; it learns nothing else: the refusal is the same
    whether the slug is its own project's, an open one's, a confidential or a sealed
    one's, and asking for a sealed project is refused before the slug is looked at."""
    from console import tokens

    _, secret = tokens.token_create(
        agent="admin-bot", projects=["alpha"], may_write=True, may_admin=True
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    taken = {
        slug: call(client, "post", "/projects", {"slug": slug})
        for slug in ("alpha", "beta", "conf", "vault")
    }
    sealed = {
        slug: call(client, "post", "/projects", {"slug": slug, "isolation": "sealed"})
        for slug in ("vault", "never-made")
    }

    answers = {(r.status_code, r.content) for r in taken.values()}
    assert len(answers) == 1 and taken["vault"].status_code == 400
    assert b"vault" not in taken["vault"].content and b"sealed" not in taken["vault"].content
    assert sealed["vault"].status_code == 403
    assert sealed["vault"].content == sealed["never-made"].content


def test_a_slug_taken_between_the_check_and_the_insert_is_a_conflict_not_a_crash(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two creates of one slug both passed the uniqueness check before either committed:
    # the loser's IntegrityError answered 500 "an unexpected error; it has been logged".
    from console import tokens
    from console.models import Project

    _, secret = tokens.token_create(
        agent="admin-bot", projects=["alpha"], may_write=True, may_admin=True
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    monkeypatch.setattr(Project, "validate_unique", lambda self, exclude=None: None)

    raced = call(client, "post", "/projects", {"slug": "beta"})

    assert raced.status_code == 409, raced.content
    assert "retry" in raced.json()["detail"]


@pytest.mark.parametrize("slug", ["global", "tenant"])
def test_a_project_cannot_take_a_slug_the_product_already_uses_for_something_else(
    world: World, slug: str
) -> None:
    # "global" labels memories outside any project and "tenant" names the deployment's
    # digest (`digest-tenant`): a project called either read as the other in a pack.
    from django.core.exceptions import ValidationError

    from console import services, tokens
    from console.models import Project

    _, secret = tokens.token_create(
        agent="admin-bot", projects=["alpha"], may_write=True, may_admin=True
    )
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")

    refused = call(client, "post", "/projects", {"slug": slug})
    with pytest.raises(ValidationError, match="reserved"):
        services.project_create(slug=slug)
    published = call(client, "get", "/openapi.json").json()["components"]["schemas"]

    assert refused.status_code == 422, refused.content
    assert refused.json()["field"] == "slug"
    assert refused.json()["detail"].startswith(f"slug: '{slug}' is reserved")
    assert not Project.objects.filter(slug=slug).exists()
    pattern = published["ProjectIn"]["properties"]["slug"]["pattern"]
    assert re.fullmatch(pattern, slug) is None and re.fullmatch(pattern, f"{slug}-team")
    assert call(client, "post", "/projects", {"slug": f"{slug}-team"}).status_code == 201
