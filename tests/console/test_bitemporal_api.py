"""Bitemporal memory over REST and MCP: valid time, transaction time, their reads.

`as_of` (what was true then) and `recorded_as_of` (what we knew then) on
recall (`recall_both`: the same call over REST and MCP), search and read,
across a supersede chain, an edit and a delete; valid time on write and
supersede, with 422s naming the field; the scope guard on past states.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from console.models import Memory, MemoryRevision
from tests.console.api_world import World, call, mcp, recall_both, world_fixture  # noqa: F401

AHEAD = (timezone.now() + timedelta(days=30)).isoformat()
JAN, FEB, MAR, APR, JUN, JUL = (
    f"2024-{m:02d}-01T00:00:00Z" for m in (1, 2, 3, 4, 6, 7)
)  # fmt: skip


def mark() -> str:
    """An instant strictly between the changes around it (an ordering guard)."""
    time.sleep(0.002)
    instant = timezone.now().isoformat()
    time.sleep(0.002)
    return instant


def write(world: World, **fields: Any) -> dict[str, Any]:
    body = {"project": "alpha", "kind": "decision", **fields}
    response = call(world.client("alpha"), "post", "/memories", body)
    assert response.status_code == 201, response.json()
    return dict(response.json()["memory"])


def supersede(world: World, memory_id: str, **fields: Any) -> dict[str, Any]:
    response = call(world.client("alpha"), "post", f"/memories/{memory_id}/supersede", fields)
    assert response.status_code == 201, response.json()
    return dict(response.json()["memory"])


def recalled(world: World, monkeypatch: Any, **when: Any) -> list[list[str]]:
    """The ids recalled for "zebrafish queue" over REST and over MCP, each in order."""
    body = {"query": "zebrafish queue", "project": "alpha", "debug": True, **when}
    rest, (status, over_mcp) = recall_both(world, body, monkeypatch)
    assert rest.status_code == status == 200, (rest.json(), over_mcp)
    for reply in (rest.json(), over_mcp):
        assert reply["debug"]["tier"] == "cold"
    return [[i["id"] for i in rest.json()["items"]], [i["id"] for i in over_mcp["items"]]]


def chain(world: World) -> tuple[str, str, str]:
    a = write(world, name="queue-choice", description="zebrafish queue: RabbitMQ",
              valid_from=JAN)  # fmt: skip
    b = supersede(world, a["id"], description="zebrafish queue: SQS", valid_from=MAR)
    c = supersede(world, b["id"], description="zebrafish queue: Kafka", valid_from=JUN)
    return a["id"], b["id"], c["id"]


def test_as_of_returns_the_one_memory_of_a_chain_valid_then(world: World, monkeypatch: Any) -> None:
    a, b, c = chain(world)

    assert recalled(world, monkeypatch, as_of="2023-06-01T00:00:00Z") == [[], []]
    assert recalled(world, monkeypatch, as_of=FEB) == [[a], [a]]
    assert recalled(world, monkeypatch, as_of=APR) == [[b], [b]]
    assert recalled(world, monkeypatch, as_of=JUL) == [[c], [c]]
    old = call(world.client("alpha"), "get", f"/memories/{a}").json()
    assert (old["valid_from"], old["invalid_at"], old["superseded_by"]) == (
        "2024-01-01T00:00:00Z", "2024-03-01T00:00:00Z", b,
    )  # fmt: skip


def test_a_history_as_of_an_instant_puts_the_version_valid_then_first(
    world: World, monkeypatch: Any
) -> None:
    # It ranked a version retired before the instant above the one valid then.
    a, b, c = chain(world)

    for at, then in ((FEB, a), (APR, b), (JUL, c)):
        got = recalled(world, monkeypatch, as_of=at, include_history=True)
        assert got[0] == got[1] and set(got[0]) == {a, b, c}, at
        assert got[0][0] == then, at


def test_recorded_as_of_sees_the_text_before_and_after_an_edit(
    world: World, monkeypatch: Any
) -> None:
    m = write(world, name="deploy-day", description="zebrafish queue deploys on Fridays")
    before = mark()
    patched = call(world.client("alpha"), "patch", f"/memories/{m['id']}",
                   {"description": "zebrafish queue never deploys on Fridays"})  # fmt: skip
    assert patched.status_code == 200
    after = mark()

    body = {"query": "zebrafish queue", "project": "alpha"}
    for when, text in ((before, "deploys on Fridays"), (after, "never deploys")):
        rest, (_, over_mcp) = recall_both(world, {**body, "recorded_as_of": when}, monkeypatch)
        for reply in (rest.json(), over_mcp):
            assert [i["id"] for i in reply["items"]] == [m["id"]]
            assert text in reply["items"][0]["text"]
        read = call(world.client("alpha"), "get", f"/memories/{m['id']}",
                    {"recorded_as_of": when})  # fmt: skip
        assert text in read.json()["description"]
        status, over = mcp(world, "alpha", "memory_read",
                           {"id": m["id"], "recorded_as_of": when}, monkeypatch)  # fmt: skip
        assert status == 200 and text in over["description"]
    assert "never deploys" not in recalled_text(world, before)


def recalled_text(world: World, when: str) -> str:
    reply = call(world.client("alpha"), "post", "/recall",
                 {"query": "zebrafish queue", "recorded_as_of": when})  # fmt: skip
    return " ".join(i["text"] for i in reply.json()["items"])


def test_a_deleted_memory_is_present_before_its_delete_and_absent_at_every_later_instant(
    world: World, monkeypatch: Any
) -> None:
    early = mark()
    m = write(world, name="short-lived", description="zebrafish queue for a day")
    known = mark()
    assert call(world.client("alpha"), "delete", f"/memories/{m['id']}").status_code == 200
    later = [mark(), mark()]

    assert recalled(world, monkeypatch, recorded_as_of=early) == [[], []]
    assert recalled(world, monkeypatch, recorded_as_of=known) == [[m["id"]], [m["id"]]]
    url = f"/memories/{m['id']}"
    assert call(world.client("alpha"), "get", url, {"recorded_as_of": known}).status_code == 200
    for when in later:
        assert recalled(world, monkeypatch, recorded_as_of=when) == [[], []]
        found = call(world.client("alpha"), "get", url, {"recorded_as_of": when})
        assert found.status_code == 404
        hits = call(world.client("alpha"), "get", "/search",
                    {"q": "zebrafish", "recorded_as_of": when}).json()["hits"]  # fmt: skip
        assert hits == []
    asked = {"q": "zebrafish", "recorded_as_of": known}
    then = call(world.client("alpha"), "get", "/search", asked)
    assert [h["id"] for h in then.json()["hits"]] == [m["id"]]
    ops = MemoryRevision.objects.filter(memory_id=m["id"]).values_list("op", flat=True)
    assert list(ops) == ["create", "delete"]


def test_search_and_read_as_of_valid_time(world: World, monkeypatch: Any) -> None:
    a, b, c = chain(world)
    client = world.client("alpha")

    for when, wanted in ((FEB, a), (APR, b), (JUL, c)):
        hits = call(client, "get", "/search", {"q": "zebrafish", "as_of": when}).json()["hits"]
        assert [h["id"] for h in hits] == [wanted]
        status, found = mcp(world, "alpha", "memory_search", {"q": "zebrafish", "as_of": when},
                            monkeypatch)  # fmt: skip
        assert status == 200 and [h["id"] for h in found["hits"]] == [wanted]
    then = call(client, "get", f"/memories/{a}", {"as_of": FEB})
    assert then.status_code == 200
    assert call(client, "get", f"/memories/{a}", {"as_of": APR}).status_code == 404
    # Active then, as the search as of then says; invalid_at says when it stopped.
    searched = call(client, "get", "/search", {"q": "zebrafish", "as_of": FEB}).json()["hits"]
    assert "active" not in then.json() and "active" not in searched[0]  # absent: active
    assert then.json()["invalid_at"] == "2024-03-01T00:00:00Z"
    assert call(client, "get", f"/memories/{a}").json()["active"] is False  # now


def test_a_past_state_is_read_by_the_name_it_had_then(world: World, monkeypatch: Any) -> None:
    a, b, c = chain(world)  # one name, three memories, each valid in turn
    client = world.client("alpha")

    for when, wanted in ((FEB, a), (APR, b), (JUL, c)):
        read = call(client, "get", "/memories/queue-choice", {"as_of": when})
        assert read.status_code == 200 and read.json()["id"] == wanted
        status, over = mcp(world, "alpha", "memory_read", {"name": "queue-choice", "as_of": when},
                           monkeypatch)  # fmt: skip
        assert status == 200 and over["id"] == wanted
    before = call(client, "get", "/memories/queue-choice", {"as_of": "2023-06-01T00:00:00Z"})
    assert before.status_code == 404 and "queue-choice" in before.json()["detail"]

    known = mark()
    assert call(client, "patch", f"/memories/{c}", {"name": "queue-now"}).status_code == 200
    then = call(client, "get", "/memories/queue-choice", {"recorded_as_of": known})
    assert then.status_code == 200 and then.json()["id"] == c
    assert call(client, "get", "/memories/queue-choice", {"as_of": JUL}).status_code == 404


def test_a_bare_time_is_a_422_and_an_empty_interval_a_409_each_naming_the_field(
    world: World,
) -> None:
    """A naive instant is schema-invalid (RFC 3339 date-times carry an offset): 422. An
    interval whose end is not after its start is well-formed values in conflict, which
    no schema can express: 409, as the schema contract (test_api_schema) requires."""
    client = world.client("alpha")
    m = write(world, name="dated", description="dated", valid_from=MAR)
    bare = "2024-01-01T00:00:00"
    cases = [
        ("post", "/memories", {"project": "alpha", "name": "x", "valid_from": bare}, 422,
         "valid_from"),
        ("post", "/recall", {"query": "zebrafish", "as_of": bare}, 422, "as_of"),
        ("get", f"/memories/{m['id']}", {"as_of": bare}, 422, "as_of"),
        ("post", "/memories", {"project": "alpha", "name": "x", "body": "b", "valid_from": MAR,
                               "invalid_at": JAN}, 409, "invalid_at"),
        ("post", "/memories/batch", {"project": "alpha", "memories": [
            {"name": "ok", "body": "b"}, {"name": "x", "body": "b", "invalid_at": JAN}]}, 409,
         "memories.1.invalid_at"),
        ("post", f"/memories/{m['id']}/supersede", {"valid_from": JAN}, 409, "valid_from"),
        ("patch", f"/memories/{m['id']}", {"invalid_at": FEB}, 409, "invalid_at"),
        # Validity is not scheduled: a future valid_from would read as true now.
        ("post", "/memories", {"project": "alpha", "name": "x", "body": "b",
                               "valid_from": AHEAD}, 409, "valid_from"),
        ("post", "/memories/batch", {"project": "alpha", "memories": [
            {"name": "ok", "body": "b"}, {"name": "x", "body": "b", "valid_from": AHEAD}]}, 409,
         "memories.1.valid_from"),
        ("post", f"/memories/{m['id']}/supersede", {"valid_from": AHEAD}, 409, "valid_from"),
        ("patch", f"/memories/{m['id']}", {"valid_from": AHEAD}, 409, "valid_from"),
        # Nor is its end: a memory with an end left every read at once, 201 and silent.
        ("post", "/memories", {"project": "alpha", "name": "x", "body": "b",
                               "invalid_at": AHEAD}, 409, "invalid_at"),
        ("post", "/memories/batch", {"project": "alpha", "memories": [
            {"name": "ok", "body": "b"}, {"name": "x", "body": "b", "invalid_at": AHEAD}]}, 409,
         "memories.1.invalid_at"),
        ("patch", f"/memories/{m['id']}", {"invalid_at": AHEAD}, 409, "invalid_at"),
    ]  # fmt: skip
    for method, path, body, status, field in cases:
        response = call(client, method, path, body)
        assert response.status_code == status, (path, response.json())
        assert response.json()["field"] == field, response.json()
        if AHEAD in str(body):
            assert "in the future" in response.json()["detail"], response.json()
    dated = call(client, "post", "/recall", {"query": "zebrafish", "as_of": "2024-06-01"}).json()
    assert "a date, or a time without a zone, is ambiguous" in dated["detail"]  # "bare time"
    assert MemoryRevision.objects.filter(memory_id=m["id"]).count() == 1  # nothing changed
    assert not MemoryRevision.objects.filter(name__in=["ok", "x"]).exists()


def test_an_instant_past_the_years_python_holds_once_in_utc_is_a_422_naming_the_field(
    world: World, monkeypatch: Any
) -> None:
    """9999-12-31T23:59:59-05:00 is a valid ISO 8601 time whose UTC instant is in
    year 10000 (and 0001-01-01T00:00:00+05:00 in year 0): each answered 500 on every
    write, filter and time-travel read it reached, and now names its field."""
    client = world.client("alpha")
    late, early = "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"
    m = write(world, name="dated", description="payment timeout 10s")
    cases = [
        ("post", "/memories", {"project": "alpha", "name": "y", "body": "b", "occurred_at": late},
         "occurred_at"),
        ("post", "/memories", {"project": "alpha", "name": "y", "body": "b", "expires_at": late},
         "expires_at"),
        ("post", "/memories", {"project": "alpha", "name": "y", "body": "b",
                               "occurred_at": early}, "occurred_at"),
        ("post", "/memories/batch", {"project": "alpha", "memories": [
            {"name": "ok", "body": "b"}, {"name": "y", "body": "b", "valid_from": early}]},
         "memories.1.valid_from"),
        ("patch", f"/memories/{m['id']}", {"expires_at": late}, "expires_at"),
        ("post", "/recall", {"query": "payment", "as_of": late}, "as_of"),
        ("post", "/recall", {"query": "payment", "recorded_as_of": early}, "recorded_as_of"),
        ("get", "/search", {"q": "payment", "as_of": early}, "as_of"),
        ("get", "/search", {"q": "payment", "recorded_as_of": late}, "recorded_as_of"),
        ("get", "/memories", {"created_after": late}, "created_after"),
        ("get", "/memories", {"created_before": early}, "created_before"),
        ("get", f"/memories/{m['id']}", {"as_of": late}, "as_of"),
    ]  # fmt: skip
    for method, path, body, field in cases:
        response = call(client, method, path, body)
        assert response.status_code == 422, (path, body, response.content)
        assert response.json()["field"] == field, response.json()
        assert "outside the years 1 to 9999" in response.json()["detail"], response.json()
    status, body = mcp(world, "alpha", "memory_recall", {"query": "payment", "as_of": late},
                       monkeypatch)  # fmt: skip
    assert (status, body["field"]) == (422, "as_of"), body
    assert not Memory.objects.filter(name__in=["ok", "y"]).exists()
    assert Memory.objects.get(id=m["id"]).expires_at is None
    # The last instant Python holds is still taken.
    edge = call(client, "post", "/recall", {"query": "payment", "as_of": "9999-12-31T23:59:59Z"})
    assert edge.status_code == 200, edge.json()


def test_another_projects_history_stays_out_of_reach(world: World, monkeypatch: Any) -> None:
    a, _, _ = chain(world)
    now = datetime.now(UTC).isoformat()
    beta = world.client("beta")

    pack = call(beta, "post", "/recall", {"query": "zebrafish queue", "as_of": FEB})
    assert pack.status_code == 200 and pack.json()["items"] == []
    hits = call(beta, "get", "/search", {"q": "zebrafish", "recorded_as_of": now}).json()
    assert hits["hits"] == []
    assert call(beta, "get", f"/memories/{a}", {"as_of": FEB}).status_code == 404
    status, _ = mcp(world, "beta", "memory_read", {"id": a, "recorded_as_of": now}, monkeypatch)
    assert status == 404


def test_a_retried_supersede_names_the_replacement_it_already_made(world: World) -> None:
    """An agent whose supersede reply was lost retries: the 409 names what replaced the
    memory, so it does not supersede twice."""
    old = write(world, name="timeout", description="payment timeout 10s")
    new = supersede(world, old["id"], description="payment timeout 20s")

    again = call(world.client("alpha"), "post", f"/memories/{old['id']}/supersede",
                 {"description": "payment timeout 20s"})  # fmt: skip

    assert again.status_code == 409
    assert new["id"] in again.json()["detail"] and "'timeout'" in again.json()["detail"]


def test_a_supersede_retried_with_its_idempotency_key_gets_the_first_answer(
    world: World, monkeypatch: Any
) -> None:
    old = write(world, name="retry-me", description="payment timeout 10s")
    path = f"/memories/{old['id']}/supersede"
    client = world.client("alpha")
    body = json.dumps({"description": "payment timeout 20s"})

    def send() -> Any:
        return client.post(f"/api/v1{path}", body, content_type="application/json",
                           HTTP_IDEMPOTENCY_KEY="sup-1")  # fmt: skip

    first, again = send(), send()

    assert first.status_code == again.status_code == 201
    # The first answer, byte for byte (PostgreSQL's jsonb gave its keys back reordered).
    assert again.content == first.content
    assert Memory.objects.filter(name="retry-me").count() == 2  # one replacement
    new = write(world, name="retry-mcp", description="queue depth 5")
    args = {"id": new["id"], "description": "queue depth 9", "idempotency_key": "sup-2"}
    answers = [mcp(world, "alpha", "memory_supersede", args, monkeypatch) for _ in range(2)]
    assert [status for status, _ in answers] == [200, 200]  # MCP: a result, not a 201
    assert list(answers[0][1]["memory"]) == list(answers[1][1]["memory"])
    assert answers[0][1]["memory"]["id"] == answers[1][1]["memory"]["id"]
    assert Memory.objects.filter(name="retry-mcp").count() == 2


def test_an_item_says_its_times_to_the_second_and_as_of_them_finds_that_state(
    world: World, monkeypatch: Any
) -> None:
    # Every written time carries microseconds (7 bytes of each `valid_from` a pack
    # item said). Said to the second, rounded up: an `as_of` of the figure shown
    # finds the state it begins, as the exact time would (cut down, 404).
    a = write(world, name="queue-choice", description="zebrafish queue: RabbitMQ",
              valid_from="2024-01-01T00:00:00.250000Z")  # fmt: skip
    b = supersede(world, a["id"], description="zebrafish queue: SQS",
                  valid_from="2024-03-01T00:00:00.750000Z")  # fmt: skip
    body = {"query": "zebrafish queue", "project": "alpha", "include_history": True, "as_of": JUN}

    rest, (status, over_mcp) = recall_both(world, body, monkeypatch)

    assert rest.json() | {"pack_id": ""} == over_mcp | {"pack_id": ""} and status == 200
    items = {item["id"]: item for item in over_mcp["items"]}
    assert (items[a["id"]]["valid_from"], items[a["id"]]["invalid_at"]) == (
        "2024-01-01T00:00:01Z", "2024-03-01T00:00:01Z",
    )  # fmt: skip
    assert items[b["id"]]["valid_from"] == "2024-03-01T00:00:01Z"
    for item in items.values():  # scores to 3 significant digits
        assert item["score"] == float(f"{item['score']:.3g}")
    read = world.client("alpha")
    shown = items[a["id"]]
    assert (
        call(read, "get", f"/memories/{a['id']}", {"as_of": shown["valid_from"]}).status_code == 200
    )
    assert (
        call(read, "get", f"/memories/{a['id']}", {"as_of": shown["invalid_at"]}).status_code == 404
    )
    then = {"as_of": items[b["id"]]["valid_from"]}
    assert call(read, "get", f"/memories/{b['id']}", then).status_code == 200
    exact = call(read, "get", f"/memories/{a['id']}").json()  # the record keeps the exact time
    assert exact["valid_from"] == "2024-01-01T00:00:00.250000Z"
