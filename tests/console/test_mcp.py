"""`manage.py mcp` driven by the SDK's own client over stdio, in a subprocess.

The data directory is a fresh tmp dir: migrated, with a project and a write
token, exactly as an operator would prepare it.
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from tests.console import api_server

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "memory_recall", "memory_search", "memory_read", "memory_list", "memory_write",
    "memory_write_batch", "memory_supersede", "memory_archive", "memory_delete", "notes_read",
    "notes_write", "briefing", "prompt_recall", "projects_list", "project_create",
    "memory_search_text", "memory_search_vector", "memory_graph", "memory_associate",
    "memory_dissociate", "memory_feedback", "memory_update", "memory_restore", "memory_favorite",
}  # fmt: skip
DESTRUCTIVE = {"memory_delete"}
READ_ONLY = {
    "memory_recall", "memory_search", "memory_read", "memory_list", "notes_read", "briefing",
    "prompt_recall", "projects_list", "memory_search_text", "memory_search_vector",
    "memory_graph",
}  # fmt: skip

SETUP = """
import django; django.setup()
from console import services, tokens
services.project_create(slug="alpha")
services.project_create(slug="beta")
services.memory_create(project=services.project_get_or_create(slug="beta"), name="beta-only",
                       description="The beta quokka deploys on Fridays")
