"""Replies for agents: plain JSON, every text field sanitized, one shape per call.

The REST API and the MCP tools send exactly these (compact, `recall.agent.dumps`),
so what one surface says, the other says too. Text fields go through the
engine's sanitizer (`recall.sanitize`, `recall.agent.body_text`): no control
characters, no snippet sentinels, no HTML, phrases that start an injection
cut, `<` and `>` escaped. The console renders the same data as escaped HTML
itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from console.models import Edge, Memory, Note, Project
from console.raw import Walked
from recall import sanitize
from recall.agent import DESCRIPTION_CHARS, PRIOR_WORTH, body_text, figure, iso, second
from recall.graph import Reached
from recall.results import Hit, SearchResult
from recall.types import MEMORY_KINDS, NOTE, Record
from recall.worth import worth

EPISODIC = ("episode", "working")
DURABLE = tuple(k for k in MEMORY_KINDS if k not in EPISODIC)


def _line(text: str | None, limit: int = 300) -> str:
    return sanitize.field(text or "", limit)


# A field said only when not its default, in every reply (MemoryOut, NoteOut and
# SearchHitOut state each default, absent means it): no session, no event time, still
# valid, not superseded, not starred, no expiry, no verdict yet (Memory Worth 0.5). A
# memory written outside a conversation said `"session_id":"","session_order":null,
# "occurred_at":null,"invalid_at":null,"superseded_by":null`, 95 bytes of nothing on each
# write and read, about 1,200 tokens on a page of 50 of memory_list; "favorite":false and
# "active":true were 31 bytes on almost every memory and hit, `expires_at` and `worth`
# 30. One table for them all: three ways of leaving a default out had grown here.
UNSAID: dict[str, object] = {
    "session_id": "",
    "session_order": None,
    "occurred_at": None,
    "invalid_at": None,
    "superseded_by": None,
    "favorite": False,
    "active": True,
    "expires_at": None,
    "worth": PRIOR_WORTH,
}


def said(view: dict[str, Any]) -> dict[str, Any]:
    """`view` without the fields at their default (`UNSAID`), in its order."""
    return {k: v for k, v in view.items() if k not in UNSAID or v != UNSAID[k]}


def memory_view(m: Memory, *, at: datetime | None = None) -> dict[str, Any]:
    """A memory as the API gives it; `at`: a past state read as of that valid time,
    whose `active` says whether it was valid then (as a search as of then says),
    its `invalid_at` when it stopped."""
    return said({
        "id": m.pk,
        "project": m.project.slug if m.project_id and m.project else None,
        "kind": m.kind,
        "name": sanitize.name(m.name),
        "description": _line(m.description, DESCRIPTION_CHARS),
        "body": body_text(m.body),
        "tags": [sanitize.name(t, 64) for t in m.tags or []],
        "importance": m.importance,
        "agent_id": sanitize.label(m.agent_id),
        "session_id": sanitize.label(m.session_id),
        "session_order": m.session_order,
        "occurred_at": iso(m.occurred_at),
        "source": sanitize.label(m.source),
        "valid_from": iso(m.valid_from),
        "invalid_at": iso(m.invalid_at),
        "superseded_by": m.superseded_by_id,
        "favorite": m.favorite,
        "active": m.invalid_at is None or (at is not None and at < m.invalid_at),
        "created": iso(m.created),
        "updated": iso(m.updated),
        "expires_at": iso(m.expires_at),
        "worth": round(worth(m.feedback_helpful, m.feedback_harmful), 4),
    })  # fmt: skip


def without_body(view: dict[str, Any]) -> dict[str, Any]:
    """A memory's (or a note's) view at detail "index": its body gives way to
    body_chars, the length of the body as a read by id gives it (escaped: `<` reads
    `&lt;`), what reading it would put in the agent's context."""
    return {k: v for k, v in view.items() if k != "body"} | {"body_chars": len(view["body"])}


