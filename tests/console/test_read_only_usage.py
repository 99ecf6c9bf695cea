"""A read-only token's recalls, prompt blocks and reads are history, not usage.

The usage boost (and decay's access stamps) rank memories for every agent of a
project, so what a token without write permission is shown must not move them;
the events stay, for the memory page's retrieval history.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from console.mcp import SPECS, TOKEN_ENV
from console.models import Memory, RetrievalEvent
from console.store import DjangoStore
from tests.console.api_world import World, call, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

PROMPT = "the albatross service cache needs warming before traffic"


def _rest(world: World, who: str, memory_id: str) -> None:
    client = world.client(who)
    assert call(client, "post", "/recall", {"query": "albatross cache"}).status_code == 200
    assert call(client, "post", "/prompt-recall", {"prompt": PROMPT}).json()["ids"]
    assert call(client, "get", f"/memories/{memory_id}").status_code == 200


def _mcp(world: World, who: str, memory_id: str, monkeypatch: Any) -> None:
    monkeypatch.setenv(TOKEN_ENV, world.secrets[who])
    for tool, args in (
        ("memory_recall", {"query": "albatross cache"}),
        ("prompt_recall", {"prompt": PROMPT}),
        ("memory_read", {"id": memory_id}),
    ):
        result = next(s for s in SPECS if s.name == tool).build().fn(**args)
        assert not result.is_error, result.content


def _usage_after(memory_id: str) -> dict[str, float]:
    """The usage table once the snapshot has cut past today's events."""
    RetrievalEvent.objects.update(at=timezone.now() - timedelta(days=1))
    return DjangoStore().usage([memory_id])


@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_a_read_only_token_leaves_history_but_no_usage(
    world: World, door: str, monkeypatch: Any
) -> None:
    mid = world.memories["alpha"].pk

    if door == "rest":
        _rest(world, "alpha_ro", mid)
    else:
        _mcp(world, "alpha_ro", mid, monkeypatch)

    kinds = set(
        RetrievalEvent.objects.filter(agent="agent-alpha_ro", ids__has_string=mid).values_list(
            "kind", flat=True
        )
    )
    assert kinds == {"recalled", "prompt", "read"}  # the memory page still lists them
    assert _usage_after(mid) == {}
    assert Memory.objects.get(pk=mid).access_count == 0  # decay's stamps stay too
    assert Memory.objects.get(pk=mid).last_accessed_at is None


@pytest.mark.parametrize("door", ["rest", "mcp"])
def test_a_write_token_feeds_usage(world: World, door: str, monkeypatch: Any) -> None:
    mid = world.memories["alpha"].pk

    if door == "rest":
        _rest(world, "alpha", mid)
    else:
        _mcp(world, "alpha", mid, monkeypatch)

    assert 0 < _usage_after(mid)[mid] < 1
    assert Memory.objects.get(pk=mid).access_count == 1


def test_the_memory_page_says_a_read_only_read_was_not_counted(
    world: World, admin_client: Any
) -> None:
    mid = world.memories["alpha"].pk
    call(world.client("alpha_ro"), "get", f"/memories/{mid}")

    html = admin_client.get(f"/memories/{mid}/").content.decode()

    assert "agent-alpha_ro" in html and "read-only token, not counted in ranking" in html
