"""The graph over REST and MCP: associations, recall's graph and associated fields,
the raw planes and the graph walk as agent tools, each behind the token's scope."""

from __future__ import annotations

import json
from typing import Any

import pytest

from console import indexing, services
from console.models import Edge, Memory, Project
from console.schemas import AssociationOut, ContextPackOut, GraphOut, SearchOut
from tests.console.api_world import (  # noqa: F401
    World,
    call,
    mcp,
    recall_both,
    world_fixture,
)

pytestmark = pytest.mark.django_db


def remember(world: World, slug: str | None, name: str, description: str) -> Memory:
    project = Project.objects.get(slug=slug) if slug else None
    memory = services.memory_create(
        project=project, kind="fact", name=name, description=description, body=description
    )
    indexing.apply_pending()
    return memory


@pytest.fixture
def chain(world: World) -> dict[str, Memory]:
    """alpha: seed -> near (0.9) -> far (0.8); seed -> light (0.1); a beta memory."""
    made = {
        "seed": world.memories["alpha"],
        "near": remember(world, "alpha", "near-one", "postgres starts before redis"),
        "far": remember(world, "alpha", "far-one", "the web workers start last"),
        "light": remember(world, "alpha", "light-one", "an aside about lunch"),
    }
    for src, dst, weight in (("seed", "near", 0.9), ("near", "far", 0.8), ("seed", "light", 0.1)):
        services.association_write(src=made[src], dst=made[dst], rel="before", weight=weight)
    return made


def test_an_agent_associates_two_memories_and_sets_the_weight_again(world: World) -> None:
    other = remember(world, "alpha", "other-one", "unrelated words")
    path = f"/memories/{world.memories['alpha'].pk}/associate"

    made = call(world.client("alpha"), "post", path, {"target": other.name, "rel": "caused"})
    again = call(world.client("alpha"), "post", path,
                 {"target": other.pk, "rel": "caused", "weight": 0.25})  # fmt: skip

    assert made.status_code == 201 and again.status_code == 200
    AssociationOut.model_validate(again.json())
    assert again.json() == {"src": world.memories["alpha"].pk, "dst": other.pk,
                            "rel": "caused", "weight": 0.25, "created": False}  # fmt: skip
    assert Edge.objects.get(origin="explicit").weight == 0.25
    gone = call(world.client("alpha"), "post", f"/memories/{world.memories['alpha'].pk}/dissociate",
                {"target": other.pk})  # fmt: skip
    assert gone.json()["removed"] == 1 and not Edge.objects.filter(origin="explicit").exists()


@pytest.mark.parametrize(
    ("who", "body", "status", "field"),
    [
        # A target the token cannot see, or none at all: the same 409 (the memory in
        # the path is there, so not 404), and nothing says which of the two it was.
        ("alpha", {"target": "beta-bergamot"}, 409, "target"),  # another project's memory
        ("alpha", {"target": "no-such-memory"}, 409, "target"),
        ("alpha_ro", {"target": "global-gazetteer"}, 403, None),  # read-only token
        ("alpha", {"target": "global-gazetteer", "weight": 1.5}, 422, "weight"),
        ("alpha", {"target": "global-gazetteer", "rel": "links"}, 400, "rel"),  # reserved
        ("alpha", {"target": "global-gazetteer", "rel": "Bad Type"}, 422, "rel"),
    ],
)
def test_associations_are_guarded(world: World, who: str, body: dict, status: int, field: Any):
    path = f"/memories/{world.memories['alpha'].pk}/associate"

    r = call(world.client(who), "post", path, body)

    assert r.status_code == status, r.json()
    if field:
        assert field in json.dumps(r.json())


def test_a_global_memory_is_not_changed_by_an_agent(world: World) -> None:
    path = f"/memories/{world.memories[None].pk}/associate"
    r = call(world.client("alpha"), "post", path, {"target": world.memories["alpha"].pk})
    assert r.status_code == 403


