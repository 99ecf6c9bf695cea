"""Engine fixtures on the in-memory reference adapters.

Behaviour tests take their engine from the `make_engine` fixture, so the same
tests can run on the real planes by overriding that one fixture (index the
records into tantivy/LanceDB with the real embedder instead).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from recall.config import Configs
from recall.engine import Engine
from recall.errors import IndexUnavailable
from recall.planes import Planes
from recall.ports import Embedder, Vectors
from recall.testing import FakeEmbedder, InMemoryStore, InMemoryTextIndex, InMemoryVectorIndex
from recall.types import Candidate, Filter, Record, VectorRow, to_doc

NOW = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def uid(n: int) -> str:
    """A ULID-shaped id (26 Crockford characters) that sorts by n."""
    return f"01HZX{n:021d}"


def make_memory(n: int, name: str | None = None, **overrides: Any) -> Record:
    """A memory Record: project "alpha", kind fact, updated n hours before NOW."""
    values: dict[str, Any] = {
        "id": uid(n),
        "item": "memory",
        "project": "alpha",
        "kind": "fact",
        "name": name or f"memory-{n}",
        "title": "",
        "description": "",
        "updated": NOW - timedelta(hours=n),
    }
    values.update(overrides)
    values.setdefault("title", values["name"])
    return Record(**values)


def make_turn(n: int, order: int | None, *, session: str = "alpha:S1", **kw: Any) -> Record:
    """An episode of `session` at `order`, happening at NOW (unless told otherwise)."""
    values: dict[str, Any] = {"occurred_at": NOW, "kind": "episode"}
    values.update(kw)
    return make_memory(n, session_id=session, session_order=order, **values)


def make_note(n: int, title: str, **overrides: Any) -> Record:
    return make_memory(
        n, title.lower().replace(" ", "-"), item="note", kind="", title=title, **overrides
    )


# Queries that must give an empty result or a QueryError, never a crash.
BAD_QUERIES = [
    "",
    "   ",
    "x" * 10_000,
    "?!.,;:",
    "AND OR NOT",
    '"""',
    "🚀🔥",
    "nul\x00byte",
    "(*) [[ ]] --",
]


class SpySearches:
    """Mixin for a VectorIndex: counts searches; `fail = True` raises IndexUnavailable."""

    fail = False
    searches = 0

    def search(
        self, vector: Sequence[float] | Vectors, *, where: Filter, limit: int
    ) -> list[Candidate]:
        self.searches += 1
        if self.fail:
            raise IndexUnavailable("vector table unreadable")
        return super().search(vector, where=where, limit=limit)  # type: ignore[misc, no-any-return]


class SpyVectorIndex(SpySearches, InMemoryVectorIndex):
    """The reference vector index with a search spy."""

    def __init__(self, *, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail


def index(engine: Engine, records: Iterable[Record]) -> None:
    """Write records to the store and both planes, as the outbox would."""
    records = list(records)
    planes = engine.planes
    store = planes.store
    assert isinstance(store, InMemoryStore)
    for r in records:
        store.add(r)
    planes.text.upsert([to_doc(r) for r in records])
    if planes.vectors is not None and planes.embedder is not None:
        docs = [to_doc(r) for r in records]
        vectors = FakeEmbedder(planes.embedder.dims).embed([d.embedding_text() for d in docs])
        planes.vectors.upsert([  # with the facets the filters read, as the console's rows
            VectorRow(d.id, d.item, d.project, d.active, d.kind, tuple(float(x) for x in v),
                      planes.embedder.model, d.updated, tags=d.tags, agent_id=d.agent_id,
                      session_id=d.session_id, importance=d.importance, created=d.created)
            for d, v in zip(docs, vectors, strict=True)
        ])  # fmt: skip


def invalidate(engine: Engine, record_id: str, superseded_by: str | None = None) -> None:
    store = engine.planes.store
    assert isinstance(store, InMemoryStore)
    store.invalidate(record_id, superseded_by)
    index(engine, [store.records[record_id]])


MakeEngine = Callable[..., Engine]


@pytest.fixture
def make_engine() -> MakeEngine:
    """make_engine(records, *, embedder=FakeEmbedder(), vectors=SpyVectorIndex(),
    isolation={}, usage={}, clock=NOW, **Engine fields) -> Engine with the records indexed."""

    def make(
        records: Iterable[Record] = (),
        *,
        embedder: Embedder | None | str = "fake",
        vectors: InMemoryVectorIndex | None | str = "spy",
        isolation: dict[str, str] | None = None,
        usage: dict[str, float] | None = None,
        clock: Any = lambda: NOW,
        **fields: Any,
    ) -> Engine:
        fields.setdefault("background_rebuild", False)
        fields.setdefault("base", Configs())
        planes = Planes(
            text=InMemoryTextIndex(),
            store=InMemoryStore(isolation=isolation, usage=usage, clock=clock),
            vectors=SpyVectorIndex() if vectors == "spy" else vectors,  # type: ignore[arg-type]
            embedder=FakeEmbedder() if embedder == "fake" else embedder,  # type: ignore[arg-type]
            clock=clock,
        )
        engine = Engine(planes, **fields)
        index(engine, records)
        return engine

    return make


def ids(hits: Iterable[Any]) -> list[str]:
    return [h.id for h in hits]


__all__ = [
    "BAD_QUERIES",
    "NOW",
    "index",
    "invalidate",
    "make_memory",
    "make_note",
    "uid",
    "ids",
    "replace",
]
