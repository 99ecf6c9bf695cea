"""What points at what, written once the rows are in: they may point forward in the file.

Supersessions wait for their replacement, `[[wikilink]]` edges are derived
batch by batch (bodies that named a memory before it arrived included),
explicit edges and parent projects are resolved after the last batch.
Supersessions and explicit edges stay inside one project (or point at a
global memory): one that would cross is refused and reported.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from console import services
from console.importing.parsing import number
from console.models import Edge, Memory, Project
from console.records import RecordError, parse_time
from console.services.associations import link_refusal
from recall import links


@dataclass
class Supersession:
    old: str  # the superseded memory
    new: str  # its replacement
    where: str = ""  # the old memory's record, for the report


def _memories(ids: Iterable[str]) -> dict[str, Memory]:
    rows = (
        Memory.objects.filter(pk__in=set(ids))
        .select_related("project")
        .only("id", "project__slug", "project__isolation")
    )
    return {m.pk: m for m in rows}


def supersessions_stamp(
    waiting: list[Supersession],
) -> tuple[list[Supersession], list[tuple[Supersession, str]]]:
    """Stamp `superseded_by` where the replacement exists and the link may be.

    Returns the links still waiting for their replacement, and those refused
    with the reason (`link_refusal`).
    """
    found = _memories([link.old for link in waiting] + [link.new for link in waiting])
    still: list[Supersession] = []
    refused: list[tuple[Supersession, str]] = []
    for link in waiting:
        if link.new not in found:
            still.append(link)
        elif (why := link_refusal(found[link.old], found[link.new])) is not None:
            refused.append((link, why))
        else:
            Memory.objects.filter(pk=link.old).update(superseded_by_id=link.new)
    return still, refused


class Mentions:
    """Which stored bodies name which memories in a `[[link]]`.

    Read once per import and extended batch by batch, so that finding the
    earlier bodies that named a batch's memories is a lookup, not a scan of
    every body per batch (which made a 100k import quadratic).
    """

    def __init__(self) -> None:
        self.sources: dict[str, set[str]] = defaultdict(set)
        rows = Memory.objects.filter(body__contains="[[").values_list("pk", "body")
        for pk, body in rows.iterator(chunk_size=2000):
            self.add(pk, body)

    def add(self, pk: str, body: str) -> None:
        for name in links.names(body):
            self.sources[name].add(pk)

    def naming(self, names: Iterable[str]) -> set[str]:
        return set().union(*(self.sources.get(name, ()) for name in names))


def wikilinks_write(memories: list[Memory], mentions: Mentions) -> None:
    """Wikilink edges of the batch, and of earlier bodies that named its memories."""
    if not memories:
        return
    for memory in memories:
        if links.names(memory.body):
            services.memory_links_rewrite(memory=memory)
    waiting = mentions.naming(m.name for m in memories) - {m.pk for m in memories}
    for memory in memories:
        mentions.add(memory.pk, memory.body)
    for source in Memory.objects.filter(pk__in=waiting).only("id", "project_id", "body"):
        services.memory_links_rewrite(memory=source)


def edge_import(data: dict[str, Any]) -> bool:
    """Write an explicit edge between two stored memories; False when it exists.

    Raises RecordError when an end is missing or the edge would leave its
    project (`link_refusal`).
    """
    src, dst = str(data.get("src") or ""), str(data.get("dst") or "")
    found = _memories([src, dst])
    for end in (src, dst):
        if end not in found:
            raise RecordError(f"edge {src} -> {dst}: memory {end!r} not found")
    why = link_refusal(found[src], found[dst])
    if why is not None:
        raise RecordError(f"edge {src} -> {dst}: {why}")
    _, created = Edge.objects.get_or_create(
        src_id=src,
        dst_id=dst,
        rel=str(data.get("rel") or "links"),
        origin="explicit",
        defaults={
            "weight": number(data.get("weight", 1.0), key="weight"),
            "created": parse_time(data.get("created"), key="created") or timezone.now(),
        },
    )
    return created


def parents_set(parents: list[tuple[str, str, str]]) -> list[str]:
    """Point each (project, parent, where) at its parent; a warning per missing parent."""
    warnings = []
    for slug, parent, where in parents:
        found = Project.objects.filter(slug=parent).first()
        if found is None:
            warnings.append(f"{where}: parent project {parent!r} not found")
        else:
            Project.objects.filter(slug=slug).update(parent=found)
    return warnings