def note_view(n: Note) -> dict[str, Any]:
    return said({
        "id": n.pk,
        "project": n.project.slug if n.project_id and n.project else None,
        "title": _line(n.title, 200),
        "name": sanitize.name(n.slug),  # its slug: a hit's, an item's and a hint's `name`
        "description": _line(n.description, 150),
        "body": body_text(n.body),
        "tags": [sanitize.name(t, 64) for t in n.tags or []],
        "source_url": sanitize.name(n.source_url, 200),
        "favorite": n.favorite,
        "created": iso(n.created),
        "updated": iso(n.updated),
    })  # fmt: skip


def project_view(p: Project) -> dict[str, Any]:
    return {
        "slug": p.slug,
        "name": _line(p.name, 200),
        "description": _line(p.description, 2000),
        "isolation": p.isolation,
    }


def advice(hint: Hit, *, kind: str, changed: bool = False) -> str:
    """What to do about a near-duplicate: supersede only between durable kinds, and
    never a global memory (the advice said to, and the supersede was refused). Each
    step leaves one memory of the text: "supersede X rather than keep two", followed
    after a write, kept the new memory beside X's new version, two again, and that
    supersede's own hint said to supersede the first. `changed`: the hint is for a
    supersede's new version or an edit, not a memory just written."""
    name = sanitize.name(hint.name)
    if hint.kind == NOTE:  # agents edit notes but cannot delete one (people curate them)
        # "rather than keep two" asked for what no agent can do once this note exists
        return (
            f"very similar to note {name}: if both say the same thing, add to {name} "
            f"(notes_write with its id) next time instead of writing a new note; people "
            "curate notes in the console"
        )
    if hint.project is None:  # agents cannot supersede a global memory (the console curates it)
        return (
            f"very similar to {name}, a global memory that applies here already: "
            "archive this one unless it says something more"
        )
    if kind in DURABLE and hint.memory_kind in DURABLE:
        if changed:  # this memory is the one being curated: the other is the spare
            return f"very similar to {name}: if both say the same thing, archive {name}"
        return (
            f"very similar to {name}: if both say the same thing, delete this one; if this "
            f"one corrects it, supersede {name} with this text, then delete this one"
        )
    return f"similar to {name}; episodes often repeat, so keep both unless one is wrong"


def hint_view(hint: Hit | None, *, kind: str, changed: bool = False) -> dict[str, Any] | None:
    if hint is None:
        return None
    return {
        "id": hint.id,
        "name": sanitize.name(hint.name),
        "description": _line(hint.description, 150),
        "project": hint.project,
        "similarity": figure(hint.similarity or 0.0),  # as a hit says it, to 3 digits
        "advice": advice(hint, kind=kind, changed=changed),
    }


def written_view(
    memory: Memory,
    *,
    created: bool,
    hint: Hit | None,
    warnings: Sequence[str] = (),
    changed: bool = False,
) -> dict[str, Any]:
    return {
        "memory": memory_view(memory),
        "created": created,
        "dedup_hint": hint_view(hint, kind=memory.kind, changed=changed),
        "warnings": [_line(w, 300) for w in warnings],
    }


def note_written_view(
    note: Note, *, hint: Hit | None, changed: bool = False, existing: bool = False
) -> dict[str, Any]:
    """A note's write or edit: the note and its dedup hint (null: none), as an edited
    memory's reply carries its own; `existing` (said only when true: `created` is the
    note's time) when the write found this note holding its title and body already."""
    view = {**note_view(note), "dedup_hint": hint_view(hint, kind=NOTE, changed=changed)}
    return {**view, "existing": True} if existing else view