print(tokens.token_create(agent="mcp-test", projects=["alpha"], may_write=True)[1])
"""


def _env(data_dir: Path, token: str = "") -> dict[str, str]:
    full = api_server.environment(data_dir)  # the database too, on the PostgreSQL profile
    return {
        "RECALL_DATA_DIR": str(data_dir),
        "RECALL_AGENT_TOKEN": token,
        "DJANGO_SETTINGS_MODULE": "console.settings",
        "PATH": os.environ.get("PATH", ""),
        **{k: full[k] for k in ("DATABASE_URL", "RECALL_PROFILE") if k in full},
    }


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data_dir = tmp_path_factory.mktemp("mcp-data")
    env = {**os.environ, **_env(data_dir)}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    out = subprocess.run(
        [sys.executable, "-c", SETUP], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return data_dir, out.stdout.strip().splitlines()[-1]


def _json(result: Any) -> Any:
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


async def _session(data_dir: Path, token: str, steps: Any) -> Any:
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp"], env=_env(data_dir, token), cwd=ROOT
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await steps(session)


@pytest.mark.slow
def test_an_sdk_client_lists_writes_recalls_and_reads(prepared: tuple[Path, str]) -> None:
    data_dir, token = prepared

    async def steps(session: ClientSession) -> dict[str, Any]:
        listed = await session.list_tools()
        out: dict[str, Any] = {"tools": {t.name: t for t in listed.tools}}
        out["written"] = _json(
            await session.call_tool(
                "memory_write",
                {
                    "name": "flaky-quay-login",
                    "description": "The quay.io login fails while the VPN reconnects",
                    "body": "Wait for the VPN, then retry `docker login quay.io`.",
                    "kind": "gotcha",
                },
            )
        )
        out["recalled"] = _json(
            await session.call_tool("memory_recall", {"query": "quay login fails"})
        )
        memory_id = out["written"]["memory"]["id"]
        out["read"] = _json(await session.call_tool("memory_read", {"id": memory_id}))
        out["briefing"] = await session.call_tool("briefing", {})
        out["other"] = await session.call_tool("memory_recall", {"query": "x", "project": "beta"})
        out["quokka"] = _json(await session.call_tool("memory_search", {"q": "quokka"}))
        out["by_name"] = _json(await session.call_tool("memory_read", {"name": "flaky-quay-login"}))
        edit = {"id": "flaky-quay-login", "tags": ["vpn"], "body": "Wait for the VPN <then> retry."}
        out["updated"] = _json(await session.call_tool("memory_update", edit))
        out["reread"] = _json(await session.call_tool("memory_read", {"id": memory_id}))
        out["starred"] = _json(await session.call_tool("memory_favorite", {"id": memory_id}))
        await session.call_tool("memory_archive", {"id": memory_id})
        out["restored"] = _json(await session.call_tool("memory_restore", {"id": memory_id}))
        return out

    out = anyio.run(_session, data_dir, token, steps)

    assert set(out["tools"]) == TOOLS
    memory = out["written"]["memory"]
    assert memory["project"] == "alpha" and memory["agent_id"] == "mcp-test"
    # The agent sent the body: the reply gives its size, not the text again.
    assert "body" not in memory and memory["body_chars"] == len(
        "Wait for the VPN, then retry `docker login quay.io`."
    )
    assert "dedup_hint" in out["written"]
    items = out["recalled"]["items"]
    assert items and items[0]["id"] == memory["id"]
    assert out["recalled"]["tokens"] <= out["recalled"]["budget"]
    assert out["read"]["body"].startswith("Wait for the VPN")
    assert "flaky-quay-login" in out["briefing"].content[0].text
    assert out["briefing"].structured_content["tokens"] > 0
    refused = json.loads(out["other"].content[0].text)
    assert out["other"].is_error and refused["status"] == 403 and refused["code"] == "forbidden"
    assert "this token may not use project" in refused["detail"]
    assert out["quokka"]["hits"] == []
    assert out["by_name"]["id"] == memory["id"]
    updated = out["updated"]
    assert (updated["id"], updated["tags"]) == (memory["id"], ["vpn"])
    assert out["reread"]["body"] == "Wait for the VPN &lt;then&gt; retry."
    assert "body" not in updated and updated["body_chars"] == len(out["reread"]["body"])
    assert out["starred"] == {"id": memory["id"], "favorite": True}
    assert out["restored"]["id"] == memory["id"] and "active" not in out["restored"]


@pytest.mark.slow
def test_an_sdk_client_is_told_of_a_note_it_wrote_before(prepared: tuple[Path, str]) -> None:
    """notes_write answers with a dedup hint as memory_write does: the text the agent's
    context gets names the earlier note and what to do, in a few dozen tokens."""
    data_dir, token = prepared  # and a note's slug is its `name`, as the hint says it
    body = "Export the ledger nightly with pg_dump, gzip it and upload it to the backups bucket."

    async def steps(session: ClientSession) -> list[Any]:
        first = await session.call_tool("notes_write", {"title": "Ledger backups", "body": body})
        again = await session.call_tool("notes_write", {"title": "Backing up", "body": body})
        old = {"title": "Restore drill", "slug": "restore-drill"}  # the old name, still taken
        return [first, again, await session.call_tool("notes_write", old)]

    first, again, slugged = anyio.run(_session, data_dir, token, steps)

    assert _json(first)["dedup_hint"] is None
    hint = _json(again)["dedup_hint"]
    assert hint["id"] == _json(first)["id"] and hint["name"] == "ledger-backups"
    assert _json(first)["name"] == "ledger-backups" and "slug" not in _json(first)
    assert _json(slugged)["name"] == "restore-drill"
    text = again.content[0].text  # what reaches the agent: the hint, the body's size
    assert '"advice":"very similar to note ledger-backups' in text
    assert '"body_chars":84' in text and len(text) < 700, text  # under 200 tokens
    assert again.structured_content["dedup_hint"]["id"] == hint["id"]


@pytest.mark.slow
def test_an_sdk_client_reads_a_memory_s_kind_as_kind_and_may_send_memory_kind(
    prepared: tuple[Path, str],
) -> None:
    """One name per thing: what memory_write takes as `kind` comes back as `kind` from
    memory_recall and memory_search too (they said `memory_kind`), and an agent that
    learnt the old name and sends it is understood."""
    data_dir, token = prepared

    async def steps(session: ClientSession) -> list[Any]:
        said = {"name": "cron-dst-double-run", "memory_kind": "gotcha",
                "description": "The nightly cron ran twice at the DST change"}  # fmt: skip
        written = await session.call_tool("memory_write", said)
        recalled = await session.call_tool("memory_recall", {"query": "cron DST twice"})
        found = await session.call_tool("memory_search", {"q": "cron DST"})
        listed = await session.call_tool("memory_list", {"memory_kind": ["gotcha"]})
        return [written, recalled, found, listed]

    written, recalled, found, listed = anyio.run(_session, data_dir, token, steps)

    memory = _json(written)["memory"]
    assert memory["kind"] == "gotcha"
    texts = [r.content[0].text for r in (written, recalled, found, listed)]
    assert not [t for t in texts if "memory_kind" in t]
    item = next(i for i in _json(recalled)["items"] if i["id"] == memory["id"])
    hit = next(h for h in _json(found)["hits"] if h["id"] == memory["id"])
    assert item["kind"] == hit["kind"] == "gotcha" and hit["item"] == "memory"
    assert "item" not in item  # a memory, the default, left out
    listed_kinds = {m["id"]: m["kind"] for m in _json(listed)["memories"]}
    assert memory["id"] in listed_kinds and set(listed_kinds.values()) == {"gotcha"}


@pytest.mark.slow
def test_every_tool_documents_itself_and_refuses_unknown_fields(
    prepared: tuple[Path, str],
) -> None:
    """Generated from the server's own tool list: schemas, hints, and a 422 per tool."""
    data_dir, token = prepared

    async def steps(session: ClientSession) -> dict[str, Any]:
        tools = (await session.list_tools()).tools
        refused = {t.name: await session.call_tool(t.name, {"bogus_field": 1}) for t in tools}
        misspelt = await session.call_tool("memory_recal", {"query": "x"})
        tuned = {"query": "vpn", "k": 5, "hops": 0, "record": False, "channel_weights": {"fts": 1}}
        tuned_reply = await session.call_tool("memory_recall", tuned)
        return {"tools": tools, "refused": refused, "misspelt": misspelt, "tuned": tuned_reply}

    out = anyio.run(_session, data_dir, token, steps)

    # A tool it does not have is refused in the one error shape, naming the tools (the
    # SDK said "Unknown tool: memory_recal", a text no client reads as the others).
    assert out["misspelt"].is_error
    misspelt = json.loads(out["misspelt"].content[0].text)
    assert (misspelt["status"], misspelt["code"], misspelt["field"]) == (404, "not_found", None)
    assert "no tool named 'memory_recal'; the tools are" in misspelt["detail"]
    assert all(name in misspelt["detail"] for name in TOOLS)

    for tool in out["tools"]:
        schema = tool.input_schema
        assert schema.get("additionalProperties") is False, tool.name
        for name, prop in schema.get("properties", {}).items():
            assert prop.get("description"), (tool.name, name)
            # Every session's context holds this list: no title per property, no
            # "or null" beside an optional value (console.mcp.compact).
            assert "title" not in prop and {"type": "null"} not in prop.get("anyOf", ())
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        hints = tool.annotations
        assert hints is not None and hints.read_only_hint == (tool.name in READ_ONLY)
        assert hints.destructive_hint == (tool.name in DESTRUCTIVE), tool.name
        # A read-only agent knows which tools are not for it (six did not say so).
        says = tool.description or ""
        needs = "write token" in says or "admin scope" in says
        assert needs != (tool.name in READ_ONLY), tool.name
        result = out["refused"][tool.name]
        error = json.loads(result.content[0].text)
        assert result.is_error and error["status"] == 422, (tool.name, error)
        listed = [(e["field"], e["code"]) for e in error.get("errors", [error])]
        assert ("bogus_field", "unknown_field") in listed, tool.name
        if schema.get("properties"):  # the reply names what the tool takes instead
            takes = error["detail"].split("; it takes ", 1)[1].split(", ")
            tuning = says.split("tuning fields: ", 1)[1].rstrip(".").split(", ") if (
                "tuning fields: " in says) else []  # fmt: skip
            assert set(takes) == {*schema["properties"], *tuning}, (tool.name, error["detail"])
    recall = next(t for t in out["tools"] if t.name == "memory_recall")
    props = recall.input_schema["properties"]
    # Its tuning fields are named once at the end of its description, not schemas of
    # their own in every session's context, and still taken.
    assert not {"rrf_k", "channel_weights", "hops", "top_k", "record"} & set(props)
    assert "tuning fields: rrf_k, channel_weights" in (recall.description or "")
    assert not out["tuned"].is_error, out["tuned"].content[0].text
    assert out["tuned"].structured_content["budget"] > 0
    # No default of its own: the configured budget (1000 unless Settings change it).
    budget = props["budget"]
    assert "default" not in budget and "the configured one (1000" in budget["description"]
    assert (budget["type"], budget["minimum"], budget["maximum"]) == ("integer", 50, 100_000)
    assert set(props["detail"]["enum"]) == {"index", "full"}
    assert props["project"]["maxLength"] == 64 and "default" not in props["project"]
    assert props["project"]["description"].startswith("one of the token's projects")


