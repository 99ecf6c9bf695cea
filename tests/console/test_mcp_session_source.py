"""A recall whose item only the session channel found, over MCP."""

from __future__ import annotations

from typing import Any

from console import indexing
from tests.console.api_world import World, call, mcp, world_fixture  # noqa: F401

TURNS = [
    "user: The refund endpoint returns 500 when the Stripe charge was already refunded.",
    "assistant: Stripe answers charge_already_refunded; we let it bubble up.",
    "user: Then map it to a 409 with REFUND_ALREADY_DONE.",
    "assistant: Done in RefundService.execute, with a test.",
]


def test_an_item_the_session_channel_alone_found_reaches_an_mcp_agent(
    world: World, monkeypatch: Any
) -> None:
    """The SDK's server checks a reply against its published schema: a pack holding a
    turn only the session channel found ("session") was refused, and the agent read
    "Error executing tool memory_recall" however often it asked."""
    for n, turn in enumerate(TURNS):
        body = {"kind": "episode", "name": f"s3-turn-{n}", "body": turn, "session_id": "s3"}
        assert call(world.client("alpha"), "post", "/memories", body).status_code == 201
    gotcha = {
        "kind": "gotcha",
        "name": "refund-twice",
        "body": "RefundService.execute must treat an already refunded charge as done.",
    }
    assert call(world.client("alpha"), "post", "/memories", gotcha).status_code == 201
    indexing.apply_pending()

    status, pack = mcp(
        world, "alpha", "memory_recall", {"query": "RefundService.execute", "budget": 600},
        monkeypatch,
    )  # fmt: skip

    assert status == 200, pack
    assert "session" in {item["source"] for item in pack["items"]}
