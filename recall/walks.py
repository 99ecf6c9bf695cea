"""Cursors: a walk over a search's pages that meets each hit once, whatever changes.

Paging by offset assumes the ranking holds still between pages. A write, an
edit or an archive in scope between two pages moves it, and a walk by offset
then meets a hit twice or never (fusion's normalisation, the favourites' lead
and the session prior all move with what the channels find). A cursor carries
what the walk has shown: a 4-byte mark of each hit (`mark`, the same in every
process), the mark of the search it belongs to (`key`: the words, the scope
and the filters, not the page size) and its position. The next page is the
best hits of the ranking as it is now that the walk has not shown, read as
deep as the page at that position reads (`recall.search.depth_for`): no hit
twice, and a hit that moved ahead of the walk's position comes next instead
of being skipped. With nothing changed between pages the pages are the
offset's exactly. The cursor is the whole state: any server process answers
any page, and nothing is kept. An offset beside a cursor passes over that many
more of the hits the walk has not shown. A cursor of another search is a
`WalkConflict` (409 over the API); any text of `CURSOR_PATTERN` is otherwise a
walk, so a request the published schema allows is never refused as malformed.

A mark is 32 bits, so a hit can be taken for one already shown: at the
deepest page (500 shown, 500 ranked) about 500 x 500 / 2^32, 1 in 17,000.
"""

from __future__ import annotations

import base64
import hashlib
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from recall.config import MAX_SEARCH_DEPTH
from recall.errors import QueryError, WalkConflict
from recall.requests import SearchRequest

_HEAD = struct.Struct(">IH")  # the search's key, the position: 8 characters
_MARKS = struct.Struct(">III")  # marks go three at a time: 16 characters
_GROUPS = -(-MAX_SEARCH_DEPTH // 3)
CAPACITY = 3 * _GROUPS  # the most marks a cursor holds
# Every text of this pattern is a walk (a key, a position, marks), so the API schema
# publishes it and no cursor it allows is refused as malformed.
CURSOR_PATTERN = rf"^[A-Za-z0-9_-]{{8}}(?:[A-Za-z0-9_-]{{16}}){{0,{_GROUPS}}}$"
OTHER_SEARCH = (
    "cursor walks another search (other words, projects, filters or plane): "
    "ask this one's first page without a cursor"
)


def mark(text: str) -> int:
    """A 32-bit mark of `text`, the same in every process (Python's hash is not)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=4).digest(), "big")


def key(req: SearchRequest, channels: Iterable[str]) -> int:
    """The mark of the search a walk belongs to: everything that picks its hits, the
    channels that rank them included (a plane's search is another search); lists
    that are sets (projects, kinds, items) in any order; the words in any case and
    spacing, as the text index and the embedder read them."""

    def unordered(values: Iterable[str] | None) -> tuple[str, ...] | None:
        return None if values is None else tuple(sorted(set(values)))

    parts = (
        " ".join(req.query.casefold().split()), unordered(req.projects), unordered(req.kinds),
        unordered(req.items), req.semantic, req.since, req.include_inactive,
        req.include_global, req.prefix, req.as_of, req.recorded_as_of, unordered(channels),
    )  # fmt: skip
    return mark(repr(parts))


@dataclass(frozen=True, slots=True)
class Walk:
    """Where a walk is: the search's key, how many hits it has passed, and the
    marks of those it has shown."""

    key: int
    position: int
    seen: frozenset[int]

    def shown(self, id_: str) -> bool:
        return mark(id_) in self.seen

    def on(self, ids: Iterable[str], position: int, ranked: Iterable[str] = ()) -> str | None:
        """The cursor of the page after this one: `ids` shown too, now at `position`.
        Past `CAPACITY` marks (a walk through much churn: hits it showed archived or
        deleted meanwhile) the marks of hits gone from the ranking (`ranked`) go;
        None if it is still too long (only a cursor made up gets there)."""
        walk = self.then(ids, position, ranked)
        return None if walk is None else cursor(walk.key, walk.position, walk.seen)

    def then(self, ids: Iterable[str], position: int, ranked: Iterable[str] = ()) -> Walk | None:
        """This walk with `ids` shown too, now at `position` (None: too long, see `on`)."""
        shown = {mark(i) for i in ids}
        seen = self.seen | shown
        if len(seen) > CAPACITY:
            seen = (self.seen & {mark(i) for i in ranked}) | shown
        return Walk(self.key, position, frozenset(seen)) if len(seen) <= CAPACITY else None


def start(req: SearchRequest, channels: Iterable[str]) -> Walk:
    """A walk that has shown nothing yet (a first page, or one asked by offset)."""
    return Walk(key(req, channels), req.offset, frozenset())


def cursor(search: int, position: int, seen: Iterable[int]) -> str:
    """A walk as the text handed out (`next_cursor`): URL-safe base64 of its key and
    position, then its marks three at a time (the last three filled with a repeat)."""
    marks = sorted(set(seen))
    if len(marks) % 3:
        marks += [marks[-1]] * (3 - len(marks) % 3)
    raw = _HEAD.pack(search, position) + b"".join(
        _MARKS.pack(*marks[n : n + 3]) for n in range(0, len(marks), 3)
    )
    return base64.urlsafe_b64encode(raw).decode()


def read(text: str, req: SearchRequest, channels: Iterable[str], *, deepest: int) -> Walk:
    """The walk `text` carries (a position past `deepest` read as `deepest`);
    QueryError for a text not of `CURSOR_PATTERN`, WalkConflict for a cursor of
    another search."""
    if not re.fullmatch(CURSOR_PATTERN, text):
        raise QueryError("cursor is not one a search handed out: pass next_cursor as it came")
    raw = base64.urlsafe_b64decode(text)
    search, position = _HEAD.unpack_from(raw)
    seen = frozenset(m for group in _MARKS.iter_unpack(raw[_HEAD.size :]) for m in group)
    if search != key(req, channels):
        raise WalkConflict(OTHER_SEARCH)
    return Walk(search, min(position, deepest), seen)
