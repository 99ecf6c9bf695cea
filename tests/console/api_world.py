"""A small world for the agent API and MCP tests: four projects, items, tokens.

alpha and beta are open, conf is confidential, vault is sealed; each holds a
memory and a note with words unique to it; there is a global memory and an
inbox note. Tokens: alpha (write), alpha (read-only), beta (write), conf
(write), vault (write), and a revoked alpha token.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.test import Client

from console import indexing, services, tokens
from console.models import Memory, Note

WORDS = {
    "alpha": "albatross",
    "beta": "bergamot",
    "conf": "cormorant",
    "vault": "vermilion",
    None: "gazetteer",
}


@dataclass
class World:
    memories: dict[str | None, Memory] = field(default_factory=dict)
    notes: dict[str | None, Note] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)

    def client(self, who: str | None) -> Client:
        if who is None:
            return Client()
        return Client(HTTP_AUTHORIZATION=f"Bearer {self.secrets[who]}")


def call(client: Client, method: str, path: str, body: Any = None) -> Any:
    """One API call; `body` is sent as JSON (GET bodies become the query string)."""
    url = f"/api/v1{path}"
    if method == "get":
        return client.get(url, body or {})
    data = json.dumps(body) if body is not None else ""
    return getattr(client, method)(url, data, content_type="application/json")


def mcp(world: World, who: str, tool: str, args: dict[str, Any], monkeypatch: Any) -> Any:
    """Call one MCP tool in process, exactly as `manage.py mcp` runs it."""
    from console.mcp import SPECS, TOKEN_ENV

    monkeypatch.setenv(TOKEN_ENV, world.secrets[who])
    spec = next(s for s in SPECS if s.name == tool)
    result = spec.build().fn(**args)
    body = json.loads(result.content[0].text)
    if not result.is_error:  # the SDK's server checks a reply against its published schema
        spec.reply.model_validate(result.structured_content)
    return (body["status"] if result.is_error else 200), body


def recall_both(world: World, body: dict[str, Any], monkeypatch: Any) -> tuple[Any, Any]:
    """The same recall as alpha over REST (`POST /recall`) and over MCP (`memory_recall`):
    the REST response and MCP's (status, body)."""
    rest = call(world.client("alpha"), "post", "/recall", body)
    return rest, mcp(world, "alpha", "memory_recall", body, monkeypatch)


def build_world() -> World:
    world = World()
    for slug, isolation in (
        ("alpha", "open"),
        ("beta", "open"),
        ("conf", "confidential"),
        ("vault", "sealed"),
    ):
        services.project_create(slug=slug, isolation=isolation)
    from console.models import Project

    for slug, word in WORDS.items():
        project = Project.objects.get(slug=slug) if slug else None
        tag = slug or "global"
        world.memories[slug] = services.memory_create(
            project=project,
            kind="gotcha",
            name=f"{tag}-{word}",
            description=f"The {word} service needs a warm cache before traffic",
            body=f"Warm the {word} cache first.",
        )
        world.notes[slug] = services.note_create(
            project=project, title=f"{word} notes", description=f"Notes on {word}"
        )
    for who, projects, write in (
        ("alpha", ["alpha"], True),
        ("alpha_ro", ["alpha"], False),
        ("beta", ["beta"], True),
        ("conf", ["conf"], True),
        ("vault", ["vault"], True),
        ("revoked", ["alpha"], True),
        ("alpha_beta", ["alpha", "beta"], False),
    ):
        token, secret = tokens.token_create(
            agent=f"agent-{who}", projects=projects, may_write=write
        )
        world.secrets[who] = secret
        if who == "revoked":
            tokens.token_revoke(token=token)
    indexing.apply_pending()
    return world


@pytest.fixture(name="world")
def world_fixture(planes: Any, db: Any) -> World:
    return build_world()


def copy_ready() -> None:
    """Wait until this process's vector copy has loaded (embedded planes; PostgreSQL has
    none). A write applied while it loads in the background may reach it only at a
    later poll, so a test asking the copy for that write right away (a kept vector, a
    dedup hint) failed on a loaded machine."""
    from console import wiring
    from recall.indexes.hot_vectors import HotVectorIndex

    vectors = wiring.vector_index()
    if isinstance(vectors, HotVectorIndex):
        assert vectors.wait_ready(60)
