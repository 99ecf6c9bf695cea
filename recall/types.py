"""Plain values that cross the boundary between the engine and its callers.

Every value is a frozen, slotted dataclass: no model instances, querysets or
requests ever reach the engine. Orderings that use these values always have a
deterministic tie-break (by id).
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

MEMORY = "memory"
NOTE = "note"
ITEM_KINDS = (MEMORY, NOTE)

MEMORY_KINDS = (
    "constraint",
    "convention",
    "runbook",
    "protocol",
    "gotcha",
    "decision",
    "refuted",
    "reference",
    "stage",
    "fact",
    "episode",
    "preference",
    "working",
)

ISOLATION_OPEN = "open"
ISOLATION_CONFIDENTIAL = "confidential"
ISOLATION_SEALED = "sealed"
ISOLATIONS = (ISOLATION_OPEN, ISOLATION_CONFIDENTIAL, ISOLATION_SEALED)


def facets_part(
    tags: tuple[str, ...], agent_id: str, session_id: str, importance: float,
    created: datetime | None,
) -> str:  # fmt: skip
    """Recall's filtered attributes as one string (a fingerprint part)."""
    stamp = created.isoformat() if created else ""
    return "\x1d".join(("\x1e".join(tags), agent_id, session_id, repr(float(importance)), stamp))


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def embeddable(text: str) -> str:
    """`text` as every embedding reads it, stored or asked: Unicode NFKC, so a
    compatibility form reads as the character it stands for ("Ｄｅｐｌｏｙ" is
    "Deploy", "ﬁ" is "fi", "①" is "1"). The model's tokenizer does not fold them:
    a full-width query sat at cosine 0.02 from its own text in ASCII. The full-text
    side folds them as well (`recall.query.fold`, tantivy's ASCII folding).
    ASCII text is returned as it is."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def micros(instant: datetime) -> int:
    """An aware instant as whole microseconds since the Unix epoch (exact, unlike a
    float): how the planes store and compare creation times."""
    if instant.tzinfo is None:  # a naive instant is read as UTC
        instant = instant.replace(tzinfo=UTC)
    delta = instant - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def fingerprint(*parts: object) -> str:
    """A short, stable digest of the parts (16 hex characters of sha256)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(str(part).encode("utf-8", errors="surrogatepass"))
        digest.update(b"\x1f")
    return digest.hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Doc:
    """One memory or note as the derived planes index it.

    `project` is the project slug, or None for a global memory / inbox note.
    `context` is optional surrounding text, nearest first (for an episodic
    memory, the turns at distance 1 and 2 before it in its session), that
    the full-text plane indexes with lower weights; it is never shown.
    """

    id: str
    item: str
    project: str | None
    active: bool
    kind: str
    name: str
    title: str
    description: str
    body: str
    tags: tuple[str, ...] = ()
    updated: datetime | None = None
    context: tuple[str, ...] = ()
    # What Recall's filters read (`Filter.admits`); a note has no agent,
    # session or importance of its own (those filters admit memories only).
    agent_id: str = ""
    session_id: str = ""
    importance: float = 0.5
    created: datetime | None = None

    def facets(self) -> str:
        """The filtered attributes as one fingerprint part (see `fingerprint`)."""
        return facets_part(self.tags, self.agent_id, self.session_id, self.importance,
                           self.created)  # fmt: skip

    def fingerprint(self) -> str:
        """A digest of the item's own fields as the text plane indexes them: a
        row whose stored fingerprint differs from its database row's has
        drifted. `context` is left out: it is borrowed from earlier turns and
        deliberately not refreshed when they change."""
        return fingerprint(
            self.item, self.project, self.active, self.kind, self.name, self.title,
            self.description, self.body, "\x1e".join(self.tags),
            self.updated.isoformat() if self.updated else "", self.facets(),
        )  # fmt: skip

    def vector_fingerprint(self, model: str) -> str:
        """A digest of what the vector plane stores for this doc under `model`."""
        return fingerprint(
            self.item, self.project, self.active, self.kind, model, self.embedding_text(),
            self.updated.isoformat() if self.updated else "", self.facets(),
        )  # fmt: skip

    def embedding_hash(self, model: str) -> str:
        """What the vector depends on: the embedded text and the model (a reindex
        copies a stored vector whose hash matches instead of embedding again)."""
        return fingerprint(model, self.embedding_text())

    def embedding_text(self) -> str:
        """The text the semantic plane embeds: title, description, body head, `embeddable`
        (its hash, and so the vector's fingerprint, follows: a vector stored before a
        text was normalised reads as stale, and `repair` or `reindex` embeds it again)."""
        head = self.body[:1000]
        parts = [self.title or self.name, unless_repeated(self.description, head), head]
        return embeddable("\n".join(p for p in parts if p))