def test_recall_walks_hops_and_adds_associated_items(world: World, chain) -> None:
    client = world.client("alpha")
    body = {"query": "albatross cache", "debug": True, "record": False, "graph_seeds": 1}

    one = call(client, "post", "/recall", body).json()
    two = call(client, "post", "/recall", {**body, "hops": 2}).json()
    off = call(client, "post", "/recall", {**body, "hops": 0}).json()
    light = call(client, "post", "/recall", {**body, "graph_min_weight": 0.5}).json()
    asked = {"hops": 0, "include_associated": True, "associated_depth": 2, "limit": 1}
    linked = call(client, "post", "/recall", {**body, **asked}).json()

    for reply in (one, two, off, light, linked):
        ContextPackOut.model_validate(reply)

    def graph(reply: dict) -> set[str]:  # what the graph channel found (maybe others too)
        return {
            i["id"] for i in reply["items"] if any(p["channel"] == "graph" for p in i["sources"])
        }

    assert graph(one) == {chain["near"].pk, chain["light"].pk}
    assert graph(two) == {chain["near"].pk, chain["far"].pk, chain["light"].pk}
    far = next(i for i in two["items"] if i["id"] == chain["far"].pk)
    prov = next(p for p in far["sources"] if p["channel"] == "graph")
    assert prov["hops"] == 2 and prov["path"] == [chain[k].pk for k in ("seed", "near", "far")]
    assert graph(off) == set() and graph(light) == {chain["near"].pk}
    assert "associated" not in one and one["total_found"] >= len(one["items"])
    main = {i["id"] for i in linked["items"]}
    assoc = [(a["id"], a["depth"], a["via"], a["rel"]) for a in linked["associated"]]
    assert not main & {a[0] for a in assoc}
    assert (chain["far"].pk, 2, chain["seed"].pk, "before") in assoc

    # An associated item carries worth, and the agent that was shown it may rate it.
    recorded = call(client, "post", "/recall", {**body, **asked, "record": True}).json()
    rated = call(client, "post", "/feedback", {
        "pack_id": recorded["pack_id"], "items": [{"id": chain["far"].pk, "helpful": True}],
    })  # fmt: skip
    assert rated.status_code == 200, rated.json()
    assert rated.json()["items"][0]["worth"] > 0.5


@pytest.mark.parametrize(
    "bad",
    [{"hops": 4}, {"associated_cap": 11}, {"associated_depth": 0}, {"graph_min_weight": 2},
     {"graph_reverse": "yes"}],
)  # fmt: skip
def test_graph_fields_out_of_range_are_refused_by_name(world: World, bad: dict) -> None:
    r = call(world.client("alpha"), "post", "/recall", {"query": "albatross", **bad})
    assert r.status_code == 422 and next(iter(bad)) in json.dumps(r.json())


def test_the_same_recall_fields_over_mcp(world: World, chain, monkeypatch) -> None:
    args = {"query": "albatross cache", "hops": 2, "include_associated": True, "record": False}

    status, body = mcp(world, "alpha", "memory_recall", args, monkeypatch)

    assert status == 200
    ContextPackOut.model_validate(body)
    found = {i["id"] for i in body["items"]} | {a["id"] for a in body["associated"]}
    assert chain["far"].pk in found
    assert body["associated"] == [] or all(a["depth"] >= 1 for a in body["associated"])
    status, refused = mcp(world, "alpha", "memory_recall", {"query": "x", "hops": 9}, monkeypatch)
    assert status == 422 and refused["field"] == "hops"


def test_graph_walk_from_a_memory_over_rest_and_mcp(world: World, chain, monkeypatch) -> None:
    body = {"memory": chain["seed"].pk, "hops": 2}

    rest = call(world.client("alpha"), "post", "/graph", body)
    status, tool = mcp(world, "alpha", "memory_graph", body, monkeypatch)

    assert rest.status_code == status == 200 and rest.json() == tool
    GraphOut.model_validate(tool)
    assert tool["start"]["id"] == chain["seed"].pk
    nodes = [(n["id"], n["hops"], n["rels"]) for n in tool["nodes"]]
    assert nodes == [
        (chain["near"].pk, 1, ["before"]),
        (chain["far"].pk, 2, ["before", "before"]),
        (chain["light"].pk, 1, ["before"]),
    ]
    assert tool["nodes"][1]["score"] == pytest.approx(0.9 * 0.8 * 0.5)
    back = call(world.client("alpha"), "post", "/graph",
                {"memory": "far-one", "reverse": True}).json()  # fmt: skip
    assert [(n["id"], n["rels"]) for n in back["nodes"]] == [(chain["near"].pk, ["~before"])]


def test_a_graph_node_names_only_the_memories_between_the_start_and_it(world: World, chain) -> None:
    # Each node's `path` ran from the start's id (said in `start`) to its own (said in
    # `id`): at one hop it held nothing else, two ids of 26 characters again per node.
    walked = call(world.client("alpha"), "post", "/graph", {"memory": chain["seed"].pk, "hops": 2})

    GraphOut.model_validate(walked.json())
    nodes = {n["id"]: n for n in walked.json()["nodes"]}
    assert not {"path", "through"} & set(nodes[chain["near"].pk])  # one hop: nothing between
    assert nodes[chain["far"].pk]["through"] == [chain["near"].pk]
    assert "path" not in nodes[chain["far"].pk] and "through" not in walked.json()["start"]


