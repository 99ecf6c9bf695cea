"""`[[name]]` links: how a body names other memories, and which memory a name means.

The one place these rules live; the console's services (which turn bodies
into Edge rows when a body is written), its markdown renderer and the
engine's stores import them.

- `WIKILINK` / `names(body)`: `[[name]]`, `[[name|shown text]]` and
  `[[name#section]]` name the memory `name`; names are taken in order of
  first appearance, outside code (a fenced block or an inline code span: TOML's
  `[[tool.mypy.overrides]]` links nothing, as the console's renderer shows it).
- `prefer(rows, project)`: a name means the active memory of that name in the
  linking project if there is one, else the global one (project beats
  global); among several in one scope the newest id wins (a replacement
  written by supersede is newer than what it replaced).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeVar

from recall.markdown import without_code

WIKILINK = re.compile(r"\[\[([^\[\]|#\n]{1,120})(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]{0,200}))?\]\]")

Key = TypeVar("Key")


def names(body: str | None) -> list[str]:
    """The distinct `[[name]]` targets of a body, in order of first appearance."""
    seen: list[str] = []
    for match in WIKILINK.finditer(without_code(body or "")):
        name = match.group(1).strip()
        if name and name not in seen:
            seen.append(name)
    return seen


def plain(text: str) -> str:
    """`text` with each `[[name]]` link written as its shown text, else its name
    (where the text is read rather than rendered: a digest's sentences)."""
    return WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)


def prefer(rows: Iterable[tuple[str, str, Key | None]], project: Key | None) -> dict[str, str]:
    """name -> id of the memory each name means, from `(name, id, project)` rows.

    `rows` are the active candidates of the wanted names in `project` and in
    global scope (project None); any other project's rows are ignored.
    """
    found: dict[str, tuple[bool, str]] = {}
    for name, ident, scope in rows:
        if scope is not None and scope != project:
            continue
        rank = (scope is not None and scope == project, ident)
        if name not in found or rank > found[name]:
            found[name] = rank
    return {name: ident for name, (_, ident) in found.items()}
