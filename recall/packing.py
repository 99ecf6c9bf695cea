"""Token packing for agents: greedy in rank order, the first overflow ends it.

As in fabriq's packer: items go in rank order while they fit; the first item
that would overflow the budget ends packing (no skipping ahead to smaller
items, so the pack is always a prefix of the ranking) and `omitted` counts the
rest. Each item's cost is estimated from the text rendered for the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from recall import sanitize
from recall.ports import TokenCounter
from recall.results import Hit
from recall.types import Record

BODY_CHARS = 4000


def render(record: Record) -> str:
    """The text an agent is given for one item: name, description, body (sanitized)."""
    head = f"{sanitize.name(record.name or record.title)}: {sanitize.field(record.description)}"
    body = sanitize.field(record.body, BODY_CHARS)
    return f"{head}\n{body}" if body else head


@dataclass(frozen=True, slots=True)
class Packed:
    items: tuple[Hit, ...]
    omitted: int
    tokens: int


def pack(ranked: Sequence[tuple[Hit, Record]], *, budget: int, counter: TokenCounter) -> Packed:
    """The longest prefix of `ranked` whose rendered tokens fit `budget`."""
    items: list[Hit] = []
    used = 0
    for hit, record in ranked:
        cost = counter.count(render(record))
        if used + cost > budget:
            break
        items.append(replace(hit, tokens=cost))
        used += cost
    return Packed(tuple(items), len(ranked) - len(items), used)
