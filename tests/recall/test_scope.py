from __future__ import annotations

import pytest

from recall.errors import QueryError
from recall.scope import recall_filter, search_filter
from recall.testing import InMemoryStore
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


def test_a_sealed_view_of_search_has_no_global_items():
    where = search_filter(projects=("vault",), include_global=False)
    assert not where.admits(project=None, active=True, item="memory", kind="fact")
    assert where.admits(project="vault", active=True, item="memory", kind="fact")
