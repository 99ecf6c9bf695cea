"""The agent API endpoint by endpoint: replies, and 400/401/403/404/413/422."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone

from console import indexing, services
from console.models import AgentToken, Memory, Note, RetrievalEvent
from console.schemas import ContextPackOut, MemoryOut, SearchHitOut, SearchOut
from recall.config import TEXT_BUDGET_WHY
from recall.tokens import ByteEstimate
from recall.types import MEMORY_KINDS
from tests.console.api_world import World, call, copy_ready, mcp, world_fixture  # noqa: F401

PACK_ITEM = {"id", "item", "name", "kind", "project", "text", "valid_from", "source",
             "score", "tokens"}  # fmt: skip
SEARCH_HIT = set(SearchHitOut.model_fields)
SOURCES = {"semantic", "fts", "fused", "graph", "browse", "identifier", "session"}
ERROR = {"detail", "field", "code"}


def error(r, status: int, code: str, field: str | None = None) -> dict:  # type: ignore[no-untyped-def]
    """The one error shape: status, code, and the field when one is at fault."""
    body = r.json()
    assert r.status_code == status, body
    assert set(body) >= ERROR and body["code"] == code, body
    if field is not None:
        assert body["field"] == field, body
    return body


# --- the ContextPack contract -------------------------------------------------


def test_recall_reply_matches_the_context_pack_contract_field_by_field(world: World) -> None:
    r = call(world.client("alpha"), "post", "/recall", {"query": "albatross cache", "debug": True})

    assert r.status_code == 200
    pack = r.json()
    ContextPackOut.model_validate(pack)
    assert set(pack) == {
        "project", "items", "omitted", "total_found", "tokens", "budget", "warnings", "debug",
        "pack_id",
    }  # fmt: skip
    assert pack["project"] == "alpha"
    assert pack["total_found"] >= len(pack["items"])
    assert pack["budget"] == 1000 and pack["warnings"] == []
    assert isinstance(pack["debug"], dict) and pack["debug"]["embedded"] is True
    assert pack["items"], "the alpha memory matches"
    for item in pack["items"]:
        assert (
            PACK_ITEM - {"kind", "valid_from", "item", "project", "source"}
            <= set(item)
            <= PACK_ITEM
            | {
                "title",
                "truncated",
                "occurred_at",
                "attribution",
                "invalid_at",
                "favorite",
                "sources",
                "worth",
            }
        )
        # Left out, each says its default: a memory, found by several channels, the pack's
        assert item.get("item", "memory") in {"memory", "note"}
        assert item.get("source", "fused") in SOURCES and item.get("source") != "fused"
        assert isinstance(item["score"], float) and isinstance(item["tokens"], int)
        assert item.get("project", "alpha") in {"alpha", None} and item.get("project") != "alpha"
        for prov in item["sources"]:
            assert set(prov) == {"channel", "rank", "raw"} and prov["rank"] >= 1
    top = pack["items"][0]
    memory = world.memories["alpha"]
    assert (top["id"], top["name"], top["kind"]) == (memory.pk, memory.name, "gotcha")
    assert top["text"] == f"{memory.description}\n{memory.body}"


def test_recall_without_debug_sends_no_debug(world: World) -> None:
    pack = call(world.client("alpha"), "post", "/recall", {"query": "albatross"}).json()

    assert "debug" not in pack


@pytest.mark.parametrize("budget", [50, 200, 1000, 4000])
def test_the_reply_as_sent_is_within_the_budget_and_tokens_counts_it(
    world: World, budget: int
) -> None:
    body = {"query": "cache warm traffic service albatross", "budget": budget}

    r = call(world.client("alpha"), "post", "/recall", body)

    pack = r.json()
    sent = ByteEstimate().count(r.content.decode())
    assert pack["budget"] == budget and sent <= budget
    assert pack["tokens"] == sent
    assert len(pack["items"]) + pack["omitted"] >= 1


def test_recall_uses_the_configured_budget_and_limit_when_the_agent_names_none(
    world: World, monkeypatch: Any
) -> None:
    # The schema's defaults were sent as if named: the Settings never applied.
    services.setting_save(key="recall_config", value={"budget": 600, "limit": 1})
    client = world.client("alpha")

    given = call(client, "post", "/recall", {"query": "albatross cache"}).json()
    named = call(client, "post", "/recall", {"query": "albatross cache", "budget": 900}).json()
    status, by_mcp = mcp(world, "alpha", "memory_recall", {"query": "albatross cache"}, monkeypatch)

    assert (given["budget"], len(given["items"])) == (600, 1)
    assert by_mcp["budget"] == 600 and len(by_mcp["items"]) == 1 and status == 200
    assert named["budget"] == 900


def test_recall_browse_lists_a_kind_newest_first(world: World) -> None:
    pack = call(world.client("alpha"), "post", "/recall", {"query": "", "kind": "gotcha"}).json()

    assert {i["source"] for i in pack["items"]} == {"browse"}
    assert {i.get("project", pack["project"]) for i in pack["items"]} == {"alpha", None}


def test_recall_records_what_the_agent_was_given(world: World) -> None:
    call(world.client("alpha"), "post", "/recall", {"query": "albatross"})

    event = RetrievalEvent.objects.filter(kind="recalled").latest("at")
    assert event.agent == "agent-alpha" and event.project == "alpha"
    assert world.memories["alpha"].pk in event.ids


@pytest.mark.parametrize(
    ("body", "status", "fragment"),
    [
        ({"query": "x", "channel_weights": {"bm99": 1}}, 422, "channel_weights.bm99"),
        ({"query": "x", "budget": 49}, 422, "budget"),
        ({"query": "x", "limit": 101}, 422, "limit"),
        ({"query": "x", "scope": "everything"}, 422, "scope"),
        ({"query": "x", "kind": "gossip"}, 422, "kind"),
        ({"query": "x", "detail": "some"}, 422, "detail"),
        ({"query": "x", "channel_weights": {"fts": -1}}, 422, "channel_weights.fts"),
        # was an empty pack with no warning at all
        ({"query": "x", "channel_weights": {"fts": 0, "semantic": 0}}, 400, "every channel that"),
        ({"query": 5}, 422, "query"),
        ({"query": "x", "budjet": 500}, 422, "budjet"),
    ],
)
def test_recall_rejects_bad_input(world: World, body: dict, status: int, fragment: str) -> None:
    r = call(world.client("alpha"), "post", "/recall", body)

    if status == 400:
        assert fragment in error(r, 400, "invalid")["detail"]
    else:
        code = "unknown_field" if fragment == "budjet" else "invalid"
        error(r, 422, code, fragment)


def test_a_multi_project_token_must_name_its_project(world: World) -> None:
    client = world.client("alpha_beta")

    assert call(client, "post", "/recall", {"query": "x"}).status_code == 400
    r = call(client, "post", "/recall", {"query": "bergamot", "project": "beta"})
    assert r.json()["project"] == "beta" and r.json()["items"]
    assert "project" not in r.json()["items"][0]  # the pack's, said once


# --- authentication and bodies ------------------------------------------------


@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Bearer nonsense", "Bearer rct_0000000000_xxxxxxxx", "Token abc", "revoked"],
)
def test_no_invalid_or_revoked_token_is_401(world: World, header: str | None) -> None:
    from django.test import Client

    if header == "revoked":
        client = world.client("revoked")
    else:
        client = Client(HTTP_AUTHORIZATION=header) if header else Client()

    r = call(client, "post", "/recall", {"query": "albatross"})

    error(r, 401, "unauthorized")


EVERY_OPERATION = [
    ("post", "/recall", {"query": "albatross"}),
    ("get", "/search", {"q": "albatross"}),
    ("post", "/briefing", {}),
    ("post", "/prompt-recall", {"prompt": "albatross"}),
    ("post", "/memories", {"name": "x", "description": "d"}),
    ("get", "/memories/{memory}", None),
    ("patch", "/memories/{memory}", {"description": "changed"}),
    ("post", "/memories/{memory}/supersede", {"description": "changed"}),
    ("post", "/memories/{memory}/archive", None),
    ("post", "/memories/{memory}/restore", None),
    ("post", "/memories/{memory}/favorite", {"favorite": True}),
    ("get", "/notes", None),
    ("post", "/notes", {"title": "t"}),
    ("get", "/notes/{note}", None),
    ("patch", "/notes/{note}", {"title": "changed"}),
    ("post", "/notes/{note}/favorite", None),
]


@pytest.mark.parametrize(("method", "path", "body"), EVERY_OPERATION)
@pytest.mark.parametrize("who", [None, "revoked"])
def test_every_operation_needs_a_live_token(
    world: World, who: str | None, method: str, path: str, body: dict | None
) -> None:
    path = path.format(memory=world.memories["alpha"].pk, note=world.notes["alpha"].pk)

    r = call(world.client(who), method, path, body)

    error(r, 401, "unauthorized")
    memory = Memory.objects.get(pk=world.memories["alpha"].pk)
    assert memory.description.startswith("The albatross") and not memory.favorite
    assert memory.invalid_at is None and not Note.objects.filter(title__in=["t", "changed"])


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/recall", {"query": "x", "limit": 0}),
        ("get", "/search", {"limit": "many"}),
        ("post", "/briefing", {"budget": "big"}),
        ("post", "/prompt-recall", {"prompt": 7}),
        ("post", "/memories", {"name": "x", "importance": -1}),
        ("patch", "/memories/{memory}", {"kind": "gossip"}),
        ("post", "/memories/{memory}/supersede", {"tags": "not-a-list"}),
        ("post", "/memories/{memory}/favorite", {"favorite": "yes"}),
        ("get", "/notes", {"limit": 1000}),
        ("post", "/notes", {"title": ""}),
        ("patch", "/notes/{note}", {"description": "d" * 151}),
        ("post", "/notes/{note}/favorite", {"favorite": []}),
    ],
)
def test_schema_errors_are_422_with_the_fields(
    world: World, method: str, path: str, body: dict
) -> None:
    path = path.format(memory=world.memories["alpha"].pk, note=world.notes["alpha"].pk)

    r = call(world.client("alpha"), method, path, body)

    assert error(r, 422, "invalid")["field"]


def test_over_a_thousand_query_parameters_is_a_clean_400(world: World) -> None:
    # Django refuses them (TooManyFieldsSent); the API answered 500 and logged a traceback.
    params = {"q": "x", **{f"a{n}": "1" for n in range(1001)}}

    r = world.client("alpha").get("/api/v1/search", params)

    assert "DATA_UPLOAD_MAX_NUMBER_FIELDS" in error(r, 400, "invalid")["detail"]


def test_a_body_over_the_upload_limit_is_a_clean_413(world: World) -> None:
    body = {"name": "big", "description": "d", "body": "x" * (3 * 1024 * 1024)}

    r = call(world.client("alpha"), "post", "/memories", body)

    assert "2 MB" in error(r, 413, "too_large")["detail"]


def test_a_body_that_is_not_json_is_400(world: World) -> None:
    r = world.client("alpha").post("/api/v1/recall", "{nope", content_type="application/json")

    error(r, 400, "invalid")


@pytest.mark.parametrize("path", ["/memories", "/recall", "/notes"])
def test_no_body_at_all_says_a_body_is_needed(world: World, path: str) -> None:
    r = world.client("alpha").post(f"/api/v1{path}", "", content_type="application/json")

    assert error(r, 422, "missing")["detail"] == "this call needs a JSON object as its body"


@pytest.mark.parametrize("body", ['"text"', "[1, 2]", "3.5", "null"])
def test_a_body_that_is_not_an_object_is_400(world: World, body: str) -> None:
    r = world.client("alpha").post("/api/v1/notes", body, content_type="application/json")

    assert error(r, 400, "invalid")["detail"].startswith("the body must be one JSON object")
    assert not Note.objects.filter(project__slug="alpha").exclude(pk=world.notes["alpha"].pk)


@pytest.mark.parametrize(
    "body",
    [{"query": "x", "debug": "yes"}, {"query": "x", "budget": "5"}, {"query": "x", "limit": 2.5}],
)
def test_body_types_are_strict(world: World, body: dict) -> None:
    assert call(world.client("alpha"), "post", "/recall", body).status_code == 422


def test_a_validator_speaks_in_its_own_words(world: World) -> None:
    # pydantic put "Value error, " before them: "budget: Value error, give a JSON number".
    r = call(world.client("alpha"), "post", "/recall", {"query": "x", "budget": "120"})

    assert r.json()["detail"] == "budget: give a JSON number"


def test_an_integral_float_is_an_integer(world: World) -> None:
    r = call(world.client("alpha"), "post", "/recall", {"query": "albatross", "budget": 500.0})

    assert r.status_code == 200 and r.json()["budget"] == 500


def test_last_used_is_stamped_on_use(world: World) -> None:
    call(world.client("alpha"), "post", "/recall", {"query": "albatross"})

    assert AgentToken.objects.get(agent="agent-alpha").last_used is not None


def test_the_api_needs_no_csrf_token(world: World) -> None:
    from django.test import Client

    client = Client(
        enforce_csrf_checks=True,
        HTTP_AUTHORIZATION=world.client("alpha").defaults["HTTP_AUTHORIZATION"],
    )

    assert call(client, "post", "/recall", {"query": "albatross"}).status_code == 200


# --- search, briefing, prompt recall ------------------------------------------


def test_search_covers_the_token_projects_and_global(world: World) -> None:
    r = call(world.client("alpha"), "get", "/search", {"q": "cache warm", "limit": 50})

    assert r.status_code == 200
    SearchOut.model_validate(r.json())
    hits = r.json()["hits"]
    assert {h["project"] for h in hits} == {"alpha", None}
    hit = next(h for h in hits if h["id"] == world.memories["alpha"].pk)
    optional = {"title", "valid_from", "invalid_at", "occurred_at", "attribution", "favorite",
                "active", "source"}  # when said  # fmt: skip
    assert SEARCH_HIT - optional <= set(hit) <= SEARCH_HIT and "title" not in hit
    assert "\x01" not in (hit["snippet"] or "") and "<mark>" not in (hit["snippet"] or "")


@pytest.mark.parametrize("path", ["/search", "/search/text"])
def test_a_snippet_is_left_out_when_it_repeats_the_description(world: World, path: str) -> None:
    # A match in the description came back as the snippet too: the same sentence twice
    # in every such hit.
    alpha = world.memories["alpha"].project
    in_description = services.memory_create(
        project=alpha, kind="fact", name="quetzal-queue",
        description="The quetzal queue drains every night.", body="Owned by the data team.",
    )  # fmt: skip
    in_body = services.memory_create(
        project=alpha, kind="fact", name="nightly-drain",
        description="What runs at night.", body="The quetzal job drains the outbox at 02:00.",
    )  # fmt: skip
    indexing.apply_pending()

    hits = call(world.client("alpha"), "get", path, {"q": "quetzal"}).json()["hits"]

    shown = {h["id"]: h for h in hits}
    assert shown[in_description.pk]["description"] == in_description.description
    assert shown[in_description.pk]["snippet"] is None
    assert "quetzal job drains" in shown[in_body.pk]["snippet"]


def test_a_search_with_nothing_to_look_for_says_so(world: World) -> None:
    # It answered 200 with no hits and no word, where a recall warns.
    client = world.client("alpha")
    empty = call(client, "get", "/search", {}).json()
    wordless = call(client, "get", "/search", {"q": "!! ?"}).json()

    assert (empty["hits"], empty["warnings"]) == (
        [],
        ["the query is empty: give a word to look for"],
    )
    assert (wordless["hits"], wordless["warnings"]) == ([], ["the query has no searchable words"])


def test_search_takes_repeated_projects_limit_semantic_and_since(world: World) -> None:
    client = world.client("alpha_beta")
    params = {"q": "cache", "project": ["alpha", "beta"], "semantic": "false", "limit": 2}

    r = call(client, "get", "/search", params)

    assert r.status_code == 200 and len(r.json()["hits"]) == 2
    assert all(h["similarity"] is None for h in r.json()["hits"])
    future = call(client, "get", "/search", {"q": "cache", "since": "2999-01-01T00:00:00"})
    assert future.status_code == 200 and future.json()["hits"] == []


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"q": "x", "limit": 0}, 422),
        ({"q": "x", "since": "yesterday"}, 422),
        ({"q": "x", "since": "0.5"}, 422),
    ],
)
def test_search_rejects_bad_parameters(world: World, params: dict, status: int) -> None:
    assert call(world.client("alpha"), "get", "/search", params).status_code == status


def test_a_bad_query_parameter_is_named_as_the_caller_wrote_it(world: World) -> None:
    client = world.client("alpha")
    listed = call(client, "get", "/memories", {"kind": "banana"}).json()
    searched = call(client, "get", "/search", {"q": "x", "since": "yesterday"}).json()
    assert (listed["field"], searched["field"]) == ("kind.0", "since")


def test_briefing_returns_text_and_the_rendered_ids(world: World) -> None:
    r = call(world.client("alpha"), "post", "/briefing", {})

    assert r.status_code == 200
    body = r.json()
    assert world.memories["alpha"].pk in body["ids"] and world.memories[None].pk in body["ids"]
    assert "albatross" in body["text"] and body["tokens"] > 0
    assert call(world.client("alpha"), "post", "/briefing", {"budget": -1}).status_code == 422
    assert call(world.client("alpha"), "post", "/briefing", {"budget": 100_001}).status_code == 422


def test_prompt_recall_returns_text_and_ids(world: World) -> None:
    alpha = world.memories["alpha"].project
    for i in range(40):  # IDF needs a corpus: unrelated memories make rare words rare
        services.memory_create(
            project=alpha, name=f"filler-{i}", description=f"Routine chore {i} on spreadsheets"
        )
    body = {"prompt": "the albatross service cache needs warming before traffic"}

    r = call(world.client("alpha"), "post", "/prompt-recall", body)

    assert r.status_code == 200
    ids = r.json()["ids"]
    assert ids[0] == world.memories["alpha"].pk
    assert set(ids) <= {world.memories["alpha"].pk, world.memories[None].pk}
    assert "albatross" in r.json()["text"]
    assert call(world.client("alpha"), "post", "/prompt-recall", {}).status_code == 422


def test_a_model_reads_why_a_block_tool_gave_no_block(world: World, monkeypatch: Any) -> None:
    # Over MCP the tool's text is all a model reads: it was "" for matches no line of
    # which fit, as for no match at all, the warning only in the structured content.
    from console.mcp import SPECS, TOKEN_ENV

    monkeypatch.setenv(TOKEN_ENV, world.secrets["alpha"])

    def text(tool: str, args: dict[str, Any]) -> str:
        result = next(s for s in SPECS if s.name == tool).build().fn(**args)
        assert not result.is_error, result.content
        return str(result.content[0].text)

    prompt = {"prompt": "the albatross service cache needs warming before traffic"}
    said = "(1 memory matched, but its line does not fit 22 tokens: ask with a larger budget)"
    assert text("prompt_recall", {**prompt, "budget": 22}) == said
    assert text("prompt_recall", {"prompt": "zqxv wombles"}) == "(no memory matched this prompt)"
    block = text("prompt_recall", prompt)  # a block is the text as REST gives it
    rest = call(world.client("alpha"), "post", "/prompt-recall", prompt).json()["text"]
    assert block == rest and "albatross" in block


@pytest.mark.parametrize(("tool", "path"), [("prompt_recall", "/prompt-recall"),
                                            ("briefing", "/briefing")])  # fmt: skip
def test_a_block_tools_reply_fits_its_budget_or_is_refused_naming_the_least(
    world: World, monkeypatch: Any, tool: str, path: str
) -> None:
    # Below 22 tokens the reply was a reason longer than the budget: at 5, "(1 memory
    # matched, but its line does not fit 5 tokens: ...)" took 20; at 1, the
    # briefing's "(1 token holds not even the briefing's wrapper (14 tokens): ...)" 22.
    from console.mcp import SPECS, TOKEN_ENV

    monkeypatch.setenv(TOKEN_ENV, world.secrets["alpha"])
    run = next(s for s in SPECS if s.name == tool).build().fn
    asked = {"prompt": "the albatross service cache needs warming before traffic"}

    for budget in (22, 23, 30, 60):
        result = run(**asked, budget=budget)
        assert not result.is_error and ByteEstimate().count(result.content[0].text) <= budget
    refused = run(**asked, budget=21)
    rest = call(world.client("alpha"), "post", path, {**asked, "budget": 21})

    error = json.loads(refused.content[0].text)
    assert refused.is_error and (error["status"], error["field"]) == (422, "budget")
    assert rest.status_code == 422 and rest.json()["field"] == "budget"
    # in the words of the Settings page and the engine, why included ("Input should be
    # greater than or equal to 22" said neither)
    said = f"budget: must be within 22..100000, not 21: {TEXT_BUDGET_WHY}"
    assert said == error["detail"] == rest.json()["detail"]


def _keyed(value: Any, key: str) -> list[Any]:
    """Every value under `key` anywhere in a reply."""
    if isinstance(value, dict):
        return [v for k, v in value.items() if k == key] + [
            x for v in value.values() for x in _keyed(v, key)
        ]
    return [x for v in value for x in _keyed(v, key)] if isinstance(value, list) else []


def test_a_memory_s_kind_is_kind_in_every_reply_and_memory_kind_is_taken_as_it(
    world: World,
) -> None:
    # A recall item and a search hit said `memory_kind` for what memory_read, memory_list
    # and every write and filter call `kind`, and a hit's `kind` was memory|note: one
    # word, two things. Now `kind` is the memory's kind everywhere and `item` says a note;
    # an agent sending the old name back is understood, not refused.
    client = world.client("alpha")
    written = call(client, "post", "/memories", {"name": "quay-vpn-login",
                   "memory_kind": "gotcha", "description": "quay login fails on VPN"})  # fmt: skip
    assert written.status_code == 201, written.content
    memory = written.json()["memory"]
    assert memory["kind"] == "gotcha"
    other = {"name": "cents", "kind": "fact", "description": "amounts in integer cents"}
    assert call(client, "post", "/memories", other).status_code == 201  # for the filter
    indexing.apply_pending()
    replies = [
        written.json(),
        call(client, "post", "/recall", {"query": "quay login", "memory_kind": "gotcha"}).json(),
        call(client, "post", "/recall", {"query": "albatross notes", "scope": "all"}).json(),
        call(client, "get", "/search", {"q": "quay login"}).json(),
        call(client, "get", "/search", {"q": "notes"}).json(),
        call(client, "get", f"/memories/{memory['id']}").json(),
        call(client, "get", "/memories", {"memory_kind": "gotcha"}).json(),
        call(client, "post", "/graph", {"memory": memory["id"]}).json(),
        call(client, "patch", f"/memories/{memory['id']}", {"memory_kind": "fact"}).json(),
    ]

    assert not [r for r in replies if _keyed(r, "memory_kind")]
    kinds = {k for r in replies for k in _keyed(r, "kind")}
    assert {"gotcha", "fact"} <= kinds <= set(MEMORY_KINDS)
    assert {"note"} <= {i for r in replies for i in _keyed(r, "item")} <= {"memory", "note"}
    assert replies[1]["items"][0]["id"] == memory["id"]  # the filter took `memory_kind`
    assert {m["kind"] for m in replies[6]["memories"]} == {"gotcha"}
    assert replies[8]["kind"] == "fact"


def test_an_old_name_sent_beside_its_new_one_is_named_as_such(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `memory_kind` alone is taken as `kind`; beside `kind` it is refused, and the
    # refusal said "unknown field 'memory_kind'; it takes ... kind ...": an agent that
    # had sent `kind` was told to send `kind`. It now says to send the new name alone.
    both = {"name": "twin-kinds", "kind": "gotcha", "memory_kind": "fact", "description": "x"}
    said = error(call(world.client("alpha"), "post", "/memories", both), 422, "unknown_field")
    assert said["detail"] == (
        "memory_kind is the old name of kind, and kind came too: send kind alone"
    )
    status, body = mcp(world, "alpha", "memory_write", both, monkeypatch)
    assert status == 422 and body["detail"] == said["detail"]
    note = {"title": "Runbook", "name": "runbook", "slug": "runbook"}
    status, body = mcp(world, "alpha", "notes_write", note, monkeypatch)
    assert status == 422
    assert body["detail"] == "slug is the old name of name, and name came too: send name alone"
    # an old name a call never took is still an unknown field, with what the call takes
    status, body = mcp(world, "alpha", "notes_read", {"slug": "runbook"}, monkeypatch)
    assert body["detail"].startswith("unknown field 'slug'; it takes id")


def test_the_old_names_errors_explain_are_the_schemas_aliases() -> None:
    from console import errors
    from console.schemas.requests import KIND_NAMES, NOTE_NAMES

    aliases = {str(n.choices[1]): str(n.choices[0]) for n in (KIND_NAMES, NOTE_NAMES)}
    assert aliases == errors.RENAMED


# --- memories -----------------------------------------------------------------


def test_write_returns_the_memory_and_its_dedup_hint(world: World) -> None:
    body = {
        "name": "alpha-albatross-again",  # restated under a new name (one name, one memory)
        "description": "Note: the albatross service needs a warm cache before traffic",
        "body": "Warm the albatross cache first.",
        "kind": "gotcha",
        "tags": ["Cache", "cache"],
    }

    r = call(world.client("alpha"), "post", "/memories", body)

    assert r.status_code == 201
    reply = r.json()
    memory = reply["memory"]
    assert memory["project"] == "alpha" and memory["agent_id"] == "agent-alpha"
    assert memory["source"] == "agent_inferred" and memory["tags"] == ["cache"]
    assert reply["dedup_hint"]["id"] == world.memories["alpha"].pk
    assert reply["dedup_hint"]["similarity"] >= 0.93  # calibrated for the default model
    assert "supersede" in reply["dedup_hint"]["advice"]  # both durable kinds
    assert Memory.objects.filter(pk=memory["id"]).exists()


def test_a_write_restating_a_global_memory_is_not_told_to_supersede_it(world: World) -> None:
    # The advice said "supersede global-gazetteer", and that supersede is refused (403):
    # agents do not curate global memories.
    body = {
        "name": "alpha-gazetteer-again",
        "description": "Note: the gazetteer service needs a warm cache before traffic",
        "body": "Warm the gazetteer cache first.",
        "kind": "gotcha",
    }

    hint = call(world.client("alpha"), "post", "/memories", body).json()["dedup_hint"]

    assert hint["id"] == world.memories[None].pk and hint["project"] is None
    assert "supersede" not in hint["advice"] and "archive this one" in hint["advice"]
    said = call(world.client("alpha"), "post", f"/memories/{hint['id']}/supersede", body)
    assert said.status_code == 403  # what the advice must not send the agent to


def test_a_text_restated_under_a_new_name_is_hinted(world: World) -> None:
    # The vectors embed the name with the text: the same body under a new name (a name
    # is one memory's, so a restatement always has its own) scored under the threshold.
    old = services.memory_create(
        project=world.memories["alpha"].project, kind="fact", name="billing-db-replica-lag",
        description="The read replica lags up to 2 s at month-end invoice runs.",
        body="Reports read from the replica; during the month-end invoice run it falls behind "
        "the primary by up to two seconds, so totals can miss the last payments.",
    )  # fmt: skip
    indexing.apply_pending()
    body = {
        "name": "replica-lag-v2",
        "description": "The read replica lags up to 2 seconds at month-end invoice runs.",
        "body": old.body,
    }

    hint = call(world.client("alpha"), "post", "/memories", body).json()["dedup_hint"]

    assert hint is not None and hint["id"] == old.pk
    assert "supersede billing-db-replica-lag" in hint["advice"]


def test_the_advice_a_write_gets_leaves_one_memory_of_the_text_when_followed(
    world: World,
) -> None:
    # "supersede refund-window rather than keep two": the agent superseded it with the
    # new text and kept the memory it had just written, two of the text again, and the
    # supersede's own hint said to supersede the new one.
    old = services.memory_create(
        project=world.memories["alpha"].project, kind="fact", name="refund-window",
        description="Refunds are allowed within 30 days of the invoice date.",
    )  # fmt: skip
    indexing.apply_pending()
    client = world.client("alpha")
    new = {"name": "refund-window-days", "kind": "fact",
           "description": "Refunds are allowed within 45 days of the invoice date."}  # fmt: skip

    written = call(client, "post", "/memories", new).json()
    advice = written["dedup_hint"]["advice"]
    assert written["dedup_hint"]["id"] == old.pk
    assert "supersede refund-window with this text, then delete this one" in advice
    indexing.apply_pending()
    replaced = call(client, "post", "/memories/refund-window/supersede",
                    {"description": new["description"]}).json()  # fmt: skip
    assert "archive refund-window-days" in replaced["dedup_hint"]["advice"]
    assert "supersede" not in replaced["dedup_hint"]["advice"]
    assert call(client, "delete", "/memories/refund-window-days").status_code == 200
    live = Memory.objects.filter(description=new["description"], invalid_at__isnull=True)
    assert [m.name for m in live] == ["refund-window"]


@pytest.mark.parametrize(
    ("name", "description", "session"),
    [
        ("ledger-db-2", "the ledger lives in postgres!", ""),  # punctuation makes it new text
        ("ledger-location", "The ledger lives in Postgres", "s2"),  # the same, another session
    ],
)
def test_a_short_text_again_with_other_case_or_punctuation_is_hinted(
    world: World, name: str, description: str, session: str
) -> None:
    # Five words: too few for the words path, which only looked at six or more, and
    # under the names the vectors embed they scored 0.92 and 0.91 against 0.93.
    alpha = world.memories["alpha"].project
    old = services.memory_create(
        project=alpha, kind="fact", name="ledger-db", description="The ledger lives in Postgres"
    )
    indexing.apply_pending()
    body = {"name": name, "kind": "fact", "description": description, "session_id": session}
    other = {"name": "ledger-home", "kind": "fact", "description": "Postgres holds the ledger"}

    hint = call(world.client("alpha"), "post", "/memories", body).json()["dedup_hint"]
    reordered = call(world.client("alpha"), "post", "/memories", other).json()["dedup_hint"]

    assert hint is not None and hint["id"] == old.pk
    assert reordered is None  # other words in another order: a thing of its own


def test_an_edit_that_makes_a_memory_say_what_another_says_is_hinted(world: World) -> None:
    # A write gets a dedup hint; an edit to the same text came back 200 and silent.
    alpha = world.memories["alpha"].project
    old = services.memory_create(
        project=alpha, kind="fact", name="ledger-db", description="The ledger lives in Postgres"
    )
    other = services.memory_create(
        project=alpha, kind="fact", name="ledger-home", description="Postgres holds the ledger"
    )
    indexing.apply_pending()
    client = world.client("alpha")

    edited = call(client, "patch", f"/memories/{other.pk}", {"description": old.description})
    retagged = call(client, "patch", f"/memories/{other.pk}", {"tags": ["storage"]})

    assert edited.status_code == 200, edited.content
    assert edited.json()["description"] == old.description
    assert edited.json()["dedup_hint"]["id"] == old.pk
    advice = edited.json()["dedup_hint"]["advice"]  # the edited one stays: the other is spare
    assert "archive ledger-db" in advice and "supersede" not in advice
    assert retagged.json()["dedup_hint"] is None  # its text did not change: nothing to compare


def test_archive_refusing_a_field_says_it_takes_none(world: World) -> None:
    mid = world.memories["alpha"].pk
    r = call(world.client("alpha"), "post", f"/memories/{mid}/archive", {"reason": "stale"})

    assert r.status_code == 422, r.content
    assert r.json()["field"] == "reason"
    assert r.json()["detail"] == "unknown field 'reason'; this call takes no fields"


def test_a_write_of_a_text_that_was_archived_or_superseded_says_so(world: World) -> None:
    # A new memory holding the exact text of a retired one was created in silence: an
    # agent learning again what a person archived as wrong, or what was replaced, was
    # not told. The write still happens (the fact may hold again); the reply says so.
    alpha = world.memories["alpha"].project
    wrong = services.memory_create(
        project=alpha, kind="fact", name="refund-window", description="Refunds within 30 days"
    )
    wrong = services.memory_archive(memory=wrong)
    stale = services.memory_create(
        project=alpha, kind="fact", name="vat-rate", description="The VAT rate is 19 percent"
    )
    current = services.memory_supersede(memory=stale, description="The VAT rate is 20 percent")
    indexing.apply_pending()
    client = world.client("alpha")

    again = call(client, "post", "/memories", {"name": "refunds", "description": wrong.description})
    batch = call(client, "post", "/memories/batch", {"memories": [
        {"name": "tea", "description": "Tea is served at four"},
        {"name": "vat", "description": stale.description},
    ]})  # fmt: skip
    fresh = call(client, "post", "/memories", {"name": "coffee", "description": "Coffee at ten"})

    assert again.status_code == 201 and batch.status_code == 201
    said = [w for w in again.json()["warnings"] if "held this text" in w]
    assert said == [
        f"refund-window ({wrong.pk}) held this text and was archived on "
        f"{wrong.invalid_at:%Y-%m-%d}; if it was archived as wrong, archive this memory too"
    ]
    told = [w for w in batch.json()["warnings"] if "this text is what" in w]
    assert len(told) == 1
    assert told[0].startswith(f"memories.1: this text is what vat-rate ({stale.pk}) said until ")
    assert f"until {current.name} ({current.pk}) replaced it" in told[0]
    assert not any("this text" in w for w in fresh.json()["warnings"])


def test_write_without_a_similar_memory_has_no_hint(world: World) -> None:
    body = {"name": "tea-time", "description": "Tea is served at four o'clock sharp"}

    reply = call(world.client("alpha"), "post", "/memories", body).json()

    assert reply["dedup_hint"] is None


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "Not A Slug", "description": "d"}, 422),
        ({"name": "ok", "description": "d" * 151}, 422),
        ({"name": "ok", "importance": 2}, 422),
        ({"name": "ok", "kind": "gossip"}, 422),
        ({"description": "no name"}, 422),
        ({"name": "ok", "tags": ["t"] * 40}, 422),
    ],
)
def test_write_rejects_bad_memories(world: World, body: dict, status: int) -> None:
    assert call(world.client("alpha"), "post", "/memories", body).status_code == status


@pytest.mark.parametrize("url", ["not a url", "javascript:alert(1)", "https://a b"])
def test_a_source_url_the_schema_refuses_is_a_422_on_its_field(world: World, url: str) -> None:
    r = call(world.client("alpha"), "post", "/notes", {"title": "t", "source_url": url})

    assert "source_url" in error(r, 422, "invalid", "source_url")["detail"]


@pytest.mark.parametrize("url", ["https://example.org/a?b=c#d", "http://localhost:8000/x", ""])
def test_every_source_url_the_schema_allows_is_stored(world: World, url: str) -> None:
    r = call(world.client("alpha"), "post", "/notes", {"title": "t", "source_url": url})

    assert r.status_code == 201 and r.json()["source_url"] == url


def test_a_read_only_token_cannot_write(world: World) -> None:
    client = world.client("alpha_ro")
    mid = world.memories["alpha"].pk
    nid = world.notes["alpha"].pk

    for method, path, body in (
        ("post", "/memories", {"name": "x", "description": "d"}),
        ("patch", f"/memories/{mid}", {"description": "changed"}),
        ("post", f"/memories/{mid}/supersede", {"description": "changed"}),
        ("post", f"/memories/{mid}/archive", None),
        ("post", f"/memories/{mid}/restore", None),
        ("post", f"/memories/{mid}/favorite", {"favorite": True}),
        ("post", "/notes", {"title": "t"}),
        ("patch", f"/notes/{nid}", {"title": "t2"}),
        ("post", f"/notes/{nid}/favorite", None),
    ):
        r = call(client, method, path, body)
        assert "read-only" in error(r, 403, "forbidden")["detail"], (method, path)
    assert call(client, "get", f"/memories/{mid}").status_code == 200


def test_read_records_the_read(world: World) -> None:
    mid = world.memories["alpha"].pk

    r = call(world.client("alpha"), "get", f"/memories/{mid}")

    assert r.status_code == 200 and r.json()["body"] == "Warm the albatross cache first."
    assert not {"active", "superseded_by"} & set(r.json())  # absent: active, not replaced
    assert RetrievalEvent.objects.filter(kind="read", ids__icontains=mid).exists()
    assert Memory.objects.get(pk=mid).access_count == 1


def test_a_memory_read_or_listed_says_favorite_and_active_only_when_not_the_default(
    world: World, monkeypatch: Any
) -> None:
    # Search hits and recall items left "favorite":false and "active":true out; a read
    # and a page of memory_list (and a note's read) still said them for nothing.
    plain, starred = world.memories["alpha"], world.memories[None]
    services.favorite_toggle(item=starred, value=True)
    archived = services.memory_create(project=plain.project, kind="fact", name="gone",
                                      description="An archived fact")  # fmt: skip
    services.memory_archive(memory=archived)
    client = world.client("alpha")

    read = {m.pk: call(client, "get", f"/memories/{m.pk}").json() for m in (plain, starred)}
    mcp_read = mcp(world, "alpha", "memory_read", {"id": plain.pk}, monkeypatch)
    listed = call(client, "get", "/memories", {"archived": "include"}).json()["memories"]
    status, mcp_listed = mcp(world, "alpha", "memory_list", {"archived": "include"}, monkeypatch)
    notes = mcp(world, "alpha", "notes_read", {}, monkeypatch)[1]["notes"]

    assert mcp_read == (200, read[plain.pk]) and status == 200
    assert not {"favorite", "active"} & set(read[plain.pk]), read[plain.pk]
    assert read[starred.pk]["favorite"] is True and "active" not in read[starred.pk]
    assert MemoryOut.model_validate(read[plain.pk]).favorite is False  # the defaults
    assert MemoryOut.model_validate(read[plain.pk]).active is True
    assert mcp_listed["memories"] == listed and listed, listed
    said = {m["id"]: m for m in listed}
    assert said[archived.pk]["active"] is False and "favorite" not in said[archived.pk]
    assert notes and not any("favorite" in n for n in notes), notes


def test_a_memory_reply_says_worth_and_expiry_only_when_not_the_default(
    world: World, monkeypatch: Any
) -> None:
    # A recall's items left worth 0.5 out; a memory read, listed, written or curated
    # still said "expires_at":null,"worth":0.5 on almost every memory, for nothing.
    plain, rated = world.memories["alpha"], world.memories[None]
    ends = timezone.now() + timedelta(days=3)
    Memory.objects.filter(pk=rated.pk).update(feedback_helpful=1, expires_at=ends)
    client = world.client("alpha")

    def memory(r: Any) -> dict[str, Any]:
        assert r.status_code in (200, 201), r.json()
        body: dict[str, Any] = r.json()
        return body.get("memory", body)

    read = {m.pk: memory(call(client, "get", f"/memories/{m.pk}")) for m in (plain, rated)}
    listed = call(client, "get", "/memories").json()["memories"]
    status, mcp_listed = mcp(world, "alpha", "memory_list", {}, monkeypatch)
    made = memory(call(client, "post", "/memories", {"name": "fresh", "body": "A new fact."}))
    curated = [
        made,
        memory(call(client, "patch", f"/memories/{made['id']}", {"description": "edited"})),
        memory(call(client, "post", f"/memories/{made['id']}/archive", None)),
        memory(call(client, "post", f"/memories/{made['id']}/restore", None)),
        memory(call(client, "post", f"/memories/{made['id']}/supersede", {"body": "Newer."})),
    ]

    mcp_read = mcp(world, "alpha", "memory_read", {"id": plain.pk}, monkeypatch)
    assert mcp_read == (200, read[plain.pk])
    assert status == 200 and mcp_listed["memories"] == listed
    said = {m["id"]: m for m in listed}
    for view in (read[plain.pk], said[plain.pk], *curated):
        assert not {"worth", "expires_at"} & set(view), view
        edit = ("dedup_hint", "warnings")  # an edit's reply is the memory and these
        shown = MemoryOut.model_validate({k: v for k, v in view.items() if k not in edit})
        assert (shown.worth, shown.expires_at) == (0.5, None)  # the defaults, stated
    for view in (read[rated.pk], said[rated.pk]):
        assert view["worth"] == round(2 / 3, 4), view
        assert datetime.fromisoformat(view["expires_at"]) == ends, view


def test_a_memory_reply_says_its_session_times_and_replacement_only_when_it_has_them(
    world: World, monkeypatch: Any
) -> None:
    # A memory written outside a conversation said "session_id":"","session_order":null,
    # "occurred_at":null,"invalid_at":null,"superseded_by":null on every write, read and
    # listed memory: 95 bytes of nothing each, about 1,200 tokens on a page of 50.
    client = world.client("alpha")
    unsaid = {"session_id", "session_order", "occurred_at", "invalid_at", "superseded_by"}

    made = call(client, "post", "/memories", {"name": "plain", "body": "A plain fact."})
    plain = made.json()["memory"]
    read = call(client, "get", f"/memories/{plain['id']}").json()
    listed = call(client, "get", "/memories").json()["memories"]
    status, mcp_read = mcp(world, "alpha", "memory_read", {"id": plain["id"]}, monkeypatch)
    turn = call(client, "post", "/memories", {
        "name": "turn-1", "body": "Said in a talk.", "session_id": "talk",
        "session_order": 1, "occurred_at": "2026-01-02T03:04:05Z",
    }).json()["memory"]  # fmt: skip
    newer = call(client, "post", f"/memories/{plain['id']}/supersede", {"body": "Newer."})
    old = call(client, "get", f"/memories/{plain['id']}").json()

    assert made.status_code == 201 and status == 200 and mcp_read == read
    for view in (plain, read, *listed):
        assert not unsaid & set(view), view
        shown = MemoryOut.model_validate(view)  # the defaults, stated
        assert (shown.session_id, shown.session_order, shown.occurred_at) == ("", None, None)
        assert (shown.invalid_at, shown.superseded_by) == (None, None)
    assert (turn["session_id"], turn["session_order"]) == ("talk", 1)
    assert turn["occurred_at"] == "2026-01-02T03:04:05Z"
    assert old["superseded_by"] == newer.json()["memory"]["id"] and old["invalid_at"]


def test_a_global_memory_is_readable_but_not_changeable(world: World) -> None:
    gid = world.memories[None].pk
    client = world.client("alpha")

    assert call(client, "get", f"/memories/{gid}").status_code == 200
    r = call(client, "patch", f"/memories/{gid}", {"description": "changed"})
    assert "console" in error(r, 403, "forbidden")["detail"]


def test_patch_changes_only_the_fields_given(world: World) -> None:
    mid = world.memories["alpha"].pk

    r = call(world.client("alpha"), "patch", f"/memories/{mid}", {"description": "New words"})

    assert r.status_code == 200
    assert r.json()["description"] == "New words"
    assert r.json()["body_chars"] == len("Warm the albatross cache first.")
    read = call(world.client("alpha"), "get", f"/memories/{mid}").json()
    assert read["body"] == "Warm the albatross cache first."
    assert call(world.client("alpha"), "patch", f"/memories/{mid}", {}).status_code == 200
    bad = call(world.client("alpha"), "patch", f"/memories/{mid}", {"name": "BAD NAME"})
    assert bad.status_code == 422


def test_supersede_replaces_and_stamps_the_old_one(world: World) -> None:
    old = world.memories["alpha"]
    client = world.client("alpha")
    same = call(client, "post", f"/memories/{old.pk}/supersede", {"body": old.body})
    assert "same as this one" in error(same, 409, "conflict")["detail"]
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()

    r = call(client, "post", f"/memories/{old.pk}/supersede", {"body": "Warm it twice."})

    assert r.status_code == 201
    new = r.json()["memory"]
    assert new["name"] == old.name and new["body_chars"] == len("Warm it twice.")
    assert call(client, "get", f"/memories/{new['id']}").json()["body"] == "Warm it twice."
    old_now = call(client, "get", f"/memories/{old.pk}").json()
    assert old_now["superseded_by"] == new["id"] and old_now["active"] is False
    again = call(client, "post", f"/memories/{old.pk}/supersede", {"body": "again"})
    assert f"already superseded by {new['id']}" in error(again, 409, "conflict")["detail"]
    restore = call(client, "post", f"/memories/{old.pk}/restore")
    assert "cannot be restored" in error(restore, 409, "conflict")["detail"]


def test_a_restore_by_a_name_an_active_memory_took_says_which_is_which(world: World) -> None:
    # It answered 200 with the active memory, and the archived one stayed archived.
    client = world.client("alpha")
    old = call(client, "post", "/memories", {"name": "pool-size", "description": "10"}).json()
    call(client, "post", f"/memories/{old['memory']['id']}/archive")
    new = call(client, "post", "/memories", {"name": "pool-size", "description": "25"}).json()

    said = call(client, "post", "/memories/pool-size/restore")

    detail = error(said, 409, "conflict")["detail"]
    assert new["memory"]["id"] in detail and old["memory"]["id"] in detail
    assert "restore " + old["memory"]["id"] + " by its id" in detail


def test_a_supersede_of_an_archived_memory_says_to_restore_it_first(world: World) -> None:
    # It said "supersede its replacement instead" (there is none) by id, and only
    # "no active memory named ..." by name.
    old = world.memories["alpha"]
    client = world.client("alpha")
    assert call(client, "post", f"/memories/{old.pk}/archive").status_code == 200

    by_id = call(client, "post", f"/memories/{old.pk}/supersede", {"body": "Warm it twice."})
    by_name = call(client, "post", f"/memories/{old.name}/supersede", {"body": "Warm it twice."})

    assert "archived; restore it first" in error(by_id, 409, "conflict")["detail"]
    said = by_name.json()["detail"]
    assert by_name.status_code == 404 and f"{old.pk} of that name is archived" in said
    assert "restore it first" in said
    assert not Memory.objects.filter(superseded_by__isnull=False).exists()


def test_a_supersede_of_the_body_alone_says_the_description_was_kept(world: World) -> None:
    client = world.client("alpha")
    old = world.memories["alpha"]
    services.memory_update(memory=old, description="Refunds allowed within 45 days")

    r = call(client, "post", f"/memories/{old.pk}/supersede", {"body": "Within 60 days now."})

    kept = "description kept from the version this replaces: 'Refunds allowed within 45 days'"
    assert any(w.startswith(kept) for w in r.json()["warnings"]), r.json()["warnings"]
    newer = r.json()["memory"]["id"]
    both = {"body": "Within 90 days.", "description": "Refunds within 90 days"}
    told = call(client, "post", f"/memories/{newer}/supersede", both).json()
    assert not any("description kept" in w for w in told["warnings"])


def test_archive_and_restore(world: World) -> None:
    mid = world.memories["alpha"].pk
    client = world.client("alpha")

    archived = call(client, "post", f"/memories/{mid}/archive")
    assert archived.status_code == 200 and archived.json()["active"] is False
    indexing.apply_pending()
    pack = call(client, "post", "/recall", {"query": "albatross"}).json()
    assert mid not in [i["id"] for i in pack["items"]]

    restored = call(client, "post", f"/memories/{mid}/restore")
    assert restored.status_code == 200 and "active" not in restored.json()  # absent: active


def test_a_superseded_version_is_a_change_updated_after_sees(world: World) -> None:
    # Supersede saved the old version's invalid_at and superseded_by only: an agent
    # listing what changed since a moment (archived included) missed the version retired.
    mid = world.memories["alpha"].pk
    Memory.objects.filter(pk=mid).update(updated=timezone.now() - timedelta(hours=1))
    client = world.client("alpha")

    before = timezone.now()
    made = call(client, "post", f"/memories/{mid}/supersede", {"description": "the new way"})
    assert made.status_code == 201, made.content
    asked = {"archived": "include", "updated_after": before.isoformat()}
    listed = call(client, "get", "/memories", asked).json()

    assert {mid, made.json()["memory"]["id"]} <= {m["id"] for m in listed["memories"]}


def test_an_archive_and_a_restore_are_changes_since_and_updated_after_see(
    world: World,
) -> None:
    """`since` and `updated_after` filter on `updated`: an archive or a restore left it as
    it was, so an agent asking what changed since a moment missed both."""
    mid = world.memories["alpha"].pk
    Memory.objects.filter(pk=mid).update(updated=timezone.now() - timedelta(hours=1))
    client = world.client("alpha")

    before_archive = timezone.now()
    call(client, "post", f"/memories/{mid}/archive")
    archived = call(
        client,
        "get",
        "/memories",
        {"archived": "only", "updated_after": before_archive.isoformat()},
    ).json()
    before_restore = timezone.now()
    restored = call(client, "post", f"/memories/{mid}/restore").json()
    indexing.apply_pending()
    listed = call(client, "get", "/memories", {"updated_after": before_restore.isoformat()}).json()
    found = call(
        client, "get", "/search", {"q": "albatross", "since": before_restore.isoformat()}
    ).json()

    assert [m["id"] for m in archived["memories"]] == [mid]
    assert datetime.fromisoformat(restored["updated"]) >= before_restore
    assert [m["id"] for m in listed["memories"]] == [mid]
    assert [h["id"] for h in found["hits"]] == [mid]


def test_favorite_stars_unstars_and_toggles(world: World) -> None:
    mid = world.memories["alpha"].pk
    client = world.client("alpha")
    path = f"/memories/{mid}/favorite"

    assert call(client, "post", path, {"favorite": True}).json() == {"id": mid, "favorite": True}
    assert call(client, "post", path, {"favorite": True}).json()["favorite"] is True
    assert call(client, "post", path).json()["favorite"] is False
    assert call(client, "post", path, {}).json()["favorite"] is True
    assert Memory.objects.get(pk=mid).favorite is True
    null = client.post(f"/api/v1{path}", "null", content_type="application/json")
    assert null.status_code == 400  # the schema's body is an object or nothing, never null
    assert call(client, "post", path, {"favorite": "maybe"}).status_code == 422
    assert call(client, "post", path, {"favorite": 0}).status_code == 422


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ("patch", "/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ("post", "/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ/supersede"),
        ("post", "/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ/archive"),
        ("post", "/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ/restore"),
        ("post", "/memories/01ZZZZZZZZZZZZZZZZZZZZZZZZ/favorite"),
        ("get", "/notes/01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ("patch", "/notes/01ZZZZZZZZZZZZZZZZZZZZZZZZ"),
        ("post", "/notes/01ZZZZZZZZZZZZZZZZZZZZZZZZ/favorite"),
    ],
)
def test_an_unknown_id_is_404_with_detail(world: World, method: str, path: str) -> None:
    r = call(world.client("alpha"), method, path, {} if method != "get" else None)

    assert set(error(r, 404, "not_found")) == ERROR


# --- notes --------------------------------------------------------------------


def test_notes_list_create_read_patch_and_star(world: World) -> None:
    client = world.client("alpha")

    listed = call(client, "get", "/notes")
    assert listed.status_code == 200
    assert {n["project"] for n in listed.json()["notes"]} == {"alpha", None}
    only = call(client, "get", "/notes", {"project": "alpha", "limit": 5}).json()["notes"]
    assert [n["id"] for n in only] == [world.notes["alpha"].pk]

    created = call(client, "post", "/notes", {"title": "Deploy write-up", "body": "Steps."})
    assert created.status_code == 201
    note = created.json()
    assert note["name"] == "deploy-write-up" and note["project"] == "alpha"

    read = call(client, "get", f"/notes/{note['id']}")
    assert read.status_code == 200 and read.json()["body"] == "Steps."
    patched = call(client, "patch", f"/notes/{note['id']}", {"body": "More steps."})
    assert patched.status_code == 200 and patched.json()["title"] == "Deploy write-up"
    star = call(client, "post", f"/notes/{note['id']}/favorite", {"favorite": True})
    assert star.json() == {"id": note["id"], "favorite": True}
    assert Note.objects.get(pk=note["id"]).favorite is True


def test_a_note_restating_another_gets_a_dedup_hint_as_a_memory_does(world: World) -> None:
    # A memory's write named its near-duplicate; a note's said nothing, and an agent
    # wrote the same write-up twice unwarned. One mechanism (`dedup.hint`), notes
    # against notes.
    client = world.client("alpha")
    first = {
        "title": "Deploying the ledger",
        "description": "How the ledger ships",
        "body": "Run the migrations, drain the workers, then roll the pods one by one.",
    }
    written = call(client, "post", "/notes", first).json()
    assert written["dedup_hint"] is None  # nothing like it yet: said, as a memory's write
    indexing.apply_pending()
    again = {**first, "title": "Ledger deploy steps"}  # the same write-up under a new title

    r = call(client, "post", "/notes", again)

    hint = r.json()["dedup_hint"]
    assert r.status_code == 201 and hint["id"] == written["id"]
    assert hint["name"] == "deploying-the-ledger" and hint["similarity"] >= 0.80
    # To 3 digits, as a search hit's similarity (a hint said 4: 0.9615 beside a hit's 0.962).
    assert hint["similarity"] == float(f"{hint['similarity']:.3g}") != 1.0
    assert "notes_write with its id" in hint["advice"]
    assert "delete" not in hint["advice"]  # agents cannot delete a note
    other = {"title": "Lunch", "body": "Friday lunch is pizza in the kitchen."}
    assert call(client, "post", "/notes", other).json()["dedup_hint"] is None
    indexing.apply_pending()
    edited = call(client, "patch", f"/notes/{r.json()['id']}", {"tags": ["ops"]}).json()
    assert edited["dedup_hint"] is None  # an edit that leaves the text: no hint
    reworded = call(client, "patch", f"/notes/{r.json()['id']}", {"body": first["body"] + " "})
    assert reworded.json()["dedup_hint"]["id"] == written["id"]


def test_a_note_written_again_is_the_note_there_over_rest_and_mcp(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An agent retrying a note's write without a key (or two agents) stored the same
    # note twice, told only by the second reply's dedup hint; a memory written twice is
    # the memory there (200, created false). A note is now the same: 200, `existing`.
    copy_ready()
    client = world.client("alpha")
    note = {"title": "Ledger runbook", "body": "Drain the workers, then roll the pods."}
    first = call(client, "post", "/notes", note)
    indexing.apply_pending()

    again = call(client, "post", "/notes", note)
    status, by_mcp = mcp(world, "alpha", "notes_write", note, monkeypatch)

    assert first.status_code == 201 and "existing" not in first.json()
    assert again.status_code == 200, again.content
    assert again.json()["id"] == by_mcp["id"] == first.json()["id"] and status == 200
    assert again.json()["existing"] is by_mcp["existing"] is True
    assert again.json()["dedup_hint"] is None and by_mcp["dedup_hint"] is None
    assert Note.objects.filter(title=note["title"]).count() == 1
    # A near-duplicate is a new note with its hint; so is the same text in another project.
    near = call(client, "post", "/notes", {**note, "title": "Ledger deploy steps"})
    assert near.status_code == 201 and near.json()["id"] != first.json()["id"]
    assert near.json()["dedup_hint"]["id"] == first.json()["id"]
    assert call(world.client("beta"), "post", "/notes", note).status_code == 201


def test_a_note_s_name_is_name_in_its_replies_as_in_hits_and_slug_is_taken_as_it(
    world: World,
) -> None:
    # notes_read and notes_write said `slug` for what a search hit, a recall item and a
    # dedup hint call a note's `name`: a note's write with a hint said both, one word
    # for each. The old name is still taken on a write.
    client = world.client("alpha")
    named = call(client, "post", "/notes", {"title": "Pager rota", "name": "pager-rota"}).json()
    slugged = call(client, "post", "/notes", {"title": "On call", "slug": "on-call"}).json()
    renamed = call(client, "patch", f"/notes/{slugged['id']}", {"name": "on-call-rota"}).json()
    indexing.apply_pending()
    hits = call(client, "get", "/search", {"q": "pager rota"}).json()["hits"]
    read = call(client, "get", f"/notes/{named['id']}").json()

    assert (named["name"], slugged["name"], renamed["name"]) == (
        "pager-rota", "on-call", "on-call-rota",
    )  # fmt: skip
    assert Note.objects.get(pk=renamed["id"]).slug == "on-call-rota"
    hit = next(h for h in hits if h["id"] == named["id"])
    assert hit["name"] == read["name"] == "pager-rota" and hit["item"] == "note"
    assert not [r for r in (named, slugged, renamed, read) if "slug" in r]


def test_a_note_is_read_and_changed_by_its_name_as_hits_give_it(world: World) -> None:
    # Hits, recall items and dedup hints give a note by `name`; reading one by it said
    # "no such note" (a memory's name always resolved).
    client = world.client("alpha")
    made = call(client, "post", "/notes", {"title": "Pager rota", "body": "Weekly."}).json()

    read = call(client, "get", "/notes/pager-rota")
    patched = call(client, "patch", "/notes/pager-rota", {"body": "Fortnightly."})

    assert read.status_code == 200 and read.json()["id"] == made["id"]
    assert patched.status_code == 200 and patched.json()["id"] == made["id"]
    # Another project's note of that name stays unseen, under id and name alike.
    other = call(world.client("beta"), "post", "/notes", {"title": "Beta rota"}).json()
    assert call(client, "get", f"/notes/{other['id']}").status_code == 404
    assert call(client, "get", "/notes/beta-rota").status_code == 404
    # A token of two projects holding the name asks for the id.
    call(world.client("beta"), "post", "/notes", {"title": "Pager rota"})
    both = call(world.client("alpha_beta"), "get", "/notes/pager-rota")
    assert both.status_code == 400 and "give the note's id" in both.json()["detail"]


def test_notes_reject_bad_input(world: World) -> None:
    client = world.client("alpha")

    assert call(client, "post", "/notes", {"body": "no title"}).status_code == 422
    assert call(client, "get", "/notes", {"limit": 0}).status_code == 422
    nid = world.notes["alpha"].pk
    for blank in (call(client, "post", "/notes", {"title": "   ", "body": "blank title"}),
                  call(client, "patch", f"/notes/{nid}", {"title": " \t"})):  # fmt: skip
        assert blank.status_code == 422, blank.content  # was 201: title "", slug `untitled`
        assert blank.json()["field"] == "title" and "not blank" in blank.json()["detail"]
    assert call(client, "patch", f"/notes/{nid}", {"slug": "Bad Slug"}).status_code == 422
    assert call(client, "patch", f"/notes/{nid}", {"name": "Bad Slug"}).status_code == 422
    assert call(client, "get", f"/notes/{world.notes[None].pk}").status_code == 200
    inbox = call(client, "patch", f"/notes/{world.notes[None].pk}", {"title": "x"})
    assert inbox.status_code == 403


# --- planes -------------------------------------------------------------------


def test_a_broken_plane_degrades_with_a_warning_and_all_broken_is_503(
    world: World, monkeypatch
) -> None:
    from console import wiring
    from recall.errors import IndexUnavailable

    def broken(*args, **kwargs):
        raise IndexUnavailable("the full-text index cannot be read")

    monkeypatch.setattr(wiring.text_index(), "search", broken)
    degraded = call(world.client("alpha"), "post", "/recall", {"query": "albatross"})

    monkeypatch.setattr(wiring.vector_index(), "search", broken)
    down = call(world.client("alpha"), "post", "/recall", {"query": "albatross"})

    assert degraded.status_code == 200
    assert degraded.json()["warnings"] == [
        "fts channel skipped: index unavailable (the full-text index cannot be read)"
    ]
    assert error(down, 503, "unavailable")["detail"] == "the full-text index cannot be read"


def test_openapi_schema_and_docs_are_served(world: World) -> None:
    from django.test import Client

    schema = Client().get("/api/v1/openapi.json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert {
        "/api/v1/recall", "/api/v1/search", "/api/v1/briefing", "/api/v1/prompt-recall",
        "/api/v1/memories", "/api/v1/memories/batch", "/api/v1/memories/{memory_id}",
        "/api/v1/memories/{memory_id}/supersede", "/api/v1/memories/{memory_id}/archive",
        "/api/v1/memories/{memory_id}/restore", "/api/v1/memories/{memory_id}/favorite",
        "/api/v1/notes", "/api/v1/notes/{note_id}", "/api/v1/notes/{note_id}/favorite",
        "/api/v1/projects", "/api/v1/search/text", "/api/v1/search/vector", "/api/v1/graph",
        "/api/v1/memories/{memory_id}/associate", "/api/v1/memories/{memory_id}/dissociate",
        "/api/v1/feedback",
    } == set(paths)  # fmt: skip
    for path, operations in paths.items():
        for method, op in operations.items():
            assert op["operationId"] and op["description"].strip(), (method, path)
    ids = [op["operationId"] for ops in paths.values() for op in ops.values()]
    assert len(ids) == len(set(ids))
    assert Client().get("/api/v1/docs").status_code == 200
    # The docs page speaks to someone writing an agent, not of our modules.
    said = schema.json()["info"]["description"]
    assert "Bearer" in said and "budget" in said and "console." not in said


# --- every operation, generated from the OpenAPI schema ---------------------------


def _openapi() -> dict:
    from django.test import Client

    return Client().get("/api/v1/openapi.json").json()


def _operations() -> list[tuple[str, str, dict]]:
    paths = _openapi()["paths"]
    return [
        (method, path.removeprefix("/api/v1"), op)
        for path, ops in sorted(paths.items())
        for method, op in sorted(ops.items())
    ]


def _published_fields(op: dict, components: dict) -> set[str]:
    """The fields an operation's schema says it takes: its body's, else its query's."""
    if "requestBody" in op:
        schema = op["requestBody"]["content"]["application/json"]["schema"]
        ref = (schema["allOf"][0] if "allOf" in schema else schema)["$ref"]  # a default: allOf
        return set(components[ref.rsplit("/", 1)[1]].get("properties", {}))
    return {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}