def test_graph_walk_never_leaves_the_tokens_scope(world: World, chain, monkeypatch) -> None:
    beta = world.memories["beta"]
    Edge.objects.create(src=chain["seed"], dst=beta, rel="leak", weight=1.0, origin="explicit")
    archived = chain["near"]
    services.memory_archive(memory=archived)

    walked = call(world.client("alpha"), "post", "/graph", {"memory": chain["seed"].pk, "hops": 3})
    status, _ = mcp(world, "alpha", "memory_graph", {"memory": beta.pk}, monkeypatch)
    sealed = call(world.client("vault"), "post", "/graph", {"memory": world.memories[None].pk})

    assert [n["id"] for n in walked.json()["nodes"]] == [chain["light"].pk]
    assert status == 404 and sealed.status_code == 404


@pytest.mark.parametrize("plane", ["text", "vector"])
def test_the_raw_planes_over_rest_and_mcp(world: World, plane: str, monkeypatch) -> None:
    query = {"q": "albatross warm cache"}

    rest = call(world.client("alpha"), "get", f"/search/{plane}", query)
    status, tool = mcp(world, "alpha", f"memory_search_{plane}", query, monkeypatch)
    sealed = call(world.client("vault"), "get", f"/search/{plane}", {"q": "gazetteer cache"})

    assert rest.status_code == status == 200
    SearchOut.model_validate(rest.json())
    hits = rest.json()["hits"]
    assert hits[0]["id"] == world.memories["alpha"].pk
    assert {h["source"] for h in hits} == {"fts" if plane == "text" else "semantic"}
    assert [h["id"] for h in hits] == [h["id"] for h in tool["hits"]]
    if plane == "vector":
        assert all(h["score"] == h["similarity"] for h in hits)
    assert {h["project"] for h in hits} <= {"alpha", None}
    assert world.memories[None].pk not in {h["id"] for h in sealed.json()["hits"]}
    other = call(world.client("alpha"), "get", f"/search/{plane}", {**query, "project": "beta"})
    assert other.status_code == 403


def test_supersede_carries_associations_to_the_replacement(world: World, chain) -> None:
    r = call(world.client("alpha"), "post", f"/memories/{chain['near'].pk}/supersede",
             {"description": "postgres, then redis, then the rest"})  # fmt: skip

    new = r.json()["memory"]["id"]
    walked = call(world.client("alpha"), "post", "/graph", {"memory": chain["seed"].pk, "hops": 2})

    assert r.status_code == 201
    assert [n["id"] for n in walked.json()["nodes"]][:2] == [new, chain["far"].pk]


def test_an_association_with_a_superseded_memory_names_the_current_version(
    world: World, chain
) -> None:
    """It answered 201 'created', and no walk ever reached the edge."""
    r = call(world.client("alpha"), "post", f"/memories/{chain['near'].pk}/supersede",
             {"description": "postgres, then redis, then the rest"})  # fmt: skip
    new = r.json()["memory"]["id"]

    to_old = call(world.client("alpha"), "post", f"/memories/{chain['far'].pk}/associate",
                  {"target": chain["near"].pk, "rel": "caused"})  # fmt: skip
    from_old = call(world.client("alpha"), "post", f"/memories/{chain['near'].pk}/associate",
                    {"target": chain["far"].pk, "rel": "caused"})  # fmt: skip

    assert to_old.status_code == 409 and to_old.json()["field"] == "target"
    assert from_old.status_code == 409 and from_old.json()["field"] == "id"
    assert new in to_old.json()["detail"] and new in from_old.json()["detail"]
    assert not Edge.objects.filter(rel="caused").exists()


def test_a_saved_link_override_carries_over_to_the_graph_channel() -> None:
    import importlib
    from types import SimpleNamespace

    from django.apps import apps
    from django.db import connection

    from console.models import Setting

    migration = importlib.import_module("console.migrations.0009_graph_channel_settings")
    Setting.objects.create(
        key="recall_config", value={"link_seeds": 3, "channel_weights": {"link": 0.0, "fts": 1}}
    )

    editor = SimpleNamespace(connection=connection)  # what the functions read of it
    migration.forwards(apps, editor)

    value = Setting.objects.get(key="recall_config").value
    assert value == {"graph_seeds": 3, "channel_weights": {"graph": 0.0, "fts": 1}}
    migration.backwards(apps, editor)
    assert Setting.objects.get(key="recall_config").value["channel_weights"] == {
        "link": 0.0,
        "fts": 1,
    }


def test_dissociating_from_a_memory_the_token_cannot_see_removes_nothing(world: World) -> None:
    path = f"/memories/{world.memories['alpha'].pk}/dissociate"
    beta = world.memories["beta"].pk

    r = call(world.client("alpha"), "post", path, {"target": beta})

    assert r.status_code == 200 and r.json() == {
        "src": world.memories["alpha"].pk, "dst": beta, "removed": 0,
    }  # fmt: skip