def search_hit_view(h: Hit, source: tuple[str, ...] = ()) -> dict[str, Any]:
    """One hit; `source` holds the texts its snippet may be cut from (description and
    body): a snippet whose words are not all text an agent may read is left out
    (`sanitize.kept_snippet`)."""
    snippet = sanitize.kept_snippet(h.snippet, (*source, h.title), unscrubbed=(h.name,))
    title, description = _line(h.title, 200), _line(h.description, 150)
    shown = _line(snippet, 400) if snippet is not None else None
    if shown is not None and _repeats(shown, title, description):
        shown = None  # a match in the description showed it twice, as snippet too
    view: dict[str, Any] = {"id": h.id, "item": h.kind, "name": sanitize.name(h.name)}
    if title != view["name"]:  # a memory's title is its name: the same text twice per hit
        view["title"] = title
    if h.memory_kind:  # a memory's kind; a note has none (it said `"memory_kind":null`)
        view["kind"] = h.memory_kind
    view |= {
        "project": h.project,
        "description": description,
        "snippet": shown,
        "similarity": figure(h.similarity) if h.similarity is not None else None,
        "source": h.source,
        "score": figure(h.score),
    }
    if h.source == "fused":  # several channels found it: the default, as a recall item's
        del view["source"]  # 16 bytes on almost every hit of memory_search, said nothing
    # Times to the second and figures to 3 digits, as a recall's items say them
    # (`recall.agent.second`, `figure`): on a page of 20 hits the microseconds were
    # about 560 bytes.
    updated = second(h.updated) if h.updated is not None else None
    view |= {"favorite": h.favorite, "active": h.active, "updated": updated}
    times = (("valid_from", h.valid_from), ("invalid_at", h.invalid_at),
             ("occurred_at", h.occurred_at))  # fmt: skip
    view |= {key: second(value) for key, value in times if value is not None}
    # Read, not written back: scrubbed as a recall's (`sanitize.label`); the session is
    # said here once (a `session_id` beside it repeated it), the unknown left out.
    given = (("source", h.origin), ("agent", h.agent_id), ("session", h.session_id))
    attribution = {key: label for key, value in given if (label := sanitize.label(value))}
    if attribution:
        view["attribution"] = attribution
    return said(view)


def _repeats(snippet: str, *fields: str) -> bool:
    """Whether a snippet shows only text a hit's other fields show already."""
    text = " ".join(snippet.split()).casefold()
    return any(text in " ".join(f.split()).casefold() for f in fields if f)


def search_view(
    result: SearchResult, *, sources: Mapping[str, tuple[str, ...]] | None = None
) -> dict[str, Any]:
    """One page of a search (`result.hits` from `result.offset`), the total found and how
    to ask for the next page; `sources`: each hit's description and body, by id (see
    `search_hit_view`)."""
    found = sources or {}
    return {
        "hits": [search_hit_view(h, found.get(h.id, ())) for h in result.hits],
        "total": result.total,
        "offset": result.offset,
        "next_offset": result.next_offset,
        "next_cursor": result.cursor,
        "warnings": [_line(w, 300) for w in result.warnings],
    }


def text_view(
    text: str, ids: Sequence[str], tokens: int, warnings: Sequence[str] = ()
) -> dict[str, Any]:
    return {"text": text, "ids": list(ids), "tokens": tokens, "warnings": list(warnings)}


def association_view(edge: Edge, *, created: bool) -> dict[str, Any]:
    return {
        "src": edge.src_id,
        "dst": edge.dst_id,
        "rel": sanitize.name(edge.rel),
        "weight": edge.weight,
        "created": created,
    }


def _node_view(record: Record, reached: Reached | None) -> dict[str, Any]:
    """A memory of a walk; `through`, the ids between the start and it, only when there
    are some: a `path` from the start's id to the node's own said both again on every
    node (at one hop, it was nothing but the two)."""
    steps = reached.steps if reached else ()
    view: dict[str, Any] = {
        "id": record.id,
        "name": sanitize.name(record.name),
        "kind": record.kind,
        "project": record.project,
        "description": _line(record.description, 150),
        "hops": reached.hops if reached else 0,
    }
    if reached is not None and len(reached.path) > 2:
        view["through"] = list(reached.path[1:-1])
    view["rels"] = [("~" if s.reverse else "") + sanitize.name(s.rel) for s in steps]
    view["score"] = round(reached.score, 6) if reached else 1.0
    return view


def graph_view(walk: Walked) -> dict[str, Any]:
    """A walk from one memory: the start, then what it reached, best path first."""
    return {
        "start": _node_view(walk.start, None),
        "nodes": [_node_view(walk.records[r.id], r) for r in walk.reached if r.id in walk.records],
    }
