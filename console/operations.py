"""Every agent call, once: guarded by `console.access`, answered as `console.replies`.

The REST API (`console/api.py`) and the MCP tools (`console/mcp.py`) are
transports over these functions: each takes the token's Access and the
call's validated request schema and returns an `Answer`, the status and
JSON body to send plus the text an agent's context receives (the compact
JSON itself, or for a briefing and a prompt-recall block, the block). So a
call behaves the same whichever door an agent came in by.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from console import access, browse, replies, selectors, services, withheld
from console.access import Access
from console.models import NAME_RE, Memory
from console.schemas import (
    AssociationFields,
    BriefingIn,
    DissociationFields,
    FavoriteIn,
    FeedbackIn,
    GraphIn,
    MemoryBatchIn,
    MemoryChange,
    MemoryIn,
    MemoryListIn,
    MemoryRef,
    NoteChange,
    NoteIn,
    NoteListIn,
    PlaneSearchIn,
    ProjectIn,
    PromptIn,
    RecallIn,
    SearchIn,
)
from recall.agent import dumps, pack_view
from recall.associated import FIELDS as GRAPH_FIELDS
from recall.neighbourhood import FIELDS as SESSION_FIELDS
from recall.packing import cut_to_fit
from recall.requests import FILTER_FIELDS, KNOB_FIELDS, WORTH_FIELDS
from recall.results import SearchResult
from recall.search import within

NOT_INDEXED = (  # also on a repeat that stored nothing, when what it found waits too
    "not indexed yet (the index is catching up): findable by id and name now, "
    "by recall and search once indexed"
)


@dataclass(frozen=True, slots=True)
class Answer:
    """What to send: HTTP status, JSON body, and the text an agent's context gets."""

    status: int
    body: dict[str, Any]
    text: str


def _json(body: dict[str, Any], status: int = 200) -> Answer:
    return Answer(status, body, dumps(body))


