"""Expiry over the agent API and MCP, with the console's clock pinned: an expired
memory leaves recall, search, briefing, prompt recall, lists and reads at once;
`manage.py expire` purges its row and plane entries (`--dry-run` purges nothing)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from console import indexing, wiring
from console.models import Memory
from tests.console.api_world import World, call, mcp, recall_both, world_fixture  # noqa: F401

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
WORDS = "The wombat ferry timetable changes"


@pytest.fixture
def clock(monkeypatch: Any) -> list[datetime]:
    """The console's one clock (store, engine, services), pinned and movable."""
    now = [T0]
    monkeypatch.setattr("django.utils.timezone.now", lambda: now[0])
    return now


def _seen(world: World) -> dict[str, set[str]]:
    """The ids each read shows alpha's agent."""
    client = world.client("alpha")
    recall = call(client, "post", "/recall", {"query": "wombat ferry", "record": False}).json()
    search = call(client, "get", "/search", {"q": "wombat ferry", "record": False}).json()
    briefing = call(client, "post", "/briefing", {"project": "alpha"}).json()
    asked = {"project": "alpha", "prompt": "the quince marmalade pier by the ferry"}
    prompt = call(client, "post", "/prompt-recall", asked)
    listed = call(client, "get", "/memories").json()
    return {
        "recall": {i["id"] for i in recall["items"]},
        "search": {h["id"] for h in search["hits"]},
        "briefing": set(briefing["ids"]),
        "prompt": set(prompt.json()["ids"]),
        "list": {m["id"] for m in listed["memories"]},
    }


def test_an_expired_memory_leaves_every_read_and_expire_purges_it(
    world: World, clock: list[datetime], monkeypatch: Any
) -> None:
    client = world.client("alpha")
    r = call(client, "post", "/memories",
             {"name": "wombat-ttl", "description": WORDS, "ttl_seconds": 60})  # fmt: skip
    assert r.status_code == 201, r.content
    one = r.json()["memory"]
    assert one["expires_at"] == "2026-06-01T12:01:00Z"
    status, batch = mcp(world, "alpha", "memory_write_batch", {"memories": [
        {"name": "wombat-at", "description": "Wombat ferry: quince marmalade at the pier",
         "expires_at": (T0 + timedelta(seconds=30)).isoformat()},
        {"name": "wombat-kept", "description": WORDS + " for good"},
    ]}, monkeypatch)  # fmt: skip
    assert status == 200, batch
    at, kept = (item["id"] for item in batch["items"])
    indexing.apply_pending()
    gone = {one["id"], at}

    before = _seen(world)
    assert all(gone | {kept} <= ids for read, ids in before.items() if read != "prompt")
    assert at in before["prompt"]

    clock[0] = T0 + timedelta(seconds=60)  # both expiries reached
    after = _seen(world)
    assert all(not (gone & ids) for ids in after.values()), after
    assert kept in after["recall"] and kept in after["list"]
    assert call(client, "get", f"/memories/{one['id']}").status_code == 404
    assert gone <= wiring.text_index().ids()  # still indexed: reads filter it, purge frees it

    out = StringIO()
    call_command("expire", "--dry-run", stdout=out)
    assert "would purge 2 expired memories" in out.getvalue()
    assert Memory.objects.filter(pk__in=gone).count() == 2

    call_command("expire", stdout=StringIO())
    assert not Memory.objects.filter(pk__in=gone).exists()
    assert not gone & wiring.text_index().ids()
    vectors = wiring.vector_plane()
    assert vectors is not None and not gone & vectors.ids() and kept in vectors.ids()
    assert Memory.objects.filter(pk=kept).exists()


def test_ttl_and_expires_at_are_checked_and_the_earlier_wins(
    world: World, clock: list[datetime]
) -> None:
    client = world.client("alpha")
    both = call(client, "post", "/memories", {
        "name": "wombat-both", "description": WORDS, "ttl_seconds": 3600,
        "expires_at": (T0 + timedelta(seconds=10)).isoformat(),
    })  # fmt: skip
    assert both.json()["memory"]["expires_at"] == "2026-06-01T12:00:10Z"
    assert call(client, "post", "/memories",
                {"name": "wombat-zero", "ttl_seconds": 0}).status_code == 422  # fmt: skip
    for past in ("2026-06-01T11:59:59Z", "2020-01-01T00:00:00"):  # would vanish at once
        late = call(client, "post", "/memories", {"name": "wombat-late", "expires_at": past})
        assert late.status_code == 409 and late.json()["field"] == "expires_at", late.json()
        assert "passed" in late.json()["detail"]
        moved = call(client, "patch", f"/memories/{both.json()['memory']['id']}",
                     {"expires_at": past})  # fmt: skip
        assert moved.status_code == 409 and moved.json()["field"] == "expires_at"
        batch = call(client, "post", "/memories/batch",
                     {"memories": [{"name": "wombat-b", "expires_at": past}]})  # fmt: skip
        assert batch.status_code == 409 and batch.json()["field"] == "memories.0.expires_at"
    assert not Memory.objects.filter(name__in=["wombat-late", "wombat-b"]).exists()
    edit = call(client, "patch", f"/memories/{both.json()['memory']['id']}", {"ttl_seconds": 120})
    assert edit.json()["expires_at"] == "2026-06-01T12:02:00Z"


