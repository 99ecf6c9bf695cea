"""What the agent API reads before its schema: a JSON body's numbers and a query
string's bytes (console/readable.py, console/api.py)."""

from __future__ import annotations

import pytest

from console import readable
from recall.errors import QueryError
from tests.console.api_world import World, world_fixture  # noqa: F401

HUGE = "1" * 5000  # past Python's 4,300-digit limit for reading an integer


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (f'{{"limit": {HUGE}}}', "limit"),
        (f'{{"limit": -{HUGE}}}', "limit"),
        (f'{{"memories": [{{"name": "a"}}, {{"importance": {HUGE}}}]}}', "memories.1.importance"),
    ],
)
def test_an_integer_too_long_to_read_is_out_of_range_at_its_field(body: str, field: str) -> None:
    with pytest.raises(readable.NumberOutOfRange) as raised:
        readable.json_object(body.encode())
    assert raised.value.field == field and raised.value.digits == 5000


def test_a_body_of_ordinary_numbers_reads_as_json_does() -> None:
    assert readable.json_object(b'{"a": [1, -2, 3.5], "b": {"c": 10}}') == {
        "a": [1, -2, 3.5], "b": {"c": 10},
    }  # fmt: skip
    with pytest.raises(ValueError, match="JSON object"):
        readable.json_object(b"[1]")


@pytest.mark.parametrize(
    ("query", "field"),
    [("q=%ff%fe", "q"), ("q=ok&project=%c3", "project"), ("%ff=1", "\ufffd")],
)
def test_a_query_string_that_is_not_utf8_names_its_parameter(query: str, field: str) -> None:
    with pytest.raises(QueryError, match="not valid UTF-8") as raised:
        readable.query_string_utf8(query)
    assert raised.value.field == field


def test_a_utf8_query_string_passes_even_with_a_replacement_character() -> None:
    readable.query_string_utf8("q=%EF%BF%BD+caf%C3%A9&project=alpha&flag")  # U+FFFD sent as text


def test_the_api_says_a_long_integer_is_out_of_range_not_invalid_json(world: World) -> None:
    client = world.client("alpha")
    body = f'{{"query": "albatross", "limit": {HUGE}}}'
    r = client.post("/api/v1/recall", body, content_type="application/json")

    assert r.status_code == 422, r.content
    assert r.json() == {
        "detail": "limit: the number is out of range (5,000 digits)",
        "field": "limit",
        "code": "invalid",
    }


def test_the_api_refuses_a_query_string_that_is_not_utf8(world: World) -> None:
    client = world.client("alpha")
    r = client.get("/api/v1/search?q=%ff%fe")

    assert r.status_code == 400, r.content
    assert r.json()["field"] == "q" and "not valid UTF-8" in r.json()["detail"]
    assert client.get("/api/v1/search?q=%EF%BF%BD").status_code == 200  # U+FFFD as text
