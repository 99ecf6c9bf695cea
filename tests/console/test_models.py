"""Model-level pieces that must behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from console.models import RetrievalEvent

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("wanted", "found"),
    [("01ABC", {"both"}), ("01AB", {"short", "both"}), ("01A", set()), ("01abc", set()),
     ('"01ABC"', set()), ("%", set())],
)  # fmt: skip
def test_has_string_matches_whole_elements_only(wanted: str, found: set[str]) -> None:
    RetrievalEvent.objects.create(kind="recalled", ids=["01ABC", "01AB"], query="both")
    RetrievalEvent.objects.create(kind="recalled", ids=["01AB"], query="short")
    RetrievalEvent.objects.create(kind="recalled", ids=[], query="none")

    hits = RetrievalEvent.objects.filter(ids__has_string=wanted)

    assert set(hits.values_list("query", flat=True)) == found