@pytest.mark.slow
@pytest.mark.parametrize("budget", [50, 200, 1000, 4000])
def test_an_mcp_recall_text_fits_its_budget(prepared: tuple[Path, str], budget: int) -> None:
    from recall.tokens import ByteEstimate

    data_dir, token = prepared
    fill = [
        {"name": f"quay-note-{i}", "description": f"quay login detail {i}",
         "body": "The quay login needs the VPN. " * (i + 1)}
        for i in range(12)
    ]  # fmt: skip

    async def steps(session: ClientSession) -> Any:
        await session.call_tool(
            "memory_write_batch", {"memories": fill, "idempotency_key": "fill-quay"}
        )
        return await session.call_tool("memory_recall", {"query": "quay login", "budget": budget})

    result = anyio.run(_session, data_dir, token, steps)

    text = result.content[0].text
    assert not result.is_error and ByteEstimate().count(text) <= budget
    assert json.loads(text) == result.structured_content
    assert result.structured_content["tokens"] == ByteEstimate().count(text)


@pytest.mark.slow
def test_a_bad_token_stops_the_server_before_it_speaks(prepared: tuple[Path, str]) -> None:
    data_dir, _ = prepared

    result = subprocess.run(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env={**os.environ, **_env(data_dir, "rct_0000000000_nope")},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )

    assert result.returncode != 0
    assert "RECALL_AGENT_TOKEN is missing, invalid or revoked" in result.stderr
    assert result.stdout == ""


