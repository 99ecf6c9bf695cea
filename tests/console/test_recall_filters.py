"""Recall's filters (Dakera seed 004) over REST and MCP: each one fills the page from
in-scope candidates, and a bad value is refused by name on both surfaces."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from console import indexing, services
from console.models import Project
from console.schemas import ContextPackOut
from tests.console.api_world import World, call, mcp, world_fixture  # noqa: F401

pytestmark = pytest.mark.django_db

JAN, JUL = datetime(2024, 1, 1, tzinfo=UTC), datetime(2024, 7, 1, tzinfo=UTC)
JUNE = "2024-06-01T00:00:00Z"

# (request field, value, attributes of the memories it refuses, of those it admits)
CASES: list[tuple[str, Any, dict[str, Any], dict[str, Any]]] = [
    ("kinds", ["decision", "episode"], {"kind": "fact"}, {"kind": "decision"}),
    ("kind", "decision", {"kind": "fact"}, {"kind": "decision"}),
    ("tags", ["red", "blue"], {"tags": ["red"]}, {"tags": ["blue", "red"]}),
    ("any_tags", ["blue", "green"], {"tags": ["red"]}, {"tags": ["green"]}),
    ("agent_id", "ag-1", {"agent_id": "ag-2"}, {"agent_id": "ag-1"}),
    ("session_id", "s-2", {"session_id": "s-1"}, {"session_id": "s-2"}),
    ("min_importance", 0.5, {"importance": 0.2}, {"importance": 0.8}),
    ("since", JUNE, {"created": JAN}, {"created": JUL}),
    ("until", JUNE, {"created": JUL}, {"created": JAN}),
]
PAGE = 10


def lighthouses(refused: dict[str, Any], admitted: dict[str, Any]) -> set[str]:
    """In alpha: 90 memories the filter refuses, each matching "lighthouse" strongly,
    and 10 it admits that match weakly. Returns the admitted ids."""
    alpha = Project.objects.get(slug="alpha")
    admitted_ids = set()
    for n in range(100):
        keep = n % 10 == 0
        attrs = {"kind": "fact", **(admitted if keep else refused)}
        text = (
            f"lighthouse note {n}: the keeper logs the lamp"
            if keep
            else f"lighthouse lighthouse lighthouse {n} lighthouse"
        )
        memory = services.memory_create(
            project=alpha, name=f"light-{n:03d}", description=text[:150], body=text, **attrs
        )
        if keep:
            admitted_ids.add(memory.pk)
    indexing.apply_pending()
    return admitted_ids


ASK = {"query": "lighthouse", "limit": PAGE, "budget": 8000, "detail": "index", "record": False}


def ids(reply: dict[str, Any]) -> set[str]:
    return {i["id"] for i in reply["items"]}


@pytest.mark.parametrize(
    ("field", "value", "refused", "admitted"), CASES, ids=[c[0] for c in CASES]
)
def test_a_filter_that_drops_90_percent_still_fills_the_page_on_rest_and_mcp(
    world: World, monkeypatch: Any, field: str, value: Any, refused: dict, admitted: dict
) -> None:
    admitted_ids = lighthouses(refused, admitted)
    client = world.client("alpha")

    plain = call(client, "post", "/recall", ASK).json()
    rest = call(client, "post", "/recall", {**ASK, field: value})
    status, tool = mcp(world, "alpha", "memory_recall", {**ASK, field: value}, monkeypatch)

    assert len(ids(plain) & admitted_ids) <= 1  # the filter drops 9 or 10 of the plain page
    assert rest.status_code == status == 200
    ContextPackOut.model_validate(rest.json())
    assert ids(rest.json()) == admitted_ids  # a full page, every item in scope
    assert ids(tool) == admitted_ids


BAD: list[tuple[str, Any]] = [
    ("kinds", ["nonsense"]),
    ("kinds", []),
    ("tags", [""]),
    ("any_tags", ["x" * 65]),
    ("agent_id", ""),
    ("session_id", "s" * 121),
    ("min_importance", 1.5),
    ("since", "not a date"),
    ("until", 0.5),
]


@pytest.mark.parametrize(("field", "bad"), BAD, ids=[f"{f}={b!r}"[:40] for f, b in BAD])
def test_a_bad_filter_value_is_refused_by_name_on_rest_and_mcp(
    world: World, monkeypatch: Any, field: str, bad: Any
) -> None:
    ask = {"query": "albatross", "record": False, field: bad}

    rest = call(world.client("alpha"), "post", "/recall", ask)
    status, refused = mcp(world, "alpha", "memory_recall", ask, monkeypatch)

    assert rest.status_code == status == 422
    assert rest.json()["field"].split(".")[0] == refused["field"].split(".")[0] == field


@pytest.mark.parametrize(
    ("ask", "says"),
    [
        ({"since": "2024-07-01T00:00:00Z", "until": JUNE}, "since is after until"),
        ({"tags": ["  "]}, "a blank tag matches no item"),
        ({"any_tags": [" ", "\t"]}, "a blank tag matches no item"),
    ],
)
def test_a_filter_no_item_can_pass_is_an_empty_pack_that_says_why(
    world: World, monkeypatch: Any, ask: dict, says: str
) -> None:
    """The schema cannot express these, so they are answered, never refused (a request
    the schema allows is never a 400)."""
    body = {"query": "albatross", "record": False, **ask}

    rest = call(world.client("alpha"), "post", "/recall", body)
    status, tool = mcp(world, "alpha", "memory_recall", body, monkeypatch)

    assert rest.status_code == status == 200
    assert rest.json()["items"] == tool["items"] == []
    assert any(says in w for w in rest.json()["warnings"])


def test_kind_joins_kinds(world: World) -> None:
    alpha = Project.objects.get(slug="alpha")
    made = {
        kind: services.memory_create(project=alpha, kind=kind, name=f"j-{kind}",
                                     description="a jetty story", body="a jetty story")
        for kind in ("decision", "episode", "fact")
    }  # fmt: skip
    indexing.apply_pending()
    body = {"query": "jetty", "kind": "decision", "kinds": ["episode"], "record": False}

    reply = call(world.client("alpha"), "post", "/recall", body).json()

    assert ids(reply) == {made["decision"].pk, made["episode"].pk}


def test_filters_never_widen_the_tokens_scope(world: World) -> None:
    beta = Project.objects.get(slug="beta")
    services.memory_create(project=beta, name="beta-light", description="lighthouse",
                           body="lighthouse", tags=["red"])  # fmt: skip
    indexing.apply_pending()

    reply = call(world.client("alpha"), "post", "/recall", {**ASK, "tags": ["red"]}).json()

    assert reply["items"] == []


def test_an_empty_query_with_kinds_browses_them(world: World) -> None:
    alpha = Project.objects.get(slug="alpha")
    made = [
        services.memory_create(project=alpha, kind=kind, name=f"b-{kind}",
                               description=f"a {kind}", body=f"a {kind}", tags=["t"])
        for kind in ("decision", "episode", "fact")
    ]  # fmt: skip
    indexing.apply_pending()

    reply = call(world.client("alpha"), "post", "/recall",
                 {"query": "", "kinds": ["decision", "episode"], "tags": ["t"],
                  "record": False}).json()  # fmt: skip

    assert ids(reply) == {made[0].pk, made[1].pk}


# The Recall inspector: one control per filter, the same engine request.
INSPECT = {"mode": "recall", "query": "lighthouse", "project": "alpha", "limit": str(PAGE),
           "budget": "8000"}  # fmt: skip
CONTROLS: dict[str, dict[str, Any]] = {  # what a person types into each control
    "kinds": {"kinds": ["decision", "episode"]},
    "kind": {"kinds": ["decision"]},
    "tags": {"tags": "red, blue"},
    "any_tags": {"any_tags": "blue,green"},
    "agent_id": {"agent_id": "ag-1"},
    "session_id": {"session_id": "s-2"},
    "min_importance": {"min_importance": "0.5"},
    "since": {"since": "2024-06-01 00:00"},
    "until": {"until": "2024-06-01 00:00"},
}


@pytest.mark.parametrize(
    ("field", "value", "refused", "admitted"), CASES, ids=[c[0] for c in CASES]
)
def test_each_filter_has_an_inspector_control_that_fills_the_page(
    world: World, admin_client: Any, field: str, value: Any, refused: dict, admitted: dict
) -> None:
    lighthouses(refused, admitted)

    html = admin_client.get(
        "/inspect/", {**INSPECT, **CONTROLS[field]}, HTTP_HX_REQUEST="true"
    ).content.decode()

    assert f"The agent gets <strong>{PAGE} items</strong>" in html
    shown = {f"light-{n:03d}" for n in range(100) if f">light-{n:03d}<" in html}
    assert shown == {f"light-{n:03d}" for n in range(0, 100, 10)}  # the admitted ten


def test_the_inspector_shows_every_filter_control_and_refuses_a_bad_value(
    world: World, admin_client: Any
) -> None:
    page = admin_client.get("/inspect/").content.decode()
    bad = admin_client.get(
        "/inspect/", {**INSPECT, "min_importance": "2"}, HTTP_HX_REQUEST="true"
    ).content.decode()

    for name in ("kinds", "tags", "any_tags", "agent_id", "session_id", "min_importance",
                 "since", "until"):  # fmt: skip
        assert f'name="{name}"' in page
    said = bad.split('id="err-inspect-min_importance"', 1)[1].split("</p>", 1)[0]
    assert "Least importance must be between 0 and 1." in said, said  # at its field


def test_a_bare_time_in_a_filter_is_read_as_utc_on_every_endpoint(world: World) -> None:
    alpha = Project.objects.get(slug="alpha")
    for n, created in enumerate((JAN, JUL)):
        services.memory_create(project=alpha, name=f"beacon-{n}", kind="fact",
                               description="beacon keeper log", created=created)  # fmt: skip
    indexing.apply_pending()
    client = world.client("alpha")

    def found(zone: str) -> list[list[str]]:
        recall = call(
            client, "post", "/recall", {"query": "beacon", "since": "2024-06-01T00:00:00" + zone}
        )
        search = call(
            client, "get", "/search", {"q": "beacon", "since": "2024-06-01T00:00:00" + zone}
        )
        listed = call(
            client,
            "get",
            "/memories",
            {"project": "alpha", "created_after": "2024-06-01T00:00:00" + zone},
        )
        for reply in (recall, search, listed):
            assert reply.status_code == 200, reply.json()
        return [
            sorted(i["name"] for i in recall.json()["items"] if "beacon" in i["name"]),
            sorted(h["name"] for h in search.json()["hits"] if "beacon" in h["name"]),
            sorted(m["name"] for m in listed.json()["memories"] if "beacon" in m["name"]),
        ]

    assert found("") == found("Z") == [["beacon-1"]] * 3