FIELDS = [  # (field, a value it takes, one it refuses)
    ("hops", 3, 4),
    ("graph_seeds", 2, -1),
    ("graph_reverse", True, "yes"),
    ("graph_min_weight", 0.5, 1.5),
    ("graph_cap", 5, 101),
    ("include_associated", True, 1),
    ("associated_cap", 10, 11),
    ("associated_depth", 3, 0),
    ("associated_min_weight", 0.2, -0.1),
]


@pytest.mark.parametrize(("field", "good", "bad"), FIELDS)
def test_every_graph_field_on_rest_and_mcp(world: World, monkeypatch, field, good, bad) -> None:
    ask = {"query": "albatross", "record": False}

    rest_ok, (mcp_ok, body) = recall_both(world, {**ask, field: good}, monkeypatch)
    rest_bad, (mcp_bad, refused) = recall_both(world, {**ask, field: bad}, monkeypatch)

    assert rest_ok.status_code == mcp_ok == 200
    assert rest_ok.json()["items"] == body["items"]
    assert rest_bad.status_code == mcp_bad == 422
    assert rest_bad.json()["field"] == refused["field"] == field


def test_a_sealed_projects_link_never_reaches_a_global_memory(world: World) -> None:
    # Its tokens see no global memory, yet `[[global-gazetteer]]` made an edge to one,
    # and only a name no memory held was warned of: a sealed agent could test names.
    glob = world.memories[None]
    body = {"name": "lab-link", "description": "x", "body": f"See [[{glob.name}]] and [[later]]."}

    r = call(world.client("vault"), "post", "/memories", body)
    made = services.memory_create(project=None, kind="fact", name="later", description="Later")

    assert r.status_code == 201, r.content
    linked = [w for w in r.json()["warnings"] if "[[" in w]
    assert linked and f"[[{glob.name}]], [[later]] name no memory yet" in linked[0]
    src = r.json()["memory"]["id"]
    assert not Edge.objects.filter(src_id=src).exists()  # neither then nor once written
    assert made.pk  # a global memory of the name waited for: still no edge
    opened = call(world.client("alpha"), "post", "/memories", {**body, "name": "open-link"})
    assert Edge.objects.filter(src_id=opened.json()["memory"]["id"], dst=glob).exists()


def test_a_rename_says_which_links_it_leaves_and_the_edges_follow_the_names(
    world: World,
) -> None:
    # Renamed, a memory kept the edges of bodies that still said its old name (shown as
    # missing on their pages, listed as links beside them), and no one was told.
    client = world.client("alpha")
    made = call(client, "post", "/memories", {"name": "deploy-runbook", "description": "How"})
    target = made.json()["memory"]["id"]
    old = call(client, "post", "/memories", {"name": "release", "body": "Read [[deploy-runbook]]."})
    new = call(client, "post", "/memories", {"name": "ops", "body": "Read [[deploy-guide]]."})

    renamed = call(client, "patch", f"/memories/{target}", {"name": "deploy-guide"})

    assert renamed.status_code == 200, renamed.content
    assert renamed.json()["warnings"][0] == (
        "renamed from deploy-runbook: release still links to [[deploy-runbook]], which no "
        "longer reaches it; change that link to [[deploy-guide]]"
    )
    into = set(Edge.objects.filter(dst_id=target).values_list("src_id", flat=True))
    assert into == {new.json()["memory"]["id"]}  # the body saying its new name, not the old
    assert old.json()["memory"]["id"] not in into
    again = call(client, "patch", f"/memories/{target}", {"description": "How we deploy"})
    assert not [w for w in again.json()["warnings"] if "renamed" in w]  # renames nothing


def test_a_walk_from_a_memory_that_expires_as_it_is_read_is_a_404_not_a_500(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # schemathesis wrote a memory with a short ttl, then walked from it by name: the
    # name resolved while it was live, and by the walk's own read (which leaves expired
    # memories out) it had expired: KeyError, a 500.
    from datetime import timedelta

    from django.utils import timezone

    from console import wiring

    made = remember(world, "alpha", "fleeting", "a memory that expires")
    Memory.objects.filter(pk=made.pk).update(expires_at=timezone.now() + timedelta(minutes=1))
    store = wiring.engine().planes.store
    monkeypatch.setattr(store, "clock", lambda: timezone.now() + timedelta(hours=1))  # later

    walked = call(world.client("alpha"), "post", "/graph", {"memory": "fleeting"})

    assert walked.status_code == 404, walked.content
