"""Explicit associations: typed, weighted edges between memories, and what supersede does to them.

An association is an `Edge` with origin `explicit`, a type (`rel`, e.g.
`caused`, `depends-on`; default `related`) and a weight 0..1 that the graph
channel multiplies along a path (`recall.graph`). Writing one again with the
same (source, target, type) changes its weight. `[[links]]` (origin
`wikilink`, weight 1) follow bodies and are not written here; supersession
edges are not stored at all: they are the `superseded_by` column, read as
edges of type `supersedes` (replacement -> replaced) by the store.

The scope rule (`link_refusal`) is recall's own: an edge stays inside its
project or points at a global memory, and nothing enters or leaves a sealed
project. On supersede the replaced memory's associations (both ways) move
to its replacement, so what an agent wired up survives a correction.
"""

from __future__ import annotations

import math

from django.core.exceptions import ValidationError
from django.db import transaction

from console.models import Edge, Memory
from recall.graph import REL_RE
from recall.types import ISOLATION_SEALED, LINKS, RELATED, SUPERSEDES

EXPLICIT = "explicit"
RESERVED = (LINKS, SUPERSEDES)  # written by the system, never by hand


def link_refusal(src: Memory, dst: Memory) -> str | None:
    """Why a supersession or explicit edge from `src` to `dst` is refused; None when it is not.

    A link stays inside its project or points at a global memory, the scope
    recall itself has (recall.scope: the bound project plus global, nothing in
    or out of a sealed one). A link across projects would show one project's
    ids in another's replies (`superseded_by`, graph expansion).
    """
    source, target = src.project, dst.project
    if source is not None and source.isolation == ISOLATION_SEALED and target != source:
        return f"{source.slug} is sealed, nothing in or out"
    if target is None:
        return None
    if source is None:
        return f"a global memory cannot point into project {target.slug}"
    if source.pk != target.pk:
        return f"it would cross from project {source.slug} to project {target.slug}"
    return None


def association_check(*, src: Memory, dst: Memory, rel: str, weight: float) -> None:
    """ValidationError naming the field at fault."""
    if not REL_RE.match(rel):
        raise ValidationError({"rel": "A type is 1-32 of a-z, 0-9, _ and -, starting a-z."})
    if rel in RESERVED:
        raise ValidationError({"rel": f"{rel!r} is written by the system; choose another type."})
    if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
        raise ValidationError({"weight": "A weight is a number within 0..1."})
    if src.pk == dst.pk:
        raise ValidationError({"target": "A memory cannot be associated with itself."})
    why = link_refusal(src, dst)
    if why is not None:
        raise ValidationError({"target": f"Refused: {why}."})


@transaction.atomic
def association_write(
    *, src: Memory, dst: Memory, rel: str = RELATED, weight: float = 1.0
) -> tuple[Edge, bool]:
    """Create the association, or set the weight of the one of that type; (edge, created)."""
    association_check(src=src, dst=dst, rel=rel, weight=weight)
    edge, created = Edge.objects.update_or_create(
        src=src, dst=dst, rel=rel, origin=EXPLICIT, defaults={"weight": float(weight)}
    )
    return edge, created


@transaction.atomic
def association_delete(*, src: Memory, dst: Memory, rel: str | None = None) -> int:
    """Remove the association(s) src -> dst (of type `rel`, or all); how many went."""
    rows = Edge.objects.filter(src=src, dst=dst, origin=EXPLICIT)
    if rel is not None:
        rows = rows.filter(rel=rel)
    deleted, _ = rows.delete()
    return deleted


def associations_carry(*, old: Memory, new: Memory) -> None:
    """The replaced memory's associations, both ways, now also hold for its replacement."""
    moved = [
        Edge(src=new, dst_id=e.dst_id, rel=e.rel, weight=e.weight, origin=EXPLICIT)
        for e in Edge.objects.filter(src=old, origin=EXPLICIT).exclude(dst=new)
    ]
    moved += [
        Edge(src_id=e.src_id, dst=new, rel=e.rel, weight=e.weight, origin=EXPLICIT)
        for e in Edge.objects.filter(dst=old, origin=EXPLICIT).exclude(src=new)
    ]
    Edge.objects.bulk_create(moved, ignore_conflicts=True)