def test_every_operation_refuses_an_unknown_field(world: World) -> None:
    """A misspelt field is a 422 naming it, on every operation (body or query string),
    and naming the fields the operation takes, as its published schema lists them."""
    ids = {"memory_id": world.memories["alpha"].pk, "note_id": world.notes["alpha"].pk}
    client = world.client("alpha")
    operations = _operations()
    components = _openapi()["components"]["schemas"]
    assert len(operations) >= 20
    for method, path, op in operations:
        url = path.format(**ids)
        if method == "get":
            r = call(client, "get", url, {"bogus_field": "1"})
        else:
            r = call(client, method, url, {"bogus_field": 1})
        body = error(r, 422, r.json().get("code", "?"))
        listed = [(e["field"], e["code"]) for e in body.get("errors", [body])]
        assert ("bogus_field", "unknown_field") in listed, (method, path, body)
        if published := _published_fields(op, components):
            takes = body["detail"].split("; it takes ", 1)[1].split(", ")
            assert set(takes) == published, (method, path, body["detail"])
        if "requestBody" in op:  # and a query parameter on a body call, too
            r = client.generic(
                method.upper(), f"/api/v1{url}?bogus_param=1", "{}", "application/json"
            )
            body = error(r, 422, r.json()["code"])
            listed = [(e["field"], e["code"]) for e in body.get("errors", [body])]
            assert ("bogus_param", "unknown_field") in listed, (method, path, body)


