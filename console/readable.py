"""What the agent API reads off a request before its schema: the JSON body and the
query string's bytes, each refused in words that say what is wrong with it.

A JSON integer of more than `sys.get_int_max_str_digits()` digits (4,300) made
`json.loads` raise, and the reply said the body was not valid JSON: it is, and
the agent was left to guess. It is now read as `TooLong`, and `json_object`
raises `NumberOutOfRange` naming the field that holds it.

Django reads a query string's percent-escapes as UTF-8 with errors replaced, so
`q=%ff%fe` became two U+FFFD and a search for them answered 200 with no hits,
and a project `%ff` was "not allowed"; `query_string_utf8` refuses the request
instead, naming the parameter (a U+FFFD sent as UTF-8, `%EF%BF%BD`, is text).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from recall.errors import QueryError


@dataclass(frozen=True, slots=True)
class TooLong:
    """A JSON integer too long for Python to read (its digits counted)."""

    digits: int


class NumberOutOfRange(ValueError):
    """A JSON body holds an integer no field can take; `field` is where (dotted)."""

    def __init__(self, field: str, digits: int) -> None:
        self.field = field
        self.digits = digits
        super().__init__(f"the number is out of range ({digits:,} digits)")


def _integer(text: str) -> int | TooLong:
    try:
        return int(text)
    except ValueError:  # past the interpreter's digit limit
        return TooLong(len(text.lstrip("-")))


def json_object(body: bytes) -> dict[str, Any]:
    """`body` as one JSON object; ValueError when it is not one, NumberOutOfRange when
    it holds an integer too long to read."""
    data = json.loads(body, parse_int=_integer)
    if not isinstance(data, dict):
        raise ValueError("the body must be a JSON object")
    for path, value in _leaves(data, ()):
        if isinstance(value, TooLong):
            raise NumberOutOfRange(".".join(path), value.digits)
    return data


def _leaves(value: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*path, str(key)))
    elif isinstance(value, list):
        for n, inner in enumerate(value):
            yield from _leaves(inner, (*path, str(n)))
    else:
        yield path, value


def query_string_utf8(query: str) -> None:
    """QueryError (400) naming the first parameter whose percent-escapes are not UTF-8."""
    for pair in query.split("&"):
        name, _, value = pair.partition("=")
        for part in (name, value):
            try:
                unquote(part, errors="strict")
            except UnicodeDecodeError:
                said = unquote(name, errors="replace")
                raise QueryError(
                    f"{said}: the query string is not valid UTF-8 ({part!r}); "
                    "percent-encode text as UTF-8",
                    field=said,
                ) from None