def _set(payload: Any, *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields a caller set (null = not set), without the call's own options."""
    fields: dict[str, Any] = payload.dict(exclude_unset=True, exclude_none=True)
    return {k: v for k, v in fields.items() if k not in drop}


# --- retrieval ----------------------------------------------------------------


def recall(who: Access, p: RecallIn) -> Answer:
    pack = access.recall(
        who, project=p.project, record=p.record, query=p.query, budget=p.budget, limit=p.limit,
        scope=p.scope, kind=p.kind, rrf_k=p.rrf_k, channel_weights=p.channel_weights,
        debug=p.debug, detail=p.detail,
        graph=p.dict(include={*GRAPH_FIELDS, *SESSION_FIELDS}, exclude_none=True),
        knobs=p.dict(include={*KNOB_FIELDS, *WORTH_FIELDS}, exclude_none=True),
        filters=p.dict(include=set(FILTER_FIELDS), exclude_none=True), altitude=p.altitude,
    )  # fmt: skip
    return _json(pack_view(pack))


def feedback(who: Access, p: FeedbackIn) -> Answer:
    """Memory Worth: the agent's verdicts on the items of a pack it recalled."""
    items = [item.dict() for item in p.items]
    verdicts = access.memory_feedback(who, pack_id=p.pack_id, items=items)
    body = {"pack_id": p.pack_id.upper(), "items": [asdict(v) for v in verdicts]}
    return _json(body)


def search(who: Access, p: SearchIn) -> Answer:
    page = _Page(p.budget)
    result = access.search(
        who, query=p.q, projects=p.project, limit=p.limit, offset=p.offset, cursor=p.cursor,
        semantic=p.semantic, since=p.since, record=p.record,
        as_of=p.as_of, recorded_as_of=p.recorded_as_of, fit=page.fit,
    )  # fmt: skip
    return page.answer(result)


class _Page:
    """A search's page as an agent gets it, with `budget` cut to its longest first part
    whose whole reply fits (`recall.search.within`: next_offset and next_cursor go on
    after the last hit kept): a page of 20 hits was about 3,000 tokens, with no way
    to ask for less but fewer hits, whose size an agent cannot know."""

    def __init__(self, budget: int | None) -> None:
        self.budget = budget
        self.sources: dict[str, tuple[str, ...]] | None = None

    def view(self, result: SearchResult) -> Answer:
        if self.sources is None:  # the whole page's, once: a shorter page takes a part
            self.sources = _snippet_sources(result)
        return _json(replies.search_view(result, sources=self.sources))

    def fit(self, result: SearchResult) -> SearchResult:
        if self.budget is None:
            return result
        return within(result, lambda shown: selectors.tokens(self.view(shown).text), self.budget)

    def answer(self, result: SearchResult) -> Answer:
        answer = self.view(result)
        needs = selectors.tokens(answer.text)
        if self.budget is not None and needs > self.budget:  # its cursor, its warnings
            raise services.StateConflict(
                {"budget": f"budget {self.budget} holds not even this page without its hits: "
                           f"ask with at least {needs}"}
            )  # fmt: skip
        return answer


def _snippet_sources(result: SearchResult) -> dict[str, tuple[str, ...]]:
    """What the page's snippets were cut from, so a reply shows only what agents may read."""
    ids = [h.id for h in result.hits if h.snippet is not None]
    return {i: (t.description, t.body) for i, t in browse.texts(ids=ids).items()}


def search_text(who: Access, p: PlaneSearchIn) -> Answer:
    return _plane(who, p, "text")


def search_vector(who: Access, p: PlaneSearchIn) -> Answer:
    return _plane(who, p, "vector")


def _plane(who: Access, p: PlaneSearchIn, plane: str) -> Answer:
    page = _Page(p.budget)
    result = access.search_plane(
        who, plane=plane, query=p.q, projects=p.project, limit=p.limit, offset=p.offset,
        cursor=p.cursor, record=p.record, fit=page.fit,
    )  # fmt: skip
    return page.answer(result)


def memory_graph(who: Access, p: GraphIn) -> Answer:
    walked = access.memory_graph(
        who, memory_id=p.memory, project=p.project, hops=p.hops, reverse=p.reverse,
        min_weight=p.min_weight, cap=p.cap,
    )  # fmt: skip
    return _json(replies.graph_view(walked))


def briefing(who: Access, p: BriefingIn) -> Answer:
    result = access.briefing(
        who, project=p.project, agent_type=p.agent_type, prompt=p.prompt, budget=p.budget
    )
    body = replies.text_view(result.text, result.ids, result.tokens, result.warnings)
    return Answer(200, body, _block_text(result.text, result.warnings, NOTHING_TO_BRIEF))


def prompt_recall(who: Access, p: PromptIn) -> Answer:
    result = access.prompt_recall(who, project=p.project, prompt=p.prompt, budget=p.budget)
    body = replies.text_view(result.text, result.ids, result.tokens, result.warnings)
    return Answer(200, body, _block_text(result.text, result.warnings, NO_MATCH))


NOTHING_TO_BRIEF = "(nothing to brief: no memory in scope)"
NO_MATCH = "(no memory matched this prompt)"


def _block_text(block: str, warnings: Sequence[str], empty: str) -> str:
    """What a model reads of a block tool (MCP's text; REST's `text` is the block alone,
    for a hook to inject): the block, which says itself what did not fit; with none,
    why. An empty text read the same for "3 memories matched, but no line of them fits
    20 tokens" as for no match."""
    return block or "\n".join(f"({w})" for w in warnings) or empty


# --- memories -------------------------------------------------------------------


def _idempotent(
    who: Access, key: str | None, request: dict[str, Any], write: Callable[[], Answer]
) -> Answer:
    def run() -> tuple[int, dict[str, Any]]:
        answer = write()
        return answer.status, answer.body

    status, body, _ = services.idempotent(token=who.token_id, key=key, request=request, write=run)
    return _json(body, status)


def _with_index_state(answer: Answer, ids: list[str]) -> Answer:
    """Say so when the index has not caught up with a write that committed."""
    if not selectors.index_pending(ids=ids):
        return answer
    body = {**answer.body, "warnings": [*answer.body.get("warnings", []), NOT_INDEXED]}
    return _json(body, answer.status)


def _at_detail(answer: Answer, detail: str) -> Answer:
    """A write's reply as asked: at "index" (the default) its memory leaves out the
    body, which the writer sent (body_chars says its size; memory_read gives it), so
    an agent's context does not get its own text back. Idempotent retries store the
    full reply and shape it per call."""
    if detail != "index" or answer.status >= 400:
        return answer
    body = answer.body
    if "memory" in body:  # a write or supersede: the memory beside created, the hint
        return _json({**body, "memory": replies.without_body(body["memory"])}, answer.status)
    return _json(replies.without_body(body), answer.status)  # an edit: the memory itself


def memory_write(who: Access, p: MemoryIn, *, key: str | None = None) -> Answer:
    fields = _set(p, drop=("project", "force", "idempotency_key", "detail"))
    fields.setdefault("kind", p.kind)
    fields.setdefault("source", p.source)

    def write() -> Answer:
        written = access.memory_write(who, project=p.project, fields=fields, force=p.force)
        said = (
            [
                *_textless(written.memory),
                *withheld.warnings(fields),
                *_unlinked(written.memory),
                *_shared_turn(written.memory, fields),
                *_retired([written.memory]).get(written.memory.pk, []),
            ]
            if written.created
            else list(_not_as_asked(written.memory, fields))
        )
        body = replies.written_view(
            written.memory, created=written.created, hint=written.dedup_hint, warnings=said
        )
        return _json(body, 201 if written.created else 200)

    request = {"call": "memory_write", **p.dict(exclude={"idempotency_key", "detail"})}
    answer = _idempotent(who, key or p.idempotency_key, request, write)
    return _at_detail(_with_index_state(answer, [answer.body["memory"]["id"]]), p.detail)


TEXTLESS = (
    "no description or body: recall, search and prompt blocks have only its name to go "
    "on; memory_update it with a description"
)


def _textless(memory: Any) -> list[str]:
    """A warning for a memory written with neither description nor body: it holds a
    name in the briefing's index and nothing a later session could use."""
    return [] if (memory.description or "").strip() or (memory.body or "").strip() else [TEXTLESS]


def _unlinked(memory: Any) -> list[str]:
    """A warning naming the body's `[[links]]` that reach no memory yet (a typo, or a
    memory still to write: the link is made once one of that name is written)."""
    found = selectors.unlinked_names(memory)
    # A target no memory can ever be named (`[[Bad Name]]`) is told apart: no write
    # will make that link, so "not yet" would mislead.
    never = [name for name in found if not NAME_RE.match(name)]
    out = []
    for names, why in (
        ([n for n in found if n not in never], "no memory yet; a link is made once a memory "
         "of that name is written"),
        (never, "no memory a name can have (lower-case letters, digits, '-', '_' or '.'): "
         "no link is made; write the target's name as it is"),
    ):  # fmt: skip
        if names:
            shown = ", ".join(f"[[{name}]]" for name in names[:5])
            more = f" and {len(names) - 5} more" if len(names) > 5 else ""
            out.append(f"body: {shown}{more} {'names' if len(names) == 1 else 'name'} {why}")
    return out


def _shared_turn(memory: Any, asked: dict[str, Any], where: str = "") -> list[str]:
    """A warning when the session_order a write gave is another live turn's too: the
    turns read before each (recall's context, the session's neighbours) go by that
    order. One given by the server is the session's next: never asked about."""
    if asked.get("session_order") is None:
        return []
    other = selectors.turn_sharing_place(memory)
    if other is None:
        return []
    return [
        f"{where}session_order: {memory.session_order} is also the place of {other} in "
        f"session {memory.session_id!r}; leave session_order out to be given the next one"
    ]


def _retired(made: Sequence[Any]) -> dict[str, list[str]]:
    """By id of each of `made` (memories just created in one project), a warning when an
    archived or superseded memory held the same text: the writer may be learning again
    what a person or an agent retired as wrong or out of date."""
    if not made:
        return {}
    found = selectors.retired_with_text(
        project_id=made[0].project_id, hashes={m.content_hash for m in made}
    )
    out: dict[str, list[str]] = {}
    for memory in made:
        old = found.get(memory.content_hash)
        if old is None or old.pk == memory.pk:
            continue
        when = old.invalid_at.date().isoformat() if old.invalid_at else "before"
        if old.superseded_by is not None:
            new = old.superseded_by
            said = (
                f"this text is what {old.name} ({old.pk}) said until {new.name} ({new.pk}) "
                f"replaced it on {when}; if {new.name} still holds, archive this memory"
            )
        else:
            said = (
                f"{old.name} ({old.pk}) held this text and was archived on {when}; if it was "
                "archived as wrong, archive this memory too"
            )
        out[memory.pk] = [said]
    return out


# What a write may ask for beside its text (the text is what makes it the same memory).
AS_ASKED = ("name", "kind", "tags", "importance", "session_id", "session_order",
            "occurred_at", "valid_from", "invalid_at")  # fmt: skip


def _not_as_asked(stored: Any, asked: dict[str, Any]) -> tuple[str, ...]:
    """What a write answered with an existing memory (the same text) did not use."""
    unused = [
        f"{field} {_shown(asked[field])}"
        for field in AS_ASKED
        if asked.get(field) is not None and not _same(asked[field], getattr(stored, field))
    ]
    if not unused:
        return ()
    listed = ", ".join(unused[:-1]) + (" and " if len(unused) > 1 else "") + unused[-1]
    plural = len(unused) > 1 or unused[0].startswith("tags ")  # "the tags [...] were"
    return (
        f"this exact text is already stored as {stored.name!r} ({stored.kind}), so nothing "
        f"was written and the {listed} asked for {'were' if plural else 'was'} not used: "
        "supersede it to change them, or write again with force=true to keep a second copy",
    )


def _same(asked: Any, stored: Any) -> bool:
    if isinstance(asked, list) and isinstance(stored, list):  # tags: a set of labels
        return sorted(asked) == sorted(stored)
    return bool(asked == stored)


def _shown(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else repr(value)


def memory_write_batch(who: Access, p: MemoryBatchIn, *, key: str | None = None) -> Answer:
    items = [_set(item) | {"kind": item.kind, "source": item.source} for item in p.memories]

    def write() -> Answer:
        outcomes = access.memory_write_batch(who, project=p.project, items=items, force=p.force)
        made = [
            {
                "id": o.memory.pk, "name": o.memory.name, "created": o.created,
                "dedup_hint": replies.hint_view(o.dedup_hint, kind=o.memory.kind),
            }
            for o in outcomes
        ]  # fmt: skip
        created = sum(1 for o in outcomes if o.created)
        retired = _retired([o.memory for o in outcomes if o.created])
        said = [
            warning
            for i, o in enumerate(outcomes)
            for warning in (
                [
                    *(f"memories.{i}: {w}" for w in _textless(o.memory)),
                    *withheld.warnings(items[i], f"memories.{i}."),
                    *(f"memories.{i}.{w}" for w in _unlinked(o.memory)),
                    *_shared_turn(o.memory, items[i], f"memories.{i}."),
                    *(f"memories.{i}: {w}" for w in retired.get(o.memory.pk, [])),
                ]
                if o.created
                else [f"memories.{i}: {w}" for w in _not_as_asked(o.memory, items[i])]
            )
        ]
        existing = len(made) - created
        if len(items) > access.BATCH_HINTS:
            said.append(
                f"no dedup hints: a batch of up to {access.BATCH_HINTS} memories gets one per "
                f"item (this one held {len(items)}); search before writing, or write fewer at once"
            )
        body = {"items": made, "created": created, "existing": existing, "warnings": said}
        return _json(body, 201 if created else 200)  # as one write: 200 when all were there

    request = {"call": "memory_write_batch", **p.dict(exclude={"idempotency_key"})}
    answer = _idempotent(who, key or p.idempotency_key, request, write)
    return _with_index_state(answer, [item["id"] for item in answer.body["items"]])


def memory_read(who: Access, p: MemoryRef) -> Answer:
    if p.as_of is not None or p.recorded_as_of is not None:  # a past state
        past = access.memory_read_as_of(
            who, memory_id=p.id, name=p.name, project=p.project, as_of=p.as_of,
            recorded_as_of=p.recorded_as_of,
        )  # fmt: skip
        return _within(replies.memory_view(past, at=p.as_of), p.budget)
    memory = access.memory_read(who, memory_id=p.id, name=p.name, project=p.project)
    return _within(replies.memory_view(memory), p.budget)


def _within(
    view: dict[str, Any],
    budget: int | None,
    *,
    what: str = "memory",
    reply: Callable[[dict[str, Any]], dict[str, Any]] = lambda view: view,
) -> Answer:
    """A memory (or a note, `what`) read whose whole reply, `reply(view)`, fits `budget`
    tokens: the longest head of its body that fits, cut as Recall cuts an item's text
    (`recall.packing.cut_to_fit`: at a line or sentence end first, an ellipsis after
    it, a code block it leaves open closed), with `truncated` and the whole body's
    `body_chars`. A 100 KB runbook read by name put 26,000 tokens in an agent's
    context; a cut inside a fenced command left the fence open and the command half."""
    whole = _json(reply(view))
    if budget is None or selectors.tokens(whole.text) <= budget:
        return whole
    body = view["body"]

    def cut(head: str) -> Answer:
        return _json(reply({**view, "body": head, "body_chars": len(body), "truncated": True}))

    needs = selectors.tokens(whole.text)
    least = min(needs, selectors.tokens(cut("").text))  # a short body: the whole is less
    if least > budget:  # not even its fields: a reply past the budget, or none
        raise services.StateConflict(  # well-formed, and in conflict with this memory
            {"budget": f"budget {budget} holds not even this {what}'s fields: ask with at "
                       f"least {least} (the whole {what} takes {needs})"}
        )  # fmt: skip
    head = cut_to_fit(body, lambda text: selectors.tokens(cut(text).text) <= budget, room=budget)
    return cut(head or "")


def memory_list(who: Access, p: MemoryListIn) -> Answer:
    filters = _set(p, drop=("project", "cursor", "detail", "budget"))
    page = access.memory_list(who, project=p.project, cursor=p.cursor, **filters)
    views = [replies.memory_view(m) for m in page.memories]
    if p.detail == "index":  # a page of 50 runbooks was 200 KB of bodies in context
        views = [replies.without_body(view) for view in views]
    body = {"memories": views, "next_cursor": page.next_cursor, "warnings": []}
    if p.budget is None:
        return _json(body)
    return _page_within(body, page.memories, p.budget, p.cursor, full=p.detail != "index")


def _page_within(
    body: dict[str, Any],
    memories: Sequence[Memory],
    budget: int,
    cursor: str | None,
    *,
    full: bool = True,
) -> Answer:
    """A listing's page cut to the longest first part whose whole reply fits `budget`
    tokens, its next_cursor going on after the last memory kept. When not even the
    first fits, no memory and a warning saying so, next_cursor where this page began
    (null would read as the end of the listing)."""
    views = body["memories"]

    def reply(n: int) -> Answer:
        after = body["next_cursor"] if n == len(views) else selectors.cursor_after(memories[n - 1])
        return _json({**body, "memories": views[:n], "next_cursor": after})

    def fits(n: int) -> bool:
        return selectors.tokens(reply(n).text) <= budget

    if fits(len(views)):
        return reply(len(views))
    low, high = 0, len(views) - 1  # fits(low) once low > 0; the reply grows with n
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    if low > 0:
        return reply(low)
    needs = selectors.tokens(reply(1).text)
    said = f"budget {budget} fits no memory of this page (the first takes {needs}); ask with more"
    terse = f"nothing listed: the first memory needs a budget of {needs}"  # as Recall's
    if full:  # its body is what is big: the listing pages on without bodies
        first = replies.without_body(views[0])
        short = selectors.tokens(_json({**body, "memories": [first]}).text)
        said += f", or with detail 'index' (the first takes {short} there)"
        terse += f" ({short} with detail 'index')"
    again = cursor or selectors.cursor_before(memories[0])
    for warning in (said, terse):  # the longer one unless it takes the reply past the budget
        empty = _json({**body, "memories": [], "next_cursor": again, "warnings": [warning]})
        if selectors.tokens(empty.text) <= budget:
            break
    return empty


# Fields an edit clears with an explicit null (every other null means "not sent"): an
# expiry, an event time and a place in a session, once set, could never be taken back.
CLEARABLE = ("expires_at", "occurred_at", "session_order")


def memory_update(who: Access, memory_id: str, p: MemoryChange) -> Answer:
    fields = _set(p, drop=("id", "detail"))
    fields |= {f: None for f in CLEARABLE if f in p.model_fields_set and getattr(p, f) is None}
    edited = access.memory_update(who, memory_id=memory_id, fields=fields)
    memory = edited.memory
    said = withheld.warnings(fields)  # as a supersede: the lines this edit sends
    if "body" in fields:
        said += _unlinked(memory)
    renamed = selectors.links_left_by_rename(memory) if "name" in fields else None
    said += [renamed] if renamed else []
    hint = replies.hint_view(edited.dedup_hint, kind=memory.kind, changed=True)
    body = {**replies.memory_view(memory), "dedup_hint": hint, "warnings": said}
    return _at_detail(_with_index_state(_json(body), [memory.pk]), p.detail)


def memory_supersede(
    who: Access, memory_id: str, p: MemoryChange, *, key: str | None = None
) -> Answer:
    fields = _set(p, drop=("id", "idempotency_key", "detail"))

    def write() -> Answer:
        written = access.memory_supersede(who, memory_id=memory_id, fields=fields)
        said = withheld.warnings(fields)  # what it changes: a carried text was warned before
        if "body" in fields:
            said += _unlinked(written.memory)
        kept = written.memory.description
        if "body" in fields and "description" not in fields and kept.strip():
            # A new body under the old one-line summary read "within 45 days" then "60".
            said.append(
                f"description kept from the version this replaces: {kept[:150]!r}; "
                "send `description` too if it no longer holds"
            )
        body = replies.written_view(
            written.memory, created=True, hint=written.dedup_hint, warnings=said, changed=True
        )
        return _json(body, 201)

    request = {"call": "memory_supersede", "id": memory_id, **fields}
    answer = _idempotent(who, key or getattr(p, "idempotency_key", None), request, write)
    return _at_detail(_with_index_state(answer, [answer.body["memory"]["id"]]), p.detail)


def memory_archive(who: Access, memory_id: str) -> Answer:
    """The archived memory, its body left out (as a write's reply: memory_read gives it)."""
    archived = access.memory_archive(who, memory_id=memory_id)
    return _json(replies.without_body(replies.memory_view(archived)))


def memory_restore(who: Access, memory_id: str) -> Answer:
    """The restored memory, its body left out (as a write's reply: memory_read gives it)."""
    restored = access.memory_restore(who, memory_id=memory_id)
    return _json(replies.without_body(replies.memory_view(restored)))


def memory_delete(who: Access, memory_id: str) -> Answer:
    gone = access.memory_delete(who, memory_id=memory_id)
    return _json({"id": gone, "deleted": True})


def memory_associate(who: Access, memory_id: str, p: AssociationFields) -> Answer:
    edge, created = access.memory_associate(
        who, memory_id=memory_id, target=p.target, rel=p.rel, weight=p.weight
    )
    return _json(replies.association_view(edge, created=created), 201 if created else 200)


def memory_dissociate(who: Access, memory_id: str, p: DissociationFields) -> Answer:
    src, dst, removed = access.memory_dissociate(
        who, memory_id=memory_id, target=p.target, rel=p.rel
    )
    return _json({"src": src, "dst": dst, "removed": removed})


def memory_favorite(who: Access, memory_id: str, p: FavoriteIn | None) -> Answer:
    value = p.favorite if p is not None else None
    memory = access.memory_favorite(who, memory_id=memory_id, value=value)
    return _json({"id": memory.pk, "favorite": memory.favorite})


# --- notes and projects -----------------------------------------------------------


def note_list(who: Access, p: NoteListIn) -> Answer:
    """The newest notes, at "index" (the default) without their bodies, as a memory
    listing: 20 notes of long write-ups put 100,000 tokens in an agent's context."""
    notes = access.note_list(who, project=p.project, limit=p.limit)
    views = [replies.note_view(n) for n in notes]
    if p.detail == "index":
        views = [replies.without_body(view) for view in views]
    return _json({"notes": views})


def note_write(who: Access, p: NoteIn, *, key: str | None = None) -> Answer:
    """A new note; a retry with the same key gets the first answer (as a memory's), and
    the same title and body again the note holding them (200, `existing`). The
    reply leaves out the body the writer sent unless `detail` is "full" (`_at_detail`):
    a 100 KB write-up came straight back into the agent's context."""
    fields = _note_fields(_set(p, drop=("project", "idempotency_key", "detail")))

    def write() -> Answer:
        written = access.note_write(who, project=p.project, fields=fields)
        view = replies.note_written_view(
            written.note, hint=written.dedup_hint, existing=not written.created
        )
        return _json(view, 201 if written.created else 200)  # as a memory's: 200 when there

    request = {"call": "note_write", **p.dict(exclude={"idempotency_key", "detail"})}
    return _at_detail(_idempotent(who, key or p.idempotency_key, request, write), p.detail)


def _note_fields(fields: dict[str, Any]) -> dict[str, Any]:
    """A note's fields as the services name them: its `name` is the model's slug."""
    if "name" in fields:
        fields["slug"] = fields.pop("name")
    return fields


def note_read(
    who: Access,
    note_id: str,
    *,
    budget: int | None = None,
    reply: Callable[[dict[str, Any]], dict[str, Any]] = lambda view: view,
) -> Answer:
    """One note whole; with `budget`, its body cut so the whole reply (`reply(view)`:
    MCP's notes_read lists it) fits, as a memory read's: a note of 200,000 characters
    was 50,000 tokens in the agent's context, with no way to ask for less."""
    view = replies.note_view(access.note_read(who, note_id=note_id))
    return _within(view, budget, what="note", reply=reply)


def note_update(who: Access, note_id: str, p: NoteChange) -> Answer:
    fields = _note_fields(_set(p, drop=("detail",)))
    edited = access.note_update(who, note_id=note_id, fields=fields)
    body = replies.note_written_view(edited.note, hint=edited.dedup_hint, changed=True)
    return _at_detail(_json(body), p.detail)


def note_favorite(who: Access, note_id: str, p: FavoriteIn | None) -> Answer:
    value = p.favorite if p is not None else None
    note = access.note_favorite(who, note_id=note_id, value=value)
    return _json({"id": note.pk, "favorite": note.favorite})


def project_list(who: Access) -> Answer:
    return _json({"projects": [replies.project_view(p) for p in access.project_list(who)]})


def project_create(who: Access, p: ProjectIn) -> Answer:
    project = access.project_create(who, **p.dict())
    return _json(replies.project_view(project), 201)