def test_a_read_with_a_budget_cuts_a_runbook_at_a_line_and_closes_its_code_block(
    world: World,
) -> None:
    # An agent walk: the cut fell inside `$(date ...)` of a fenced command and left
    # the fence open, where Recall cuts the same memory at a line end and closes it.
    steps = "\n".join(f"git tag -a billing-{n} -m 'release {n}' && git push origin billing-{n}"
                      for n in range(40))  # fmt: skip
    body = f"Tag, then push.\n\n```bash\n{steps}\n```\n"
    call(world.client("alpha"), "post", "/memories",
         {"name": "tag-runbook", "description": "Tagging", "body": body})  # fmt: skip

    cut = call(world.client("alpha"), "get", "/memories/tag-runbook", {"budget": 220}).json()

    assert cut["truncated"] is True
    head, closing = cut["body"].rsplit("\n", 1)
    assert closing == "```" and head.endswith("…")  # the fence closed on a line of its own
    last = head[:-1].rsplit("\n", 1)[1]
    assert last in steps.splitlines()  # a whole command, not half of one


def test_a_read_with_a_budget_cuts_a_long_body_to_fit(world: World, monkeypatch: Any) -> None:
    # memory_read had no cap: a 100 KB runbook read by name put 26,000 tokens in context.
    body = " ".join(f"Step {n}: check the albatross gauge." for n in range(3000))
    made = call(world.client("alpha"), "post", "/memories",
                {"name": "long-runbook", "description": "Long", "body": body})  # fmt: skip
    assert made.status_code == 201, made.content
    count = ByteEstimate().count

    whole = call(world.client("alpha"), "get", "/memories/long-runbook")
    cut = call(world.client("alpha"), "get", "/memories/long-runbook", {"budget": 300})
    status, by_mcp = mcp(world, "alpha", "memory_read", {"name": "long-runbook", "budget": 300},
                         monkeypatch)  # fmt: skip

    assert whole.json()["body"] == body and "truncated" not in whole.json()
    short = cut.json()
    assert count(cut.content.decode()) <= 300 < count(whole.content.decode())
    assert short["truncated"] is True and short["body_chars"] == len(body)
    assert short["body"].endswith("gauge.…") and body.startswith(short["body"][:-1])  # a sentence
    assert status == 200 and by_mcp == short
    roomy = call(world.client("alpha"), "get", "/memories/long-runbook", {"budget": 100_000})
    assert roomy.json()["body"] == body  # a budget it fits leaves it whole
    tiny = call(world.client("alpha"), "get", "/memories/long-runbook", {"budget": 50})
    said = error(tiny, 409, "conflict")  # not a reply past the budget
    assert said["field"] == "budget" and "holds not even this memory's fields" in said["detail"]
    least = int(said["detail"].split("ask with at least ", 1)[1].split(" ", 1)[0])
    fits = call(world.client("alpha"), "get", "/memories/long-runbook", {"budget": least})
    assert fits.status_code == 200 and count(fits.content.decode()) <= least  # as it said
    short = call(world.client("alpha"), "get", f"/memories/{world.memories['alpha'].pk}",
                 {"budget": 50})  # fmt: skip
    need = short.json()["detail"].split("ask with at least ", 1)[1].split(" ", 1)[0]
    whole_short = call(world.client("alpha"), "get", f"/memories/{world.memories['alpha'].pk}")
    assert int(need) == count(whole_short.content.decode())  # never more than the whole


