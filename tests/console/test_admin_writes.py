"""Admin changes go through the services, so the planes follow them (issue 19, item 1).

The scenario that leaked: a memory moved from alpha to beta in the admin kept
its alpha rows in the planes (no index job was queued), so alpha's token still
found it, and beta's could not. Here the move goes through the admin's own
change form over HTTP, then every read endpoint and read-only MCP tool is asked.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django import forms
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.forms.widgets import MultiWidget
from django.test import Client, RequestFactory

from console import indexing, mcp
from console.models import IndexJob, Memory, Note, Project
from tests.console.api_world import WORDS, World, call, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db


def change_form_data(model: type[Any], obj: Any, **changes: Any) -> dict[str, Any]:
    """What the admin's change form posts for `obj`, with `changes` applied."""
    model_admin = admin.site._registry[model]
    request = RequestFactory().get("/")
    request.user = get_user_model().objects.get(username="admin")  # admin_client's login
    form = model_admin.get_form(request, obj)(instance=obj)
    data: dict[str, Any] = {}
    for bound in form:
        value = changes.get(bound.name, bound.value())
        widget = bound.field.widget
        if isinstance(widget, MultiWidget):
            for i, part in enumerate(widget.decompress(value)):
                data[f"{bound.html_name}_{i}"] = "" if part is None else str(part)
        elif isinstance(bound.field, forms.BooleanField):
            if value:
                data[bound.html_name] = "on"
        elif value is None:
            data[bound.html_name] = ""
        else:
            data[bound.html_name] = bound.field.prepare_value(value)
    for inline in model_admin.get_inline_instances(request, obj):
        prefix = inline.get_formset(request, obj).get_default_prefix()
        data.update({f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"})
    return data


def move(admin_client: Client, memory: Memory, project: Project) -> None:
    url = f"/admin/console/memory/{memory.pk}/change/"
    response = admin_client.post(url, change_form_data(Memory, memory, project=project.pk))
    assert response.status_code == 302, response.content.decode()[:2000]
    indexing.apply_pending()  # pytest-django's `db` never commits: apply as on_commit would


def found_by(world: World, who: str, memory: Memory, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Which read paths of `who`'s token return the memory (REST and MCP tools)."""
    word, client, seen = WORDS["alpha"], world.client(who), set()
    replies = {
        "recall": call(client, "post", "/recall", {"query": word}),
        "search": call(client, "get", "/search", {"q": word}),
        "search-fast": call(client, "get", "/search", {"q": word[:4], "semantic": "false"}),
        "read": call(client, "get", f"/memories/{memory.pk}"),
        "read-by-name": call(client, "get", f"/memories/{memory.name}", {"project": who}),
        "list": call(client, "get", "/memories"),
        "briefing": call(client, "post", "/briefing", {}),
        "prompt": call(client, "post", "/prompt-recall", {"prompt": f"about {memory.name}"}),
    }
    for name, reply in replies.items():
        if reply.status_code == 200 and memory.pk in reply.content.decode():
            seen.add(name)
    monkeypatch.setenv(mcp.TOKEN_ENV, world.secrets[who])
    tools = {spec.name: spec for spec in mcp.SPECS}
    for tool, args in (
        ("memory_recall", {"query": word}),
        ("memory_search", {"q": word}),
        ("memory_read", {"id": memory.pk}),
        ("memory_list", {}),
        ("briefing", {}),
    ):
        result = tools[tool].build().fn(**args)
        if not result.is_error and memory.pk in json.dumps(result.structured_content):
            seen.add(f"mcp:{tool}")
    return seen


def test_a_memory_moved_in_the_admin_leaves_its_old_project_everywhere(
    world: World, admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = world.memories["alpha"]
    assert "search" in found_by(world, "alpha", memory, monkeypatch)

    move(admin_client, memory, Project.objects.get(slug="beta"))

    assert found_by(world, "alpha", memory, monkeypatch) == set()
    beta = found_by(world, "beta", memory, monkeypatch)
    assert {"recall", "search", "read", "mcp:memory_recall", "mcp:memory_search"} <= beta
    assert indexing.status().drift == 0


@pytest.mark.outbox
def test_the_admin_move_queues_the_index_job(world: World, admin_client: Client) -> None:
    memory = world.memories["alpha"]
    url = f"/admin/console/memory/{memory.pk}/change/"
    beta = Project.objects.get(slug="beta")

    admin_client.post(url, change_form_data(Memory, memory, project=beta.pk))

    assert list(IndexJob.objects.values_list("item_id", "op")) == [(memory.pk, "upsert")]


@pytest.mark.outbox
def test_renaming_a_project_in_the_admin_reindexes_its_items(
    world: World, admin_client: Client
) -> None:
    alpha = Project.objects.get(slug="alpha")
    url = f"/admin/console/project/{alpha.pk}/change/"

    response = admin_client.post(url, change_form_data(Project, alpha, slug="alpha-two"))

    assert response.status_code == 302, response.content.decode()[:2000]
    queued = set(IndexJob.objects.values_list("item_id", flat=True))
    assert {world.memories["alpha"].pk, world.notes["alpha"].pk} <= queued
    indexing.apply_pending()
    assert indexing.status().drift == 0


def test_deleting_in_the_admin_takes_items_out_of_the_planes(
    world: World, admin_client: Client
) -> None:
    memory, note = world.memories["beta"], world.notes["beta"]
    admin_client.post(f"/admin/console/memory/{memory.pk}/delete/", {"post": "yes"})
    admin_client.post(f"/admin/console/note/{note.pk}/delete/", {"post": "yes"})
    alpha = Project.objects.get(slug="alpha")
    admin_client.post(f"/admin/console/project/{alpha.pk}/delete/", {"post": "yes"})
    indexing.apply_pending()

    assert not Memory.objects.filter(pk=memory.pk).exists()
    assert not Note.objects.filter(project__slug="alpha").exists()
    assert indexing.status().drift == 0


def test_a_memory_the_services_would_refuse_is_a_form_error_in_the_admin(
    world: World, admin_client: Client
) -> None:
    memory = world.memories["alpha"]
    data = change_form_data(Memory, memory, importance=7)

    response = admin_client.post(f"/admin/console/memory/{memory.pk}/change/", data)

    assert response.status_code == 200
    assert "Importance must be between 0 and 1" in response.content.decode()
    assert not IndexJob.objects.exists()
