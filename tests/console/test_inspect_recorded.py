"""A recorded recall, asked again in the inspector from a memory's retrieval history."""

from __future__ import annotations

import html
import re
from typing import Any

from django.test import Client

from tests.console.api_world import World, call, world_fixture  # noqa: F401


def linked(page: str) -> list[str]:
    return re.findall(r'<a href="/memories/([0-9A-Z]{26})/"', page)


def inspected(admin_client: Client, memory_id: str, href: str) -> tuple[str, str]:
    """The Inspect link (`href`, a pattern) in a memory's retrieval history, and the
    inspector's answer to it (which must be 200)."""
    page = admin_client.get(f"/memories/{memory_id}/").content.decode()
    found = re.search(rf'<a class="inspect-link" href="({href})"', page)
    assert found is not None, page
    link = html.unescape(found.group(1))
    answer: Any = admin_client.get(link, HTTP_HX_REQUEST="true")
    assert answer.status_code == 200
    return link, answer.content.decode()


def test_an_agents_recall_opens_in_the_inspector_as_the_agent_asked_it(
    world: World, admin_client: Client
) -> None:
    """A memory's history listed "recalled · agent-alpha · alpha · the query" with no
    way to see why: retyping the query in the inspector ran it at the configured
    budget (7 items in 994 tokens) where the agent had asked for 400 (2 items)."""
    asked = {"query": "warm albatross cache before traffic", "budget": 120}
    reply = call(world.client("alpha"), "post", "/recall", asked).json()
    items = [i["id"] for i in reply["items"]]
    assert items and reply["budget"] == 120

    link, shown = inspected(admin_client, items[0], r'[^"]+')

    assert "budget=120" in link and "project=alpha" in link
    assert "of its 120 tokens" in shown, shown
    assert [i for i in linked(shown) if i in items][: len(items)] == items


def test_an_agents_briefing_opens_in_the_inspector_as_the_agent_asked_it(
    world: World, admin_client: Client
) -> None:
    """A memory's history listed "injected · agent-alpha · alpha" (a session-start
    briefing) with no Inspect link, where a recall's row has one: why the agent got
    that line could only be asked by retyping the run, at the configured budget."""
    reply = call(world.client("alpha"), "post", "/briefing", {"budget": 300}).json()
    assert reply["ids"], reply

    link, shown = inspected(admin_client, reply["ids"][0], r'[^"]*mode=briefing[^"]*')

    assert "budget=300" in link and "project=alpha" in link
    assert set(reply["ids"]) <= set(linked(shown)), shown