def test_an_unknown_field_inside_a_list_names_what_an_item_takes(
    world: World, monkeypatch: Any
) -> None:
    # It listed the call's own fields: "unknown field 'items.0.verdict'; it takes
    # pack_id, items".
    client = world.client("alpha")
    feedback = {"pack_id": "01" + "0" * 24, "items": [{"id": "x", "verdict": "good"}]}
    batch = {"memories": [{"name": "ok", "bogus": 1}]}

    rated = call(client, "post", "/feedback", feedback).json()
    written = call(client, "post", "/memories/batch", batch).json()
    status, over_mcp = mcp(world, "alpha", "memory_feedback", feedback, monkeypatch)

    takes = "; it takes id, used, helpful, harmful"
    assert rated["detail"] == "unknown field 'items.0.verdict'" + takes
    assert over_mcp["detail"] == rated["detail"] and status == 422
    assert written["detail"].startswith("unknown field 'memories.0.bogus'; it takes kind, name,")
    assert "idempotency_key" not in written["detail"]  # the batch's own field, not an item's


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("get", "/nope", 404, "not_found"),
        ("post", "/memories/x/y/z", 404, "not_found"),
        ("put", "/recall", 405, "method_not_allowed"),
        ("delete", "/search", 405, "method_not_allowed"),
    ],
)
def test_django_level_errors_under_the_api_are_json_too(
    world: World, method: str, path: str, status: int, code: str
) -> None:
    r = world.client("alpha").generic(method.upper(), f"/api/v1{path}")

    assert r["Content-Type"].startswith("application/json")
    assert set(error(r, status, code)) == ERROR