def test_decay_and_worth_fields_are_accepted_over_rest_and_mcp(
    world: World, monkeypatch: Any
) -> None:
    body = {"query": "albatross", "decay": True, "importance_weighted": False, "worth_weight": 2}
    rest, (status, over_mcp) = recall_both(world, body, monkeypatch)
    assert rest.status_code == 200 and status == 200
    assert [i["id"] for i in rest.json()["items"]] == [i["id"] for i in over_mcp["items"]]
    bad = call(world.client("alpha"), "post", "/recall", {"query": "x", "worth_weight": 3})
    assert bad.status_code == 422


def test_the_index_worker_purges_expired_memories(
    world: World, clock: list[datetime], monkeypatch: Any
) -> None:
    import signal

    from console import services

    written = call(world.client("alpha"), "post", "/memories",
                   {"name": "wombat-brief", "description": WORDS, "ttl_seconds": 5})  # fmt: skip
    gone = written.json()["memory"]["id"]
    indexing.apply_pending()
    clock[0] = T0 + timedelta(seconds=5)
    handlers: dict[int, Any] = {}
    monkeypatch.setattr(signal, "signal", lambda sig, handler: handlers.setdefault(sig, handler))
    sync = services.index_sync

    def once(**kw: Any) -> Any:  # one pass of the loop, then the worker is told to stop
        handlers[signal.SIGTERM](signal.SIGTERM, None)
        return sync(**kw)

    monkeypatch.setattr(services, "index_sync", once)
    out = StringIO()
    call_command("index_worker", "--expire-every", "1e-9", "--interval", "0.01", stdout=out)

    assert "purged 1 expired memories" in out.getvalue()
    assert not Memory.objects.filter(pk=gone).exists()
    indexing.apply_pending()
    assert gone not in wiring.text_index().ids()


def test_the_index_worker_outlives_a_failed_pass(world: World, monkeypatch: Any) -> None:
    import signal

    from django.db import OperationalError

    from console import services
    from console.management.commands import index_worker

    handlers: dict[int, Any] = {}
    monkeypatch.setattr(signal, "signal", lambda sig, handler: handlers.setdefault(sig, handler))
    monkeypatch.setattr(index_worker, "RETRY_PAUSE_S", 0)
    passes: list[str] = []
    sync = services.index_sync

    def flaky(**kw: Any) -> Any:  # the first pass fails, the second is the last
        passes.append("pass")
        if len(passes) == 1:
            raise OperationalError("database is locked")
        handlers[signal.SIGTERM](signal.SIGTERM, None)
        return sync(**kw)

    monkeypatch.setattr(services, "index_sync", flaky)
    out, err = StringIO(), StringIO()
    call_command("index_worker", "--interval", "0.01", stdout=out, stderr=err)

    assert passes == ["pass", "pass"]
    assert "applying failed (OperationalError: database is locked); retrying" in err.getvalue()
    assert "index worker: stopped" in out.getvalue()


def test_include_history_reaches_an_expired_memory_until_it_is_purged(
    world: World, clock: list[datetime]
) -> None:
    """Seed 003's cold tier: expired-but-kept memories answer `include_history`."""
    client = world.client("alpha")
    r = call(client, "post", "/memories",
             {"name": "wombat-brief", "description": WORDS, "ttl_seconds": 60})  # fmt: skip
    gone = r.json()["memory"]["id"]
    indexing.apply_pending()
    clock[0] = T0 + timedelta(seconds=61)

    def ids(**extra: Any) -> tuple[set[str], str]:
        body = {"query": "wombat ferry", "record": False, "debug": True, **extra}
        reply = call(client, "post", "/recall", body).json()
        return {i["id"] for i in reply["items"]}, reply["debug"]["tier"]

    live, tier = ids()
    assert gone not in live and tier == "warm"
    past, tier = ids(include_history=True)
    assert gone in past and tier == "cold"
    call_command("expire", stdout=StringIO())
    assert gone not in ids(include_history=True)[0]


def test_an_expired_memory_answers_no_duplicate_write(world: World, clock: list[datetime]) -> None:
    """Writing the text of an expired (not yet purged) memory again creates a memory
    that can be read and deleted (schemathesis ST302 found the old one answering)."""
    client = world.client("alpha")
    body = {"name": "wombat-again", "description": WORDS}
    first = call(client, "post", "/memories", {**body, "ttl_seconds": 60})
    assert first.status_code == 201, first.content
    clock[0] = T0 + timedelta(seconds=61)

    again = call(client, "post", "/memories", body)

    assert again.status_code == 201, again.content
    made = again.json()["memory"]["id"]
    assert made != first.json()["memory"]["id"]
    assert call(client, "get", f"/memories/{made}").status_code == 200
    assert call(client, "delete", f"/memories/{made}").status_code in (200, 204)


def test_a_query_only_an_expired_memory_held_says_nothing_answers_it(
    world: World, clock: list[datetime]
) -> None:
    # Its full-text hit, dropped only at hydration, kept the meaning floor off: the
    # agent got unrelated meaning-only memories and no warning until the purge.
    client = world.client("alpha")
    for name, text in (("wombat-ttl", "Ephemeral wombatword fact"),
                       ("ferry-times", "The harbour ferry leaves at nine")):  # fmt: skip
        made = {"name": name, "description": text}
        r = call(client, "post", "/memories", made | ({"ttl_seconds": 5} if "ttl" in name else {}))
        assert r.status_code == 201, r.content
    indexing.apply_pending()
    asked = {"query": "wombatword", "record": False}
    before = call(client, "post", "/recall", asked).json()
    assert before["items"][0]["name"] == "wombat-ttl" and not before["warnings"]

    clock[0] = T0 + timedelta(seconds=6)
    after = call(client, "post", "/recall", asked).json()

    assert after["items"] == []
    assert after["warnings"] and after["warnings"][-1].endswith("no memory answers this")
