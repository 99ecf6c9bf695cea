from __future__ import annotations

import pytest

from recall.candidates import EmbedCache, gather, recall_filter, search_filter
from recall.errors import QueryError
from recall.testing import FakeEmbedder, InMemoryStore, InMemoryTextIndex
from recall.types import Filter


def test_recall_scope_is_the_project_plus_global():
    where = recall_filter(InMemoryStore(), project="alpha")
    assert where == Filter(projects=("alpha",), include_global=True)


def test_a_sealed_project_has_no_global_scope():
    where = recall_filter(InMemoryStore(isolation={"vault": "sealed"}), project="vault")
    assert where.include_global is False


def test_no_project_means_global_only():
    where = recall_filter(InMemoryStore(), project=None)
    assert not where.admits(project="alpha", active=True, item="memory", kind="fact")
    assert where.admits(project=None, active=True, item="memory", kind="fact")


@pytest.mark.parametrize(
    ("scope", "kind", "items", "kinds"),
    [
        ("all", None, None, None),
        ("memories", None, ("memory",), None),
        ("notes", None, ("note",), None),
        ("all", "gotcha", ("memory",), ("gotcha",)),
    ],
)
def test_scope_and_kind_become_filter_fields(
    scope: str, kind: str | None, items: object, kinds: object
):
    where = recall_filter(InMemoryStore(), project="alpha", scope=scope, kind=kind)
    assert (where.items, where.kinds) == (items, kinds)


def test_unknown_scope_is_a_query_error():
    with pytest.raises(QueryError):
        recall_filter(InMemoryStore(), project="alpha", scope="world")


def test_search_scope_is_every_project_by_default():
    assert search_filter(projects=None) == Filter(projects=None, include_global=True)
    assert search_filter(projects=None, include_inactive=True).active_only is False


def test_no_semantic_leg_without_vectors():
    embedder = FakeEmbedder()
    legs = gather(
        "x",
        where=Filter(),
        depth=5,
        text_index=InMemoryTextIndex(),
        vectors=None,
        embedder=embedder,
    )
    assert set(legs.channels) == {"fts"} and embedder.calls == 0 and legs.warnings == []


def test_embed_cache_embeds_a_repeated_query_once():
    embedder, cache = FakeEmbedder(), EmbedCache(2)
    first = cache.embed(embedder, "chroma")
    again = cache.embed(embedder, "chroma")
    cache.embed(embedder, "b")
    cache.embed(embedder, "c")
    cache.embed(embedder, "chroma")

    assert again is first
    assert embedder.calls == 4