@pytest.mark.parametrize(
    ("path", "body"),
    [("/recall", {"query": "warm"}), ("/briefing", {}), ("/prompt-recall", {"prompt": "warm it"})],
)
def test_a_token_of_two_projects_is_told_which_field_to_give(
    world: World, path: str, body: dict[str, object]
) -> None:
    reply = call(world.client("alpha_beta"), "post", path, body)

    assert reply.status_code == 400
    assert reply.json()["field"] == "project" and "alpha, beta" in reply.json()["detail"]


def test_a_recall_no_memory_answers_is_empty_and_says_so(world: World) -> None:
    # "zebra quokka" filled the pack with whatever memories were nearest in meaning.
    reply = call(world.client("alpha"), "post", "/recall", {"query": "zebra quokka"}).json()

    assert reply["items"] == []
    assert any("no memory answers this" in w for w in reply["warnings"]), reply
    found = call(world.client("alpha"), "post", "/recall", {"query": "warm cache"}).json()
    assert found["items"] and found["warnings"] == []


def test_a_token_of_two_projects_changes_a_memory_by_its_name(world: World) -> None:
    # Changes take no project: asking for one left such a token no way to change a
    # memory by name ("name a project", and a project field was a 422).
    from django.test import Client

    from console import tokens

    _, secret = tokens.token_create(agent="both", projects=["alpha", "beta"], may_write=True)
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    alpha = world.memories["alpha"]
    twin = {"project": "beta", "name": "twin", "kind": "fact", "body": "In beta."}
    in_beta = call(client, "post", "/memories", twin)
    in_alpha = call(client, "post", "/memories", {**twin, "project": "alpha"})
    assert in_beta.status_code == in_alpha.status_code == 201

    archived = call(client, "post", f"/memories/{alpha.name}/archive")
    restored = call(client, "post", f"/memories/{alpha.name}/restore")
    read = call(client, "get", f"/memories/{alpha.name}")
    both = call(client, "post", "/memories/twin/archive")

    assert archived.status_code == 200 and archived.json()["id"] == alpha.pk
    assert restored.status_code == 200 and "active" not in restored.json()  # absent: active
    assert read.status_code == 200 and read.json()["id"] == alpha.pk
    # The ids, not "or a project": a change by name takes no project.
    said = error(both, 400, "invalid", "name")["detail"]
    assert f"{in_alpha.json()['memory']['id']} in alpha" in said
    assert f"{in_beta.json()['memory']['id']} in beta" in said