@pytest.mark.slow
def test_the_core_tools_alone_are_offered_and_named(prepared: tuple[Path, str]) -> None:
    """`--tools core`: the tool list holds ARCHITECTURE's eight, the instructions name no
    other, and a call to another is the one error shape saying how to get it."""
    data_dir, token = prepared
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--tools", "core"],
        env=_env(data_dir, token),
        cwd=ROOT,
    )

    async def steps() -> tuple[Any, Any, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            started = await session.initialize()
            listed = await session.list_tools()
            other = await session.call_tool("memory_list", {})
            return started, listed, other

    started, listed, other = anyio.run(steps)

    core = {
        "memory_recall", "memory_search", "memory_read", "memory_write", "memory_supersede",
        "notes_read", "notes_write", "briefing",
    }  # fmt: skip
    assert {t.name for t in listed.tools} == core
    named = set(re.findall(r"`(\w+)`", started.instructions))
    assert "briefing" in named and not (named & TOOLS) - core
    refused = json.loads(other.content[0].text)
    assert other.is_error and refused["status"] == 404
    assert "does not offer memory_list" in refused["detail"]


def test_an_unknown_tool_set_stops_the_server_before_it_speaks(
    prepared: tuple[Path, str],
) -> None:
    data_dir, token = prepared

    result = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--tools", "core,memory_lsit"],
        cwd=ROOT,
        env={**os.environ, **_env(data_dir, token)},
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
    )

    assert result.returncode != 0 and result.stdout == ""
    assert "no tool or set named 'memory_lsit'" in result.stderr


def _replies(stream: Any, into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


@pytest.mark.slow
def test_a_malformed_line_gets_a_json_rpc_error_and_the_session_goes_on(
    prepared: tuple[Path, str],
) -> None:
    """JSON-RPC 2.0 section 5.1: a line that is not JSON is a -32700 with id null, JSON
    that is no request a -32600 (with its id when it has one); the next line is served.
    Before, the server answered nothing and the client waited for ever."""
    data_dir, token = prepared
    server = subprocess.Popen(
        [sys.executable, "manage.py", "mcp"],
        cwd=ROOT,
        env={**os.environ, **_env(data_dir, token)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdin is not None and server.stdout is not None
    replies: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_replies, args=(server.stdout, replies), daemon=True).start()

    def exchange(line: str, *, wait: float = 15) -> Any:
        assert server.stdin is not None
        server.stdin.write(line + "\n")
        server.stdin.flush()
        return json.loads(replies.get(timeout=wait))

    hello = {"protocolVersion": "2025-06-18", "capabilities": {},
             "clientInfo": {"name": "raw", "version": "1"}}  # fmt: skip
    try:
        opened = exchange(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                      "params": hello}), wait=90)  # fmt: skip
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        server.stdin.write("\n")
        not_json = exchange("{this is not json")
        no_method = exchange(json.dumps({"jsonrpc": "2.0", "id": 7, "method": 5}))
        a_list = exchange(json.dumps(["not", "a", "request"]))
        # JSON by RFC 8259 (json.dumps writes it so), text by no reading: a lone surrogate.
        recall = {"name": "memory_recall", "arguments": {"query": "a\ud800b"}}
        surrogate = exchange(
            json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": recall})
        )
        listed = exchange(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()

    assert opened["id"] == 1 and "result" in opened
    assert (not_json["id"], not_json["error"]["code"]) == (None, -32700)
    assert not_json["error"]["message"] == "Parse error"
    assert (no_method["id"], no_method["error"]["code"]) == (7, -32600)
    assert no_method["error"]["message"] == "Invalid Request"
    assert (a_list["id"], a_list["error"]["code"]) == (None, -32600)
    assert (surrogate["id"], surrogate["error"]["code"]) == (8, -32700), surrogate  # not null
    assert listed["id"] == 2 and {t["name"] for t in listed["result"]["tools"]} == TOOLS


def test_a_line_only_the_sdk_cannot_read_is_refused_under_its_own_id() -> None:
    """A lone surrogate is JSON that pydantic's parser refuses: the refusal came with id
    null, and a client waited for ever for the answer to its request."""
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    from console.mcp_stdio import refusal

    def refused(line: str) -> Any:
        with pytest.raises(ValidationError) as caught:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        reply = refusal(caught.value)
        assert reply is not None
        return reply

    call = {"jsonrpc": "2.0", "id": "r-9", "method": "tools/call",
            "params": {"name": "memory_write", "arguments": {"body": "a\udfffb"}}}  # fmt: skip
    surrogate = refused(json.dumps(call))
    assert (surrogate.id, surrogate.error.code) == ("r-9", -32700)
    assert refused("{this is not json").id is None
    assert refused('{"jsonrpc": "2.0", "id": true, "x": "\\ud800"}').id is None
    assert refused("[" * 5000 + "]" * 5000).id is None  # deeper than Python reads