# The projects a search may see and whether the global items are among them
# (None: every project), `Filter.visible`.
Visible = tuple[tuple[str, ...], bool] | None


@dataclass(frozen=True, slots=True)
class Filter:
    """Scope, validity and Recall's filters, applied INSIDE a plane's query, before its limit.

    projects: None means every project; otherwise the allowed project slugs.
    include_global: whether items with no project (global) are in scope.
    active_only: drop invalidated (superseded or archived) memories.
    items: restrict to "memory" and/or "note"; None means both.
    kinds: restrict memories to these kinds; None means any kind.
    tags: every one of these tags (all-of); any_tags: at least one of these
    (any-of); empty means no restriction. Tags match exactly.
    agent_id / session_id: only memories written by that agent / in that
    session (None: any). min_importance: only memories at least that
    important (None: any). These three admit memories only: a note has no
    agent, session or importance.
    since / until: created at or after / at or before that instant (None:
    unbounded); an item with no creation time is outside any bound.
    """

    projects: tuple[str, ...] | None = None
    include_global: bool = True
    active_only: bool = True
    items: tuple[str, ...] | None = None
    kinds: tuple[str, ...] | None = None
    tags: tuple[str, ...] = ()
    any_tags: tuple[str, ...] = ()
    agent_id: str | None = None
    session_id: str | None = None
    min_importance: float | None = None
    since: datetime | None = None
    until: datetime | None = None

    @property
    def memories_only(self) -> bool:
        """Whether a memory-only attribute (agent, session, importance) is filtered."""
        return (
            self.agent_id is not None
            or self.session_id is not None
            or self.min_importance is not None
        )

    @property
    def visible(self) -> Visible:
        """The projects whose text the search may read, and whether global items are
        among them; None when every project is (the whole index). The full-text
        planes count BM25's collection statistics (rows, mean length, each word's
        document frequency) over this alone, so no score depends on, or tells a
        caller about, text in a project it cannot see."""
        if self.projects is None:
            return None
        return (tuple(sorted(set(self.projects))), self.include_global)

    @property
    def narrowed(self) -> bool:
        """Whether any of Recall's attribute filters (tags ... until) is set."""
        return bool(
            self.tags or self.any_tags or self.memories_only
            or self.since is not None or self.until is not None
        )  # fmt: skip

    def admits(
        self,
        *,
        project: str | None,
        active: bool,
        item: str,
        kind: str,
        tags: tuple[str, ...] = (),
        agent_id: str = "",
        session_id: str = "",
        importance: float = 0.5,
        created: datetime | None = None,
    ) -> bool:
        """The reference predicate every plane's filter must agree with."""
        if self.active_only and not active:
            return False
        if self.items is not None and item not in self.items:
            return False
        if self.kinds is not None and kind not in self.kinds:
            return False
        if self.narrowed and not self._attributes(item, tags, agent_id, session_id,
                                                  importance, created):  # fmt: skip
            return False
        if project is None:
            return self.include_global
        return self.projects is None or project in self.projects

    def admits_facets(self, item: str, facets: Facets) -> bool:
        """The attribute filters alone (tags ... until) on one row's facets."""
        return self._attributes(item, facets.tags, facets.agent_id, facets.session_id,
                                facets.importance, facets.created)  # fmt: skip

    def _attributes(
        self, item: str, tags: tuple[str, ...], agent_id: str, session_id: str,
        importance: float, created: datetime | None,
    ) -> bool:  # fmt: skip
        if self.memories_only and item != MEMORY:
            return False
        if self.agent_id is not None and agent_id != self.agent_id:
            return False
        if self.session_id is not None and session_id != self.session_id:
            return False
        if self.min_importance is not None and not importance >= self.min_importance:
            return False
        if any(t not in tags for t in self.tags):
            return False
        if self.any_tags and not any(t in tags for t in self.any_tags):
            return False
        if self.since is not None and (created is None or created < self.since):
            return False
        return self.until is None or (created is not None and created <= self.until)

    def admits_record(self, record: Record | Doc | VectorRow) -> bool:
        """`admits` on a hydrated record, an indexed doc or a vector row."""
        return self.admits(
            project=record.project, active=record.active, item=record.item, kind=record.kind,
            tags=record.tags, agent_id=record.agent_id, session_id=record.session_id,
            importance=record.importance, created=record.created,
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Candidate:
    """One ranked result of one channel.

    rank is 1-based and contiguous within a channel's list; score is the
    channel's raw score (BM25 for full text, cosine similarity for vectors).
    snippet, when asked for, is raw text with matched terms wrapped in
    \\x01 ... \\x02 sentinels.
    """

    id: str
    rank: int
    score: float
    snippet: str | None = None
    path: tuple[str, ...] = ()  # graph candidates: seed ... this id
    # session candidates: steps from the seed (turns, or 1 inside the time window)
    distance: int | None = None


@dataclass(frozen=True, slots=True)
class Walk:
    """How the graph channel walks from its seeds (`recall.graph.traverse`).

    hops 0..3 (0: no walk), `reverse` also follows incoming edges,
    `min_weight` skips lighter edges, `cap` bounds what it returns, `decay`
    multiplies a path's score once per hop after the first.
    """

    hops: int = 1
    reverse: bool = False
    min_weight: float = 0.0
    cap: int = 10
    decay: float = 0.5
    seeds: int | None = None  # expand from only the first `seeds` seeds (None: all)


# --- session neighbourhood (Dakera 004; recall/channels/session.py) ---
# The kinds that are turns of a conversation. Only they are read with their session:
# the neighbour text in the full-text index, the turn window of the meaning channel,
# the session prior and the session channel. A gotcha or a runbook an agent wrote
# with its session id is matched on its own text: it borrowed the words of whatever
# the agent wrote before it, and a runbook outranked the convention a query named.
EPISODIC_KINDS = ("episode", "working")


def conversation(record: Record) -> str:
    """The session `record` is a turn of ("" for a memory of another kind or none)."""
    return record.session_id if record.kind in EPISODIC_KINDS else ""


def asks(record: Record) -> bool:
    """Whether `record` is a conversation turn that ends by asking (its text's last
    character a question mark): the turn after it holds the answer
    (`recall.fusion.asking_turns`)."""
    if not conversation(record):
        return False
    text = (record.body or record.description).rstrip()
    return text.endswith("?")


@dataclass(frozen=True, slots=True)
class Nearby:
    """How the session channel reads its seeds' neighbourhoods.

    The first `seeds` seeds of an episodic kind (`kinds`) each bring at most
    `cap` memories of their own session within `minutes` (by `occurred_at`)
    and `turns` (by session order) of them, each measure applied where both
    ends have it; a neighbour scores seed score x `decay` per step away.
    """

    seeds: int = 8
    minutes: float = 5.0
    turns: int = 2
    cap: int = 10
    decay: float = 0.5
    kinds: tuple[str, ...] | None = EPISODIC_KINDS


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A memory of a seed's session near it: `turns` apart in session order and
    `minutes` apart by `occurred_at` (None where either end lacks the field)."""

    id: str
    turns: int | None = None
    minutes: float | None = None

    @property
    def steps(self) -> int:
        """Steps from the seed: its turn distance, or 1 when only time places it."""
        return max(1, self.turns) if self.turns is not None else 1


# --- end session neighbourhood ---


# Edge types the engine writes itself; explicit associations carry any other.
LINKS = "links"  # a `[[name]]` in a body (weight 1)
SUPERSEDES = "supersedes"  # replacement -> the memory it replaced
RELATED = "related"  # an explicit association's default type


@dataclass(frozen=True, slots=True)
class Link:
    """One edge of a memory: the other end's id, weight (0..1) and type.

    `reverse` is True for an incoming edge read backwards (`target` is then
    the edge's source), as `MemoryStore.edges(..., reverse=True)` returns them.
    """

    target: str
    weight: float = 1.0
    rel: str = LINKS
    reverse: bool = False


class Named(NamedTuple):
    """A memory as PromptRecall's corpus reads it (`MemoryStore.names`): `description`
    is its description, else its body's lead."""

    id: str
    name: str
    description: str
    updated: datetime | None


@dataclass(frozen=True, slots=True)
class VectorRow:
    """One row of the vector plane."""

    id: str
    item: str
    project: str | None
    active: bool
    kind: str
    vector: tuple[float, ...]
    model: str
    updated: datetime | None = None
    fingerprint: str = ""  # Doc.vector_fingerprint(model)
    text_hash: str = ""  # Doc.embedding_hash(model): equal hashes, equal vectors
    # What Recall's filters read (as on `Doc`).
    tags: tuple[str, ...] = ()
    agent_id: str = ""
    session_id: str = ""
    importance: float = 0.5
    created: datetime | None = None


@dataclass(frozen=True, slots=True)
class VectorBlock:
    """Rows of the vector plane as columns (row i of each list is row i of `vectors`)."""

    ids: list[str]
    items: list[str]
    projects: list[str | None]
    active: list[bool]
    kinds: list[str]
    fingerprints: list[str]
    vectors: npt.NDArray[np.float32]  # shape (len(ids), dims)
    high_water: int = 0  # the highest write sequence number among the rows (0: none)
    text_hashes: list[str] | None = None  # VectorRow.text_hash per row, where stored
    facets: list[Facets] | None = None  # what Recall's filters read, per row (None: defaults)


@dataclass(frozen=True, slots=True)
class Facets:
    """One vector row's attributes that Recall's filters read (`Filter.admits`)."""

    tags: tuple[str, ...] = ()
    agent_id: str = ""
    session_id: str = ""
    importance: float = 0.5
    created: datetime | None = None

    @classmethod
    def of(cls, row: VectorRow | Doc) -> Facets:
        return cls(row.tags, row.agent_id, row.session_id, row.importance, row.created)


@dataclass(frozen=True, slots=True)
class Record:
    """A memory or note hydrated from the source of truth."""

    id: str
    item: str
    project: str | None
    kind: str
    name: str
    title: str
    description: str
    body: str = ""
    tags: tuple[str, ...] = ()
    importance: float = 0.5
    favorite: bool = False
    active: bool = True
    created: datetime | None = None
    updated: datetime | None = None
    superseded_by: str | None = None
    session_id: str = ""
    source: str = ""
    valid_from: datetime | None = None  # when it became true (memories)
    occurred_at: datetime | None = None  # when the event it records happened, if known
    session_order: int | None = None  # its place in its session (an episodic turn)
    agent_id: str = ""  # the agent that wrote it (memories)
    invalid_at: datetime | None = None  # when it stopped being true (memories; None: open)
    # --- importance, worth, decay, expiry (recall/worth.py, recall/decay.py) ---
    expires_at: datetime | None = None  # from then on it is gone (None: never)
    access_count: int = 0  # reads by agents (decay: never-accessed fades faster)
    last_accessed_at: datetime | None = None  # the last read (decay restarts there)
    helpful: int = 0  # Memory Worth feedback: packs it helped in
    harmful: int = 0  # ... and packs it misled in
    # --- end importance, worth, decay, expiry ---


def unless_repeated(description: str, body: str) -> str:
    """ "" when the body already starts with the description.

    An imported long text keeps its head as the description and the whole
    text as the body: indexing both would count the head twice.
    """
    lead = description.rstrip("…").strip()
    return "" if lead and body.startswith(lead) else description


def to_doc(record: Record, *, context: tuple[str, ...] = ()) -> Doc:
    """What the derived planes index for a hydrated record (the one mapping).

    A memory's title is its name: indexing it twice would double its weight,
    so a memory's doc has no title. `context` is the index-only session text.
    """
    return Doc(
        id=record.id,
        item=record.item,
        project=record.project,
        active=record.active,
        kind=record.kind,
        name=record.name,
        title="" if record.item == MEMORY else record.title,
        description=unless_repeated(record.description, record.body),
        body=record.body,
        tags=record.tags,
        updated=record.updated,
        context=context,
        agent_id=record.agent_id,
        session_id=record.session_id,
        importance=record.importance,
        created=record.created,
    )


@dataclass(frozen=True, slots=True)
class Context:
    """How the semantic channel reads its top `pool` candidates (`recall.context`):
    a long memory by its best sentence (`passages`, the mix, `recall.passages`), then
    a conversation turn with the turns before it, (1 - mix) x the score so far + mix
    x the cosine of the window of it and its `turns` earlier turns."""

    mix: float = 0.5
    turns: int = 2
    pool: int = 50
    passages: float = 0.0


@dataclass(frozen=True, slots=True, eq=False)
class ChannelQuery:
    """What every channel is asked: the cleaned text and how to read it.

    `prefix`: the last word may match as a prefix (the palette's word being
    typed). `snippets`: full-text hits carry a sentinel-marked fragment.
    `vector`: the query's embedding, set by the pipeline before any channel
    that `needs_vector` runs (None when no channel needs it). `walk`: how
    the graph channel expands its seeds.
    """

    text: str
    prefix: bool = False
    snippets: bool = False
    vector: npt.NDArray[np.float32] | None = None
    walk: Walk | None = None  # the graph channel's walk (None: its defaults)
    nearby: Nearby | None = None  # the session channel's reach (None: it does not run)
    context: Context | None = None  # the semantic channel's turns in context (None: off)


# --- altitude digests (recall/digest.py builds them, recall/altitude.py packs them) ---


@dataclass(frozen=True, slots=True)
class Sentence:
    """One digest sentence: its text, the memory it came from ("" when a person wrote
    it) and the memories it covers (the source first, then by id)."""

    text: str
    source: str = ""
    covers: tuple[str, ...] = ()
    score: float = 0.0


@dataclass(frozen=True, slots=True)
class Digest:
    """A project's digest (`project` None: the global memories'), best sentence first.

    `edited`: a person changed it (an automatic rebuild keeps it); `stale`:
    rows changed since it was built.
    """

    project: str | None
    sentences: tuple[Sentence, ...]
    built_at: datetime | None = None
    edited: bool = False
    stale: bool = False
    covered: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        covered = frozenset(i for s in self.sentences for i in s.covers)
        object.__setattr__(self, "covered", covered)

    @property
    def text(self) -> str:
        return "\n".join(s.text for s in self.sentences)
