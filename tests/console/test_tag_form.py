"""A tag is one tag however it is typed: `#Billing`, ` billing ` and `billing`
(recall.recall.tag_form), on writes, filters, the console and stored data."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from console import indexing
from console.models import IndexJob, Memory
from recall.recall import BLANK_TAG
from tests.console.api_world import World, call, mcp, world_fixture  # noqa: F401
from tests.console.migration_steps import Target, migrations_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

WRITE = {"name": "tagged", "kind": "fact", "description": "Invoices go out nightly."}


def test_a_hash_and_capitals_are_not_part_of_a_stored_tag(world: World, monkeypatch: Any) -> None:
    rest = call(world.client("alpha"), "post", "/memories", {**WRITE, "tags": ["#Billing", "ops"]})
    status, tool = mcp(
        world, "alpha", "memory_write",
        {**WRITE, "name": "tagged-2", "description": "Refunds too.", "tags": ["# Ops"]},
        monkeypatch,
    )  # fmt: skip

    assert rest.status_code == 201, rest.content
    assert Memory.objects.get(pk=rest.json()["memory"]["id"]).tags == ["billing", "ops"]
    assert status == 200, tool  # an MCP reply carries no HTTP status
    assert Memory.objects.get(name="tagged-2").tags == ["ops"]


def test_a_filter_written_with_a_hash_finds_the_tag(world: World) -> None:
    client = world.client("alpha")
    made = call(client, "post", "/memories", {**WRITE, "tags": ["billing"]}).json()["memory"]
    indexing.apply_pending()

    found = call(client, "post", "/recall", {"query": "invoices", "tags": ["#Billing"]})
    listed = call(client, "get", "/memories", {"project": "alpha", "tags": "#billing"})

    assert found.status_code == 200, found.content
    assert [i["id"] for i in found.json()["items"]] == [made["id"]]
    assert [m["id"] for m in listed.json()["memories"]] == [made["id"]]


def test_a_tag_of_only_a_hash_is_blank(world: World) -> None:
    """As a tag of spaces is: dropped from a write, a filter that matches nothing."""
    client = world.client("alpha")
    made = call(client, "post", "/memories", {**WRITE, "tags": ["#", "ops"]})
    found = call(client, "post", "/recall", {"query": "invoices", "tags": [" # "]})

    assert made.status_code == 201, made.content
    assert Memory.objects.get(name="tagged").tags == ["ops"]
    assert found.status_code == 200
    assert found.json()["items"] == []
    assert any(BLANK_TAG in w for w in found.json()["warnings"])


def test_a_tag_is_stored_as_it_reads_without_invisible_characters(
    world: World, monkeypatch: Any
) -> None:
    """Stored with an RTL override, a bell or a line break, a tag read back (escaped and
    stripped of them) was another tag: a filter by it, or a write-back of it as read,
    missed or changed it; one of only joiners read as ""."""
    client = world.client("alpha")
    tags = ["a\u202eb", "c\x07d", "e\nf", "\u200d\u200d", "\ufeff#Ops"]
    made = call(client, "post", "/memories", {**WRITE, "tags": tags})
    assert made.status_code == 201, made.content
    memory = made.json()["memory"]
    indexing.apply_pending()

    assert Memory.objects.get(pk=memory["id"]).tags == ["ab", "cd", "e f", "ops"]
    read = call(client, "get", f"/memories/{memory['id']}").json()
    assert read["tags"] == ["ab", "cd", "e f", "ops"]
    for tag in read["tags"]:  # each tag as read finds the memory
        listed = call(client, "get", "/memories", {"project": "alpha", "tags": tag}).json()
        assert [m["id"] for m in listed["memories"]] == [memory["id"]], tag
    status, tool = mcp(world, "alpha", "memory_list", {"tags": ["a\u202eb"]}, monkeypatch)
    assert [m["id"] for m in tool["memories"]] == [memory["id"]]  # a filter takes the form too


def test_the_console_shows_one_hash_before_a_tag_typed_with_one(admin_client: Client) -> None:
    from console import services

    memory = services.memory_create(
        project=None, name="hashed", kind="fact", description="Nightly invoices.", tags=["#billing"]
    )

    page = admin_client.get(f"/memories/{memory.pk}/").content.decode()

    assert memory.tags == ["billing"]
    assert "#billing" not in page.replace(">#<", "")  # the console's own # is CSS


@pytest.mark.django_db(transaction=True)
def test_migration_0020_stores_tags_in_their_form_and_reindexes_what_changed(
    migrations: Callable[[Target], Any],
) -> None:
    old = migrations([("console", "0019_digest_lines")])
    project = old.get_model("console", "Project").objects.create(slug="p", name="P")
    memory = old.get_model("console", "Memory")
    fields = {"project": project, "kind": "fact", "description": "d"}
    hashed = memory.objects.create(id="01HASHED0000000000000000AA", name="a", tags=["#billing",
                                   "billing", "c#"], **fields)  # fmt: skip
    plain = memory.objects.create(id="01PLAIN00000000000000000AA", name="b", tags=["c#"], **fields)
    note = old.get_model("console", "Note").objects.create(
        id="01NOTE000000000000000000AA", project=project, title="t", slug="t", tags=["#Ops "]
    )

    new = migrations([("console", "0020_tag_form")])

    assert new.get_model("console", "Memory").objects.get(pk=hashed.pk).tags == ["billing", "c#"]
    assert new.get_model("console", "Memory").objects.get(pk=plain.pk).tags == ["c#"]
    assert new.get_model("console", "Note").objects.get(pk=note.pk).tags == ["ops"]
    queued = set(IndexJob.objects.values_list("item", "item_id"))
    assert {("memory", hashed.pk), ("note", note.pk)} <= queued
    assert ("memory", plain.pk) not in queued
