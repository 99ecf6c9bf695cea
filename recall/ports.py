"""The engine's ports: what it needs from the outside world, as Protocols.

Each adapter lives in one module (`recall.indexes.*`, `recall.embedders.*`,
`console.store`) and is chosen by dotted path plus OPTIONS in
`settings.RECALL["BACKENDS"]`. Every adapter runs the same contract suite in
`tests/contracts/`. A `Channel` is the engine's own extension point: one
module per channel (`recall.channels.*`), registered in the composition root.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from recall.types import (
    Candidate,
    ChannelQuery,
    Doc,
    Filter,
    Link,
    Named,
    Neighbour,
    Record,
    VectorRow,
)

Vectors = npt.NDArray[np.float32]
Vector = npt.NDArray[np.float32]  # one row of Vectors

# Channel roles (see Channel).
RANK = "rank"
PIN = "pin"
EXPAND = "expand"
ROLES = (RANK, PIN, EXPAND)


@runtime_checkable
class TextIndex(Protocol):
    """Full-text search over memories and notes.

    `search` returns at most `limit` candidates, best first (BM25), ranks
    1-based and contiguous, no duplicate ids, ties broken by id ascending.
    Scope and validity (`where`) apply inside the query, before the limit.
    User text is never parsed as engine syntax: it is split into words
    (`recall.query.words`), each word quoted and the words OR-ed, so an
    operator such as `NOT` or a dash is plain text. An unusable query (no
    words) returns no candidates, not an error. With `prefix=True` the last
    word also matches as a prefix (the palette's word being typed). With
    `snippets=True` each candidate carries the best fragment with matched
    terms wrapped in \\x01 ... \\x02; `snippets` gives the same fragment for
    the listed ids alone (a page's hits, once a deeper ranking read without them).

    `upsert` replaces documents by id (one row per id, whoever writes);
    `delete` ignores unknown ids. Writes are durable when the call returns.
    `fingerprints` lists one (id, `Doc.fingerprint`) pair per stored row,
    so a duplicate row shows as a repeated id. Raises
    IndexUnavailable when the backing store cannot be read or written.
    """

    def upsert(self, docs: Sequence[Doc]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def search(
        self,
        text: str,
        *,
        where: Filter,
        limit: int,
        snippets: bool = False,
        prefix: bool = False,
    ) -> list[Candidate]: ...

    def snippets(
        self, text: str, ids: Sequence[str], *, where: Filter, prefix: bool = False
    ) -> dict[str, str]: ...

    def ids(self) -> set[str]: ...

    def fingerprints(self) -> list[tuple[str, str]]: ...

    def count(self) -> int: ...

    def clear(self) -> None: ...


@runtime_checkable
class BulkWrites(Protocol):
    """A plane that can hold one writer for many writes (a rebuild) and commit them
    once, when the block ends; nothing of them if it raises."""

    def bulk(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class ReadsOnce(Protocol):
    """A store that can keep the rows it reads for one request (`reading`): within the
    block a row hydrated or read by a channel is not read again; outside it, every read
    goes to the database. Rows are never kept past the block."""

    def reading(self) -> AbstractContextManager[None]: ...


@runtime_checkable
class KeepsWriter(Protocol):
    """A plane whose writer one thread can keep between writes (the index worker):
    each write still commits, but the writer is taken once; `let_go` gives it back
    (another process may be waiting for it) and the next write takes it again."""

    def kept(self) -> AbstractContextManager[None]: ...

    def let_go(self) -> None: ...


@runtime_checkable
class KeepsTextHashes(Protocol):
    """A vector plane that can hand back its vectors by the hash of the text each
    embeds (`VectorRow.text_hash`, which names the model too): a rebuild copies
    them instead of embedding every text again."""

    def hashed_vectors(self) -> dict[str, Vectors]: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Nearest-neighbour search over unit vectors (cosine similarity).

    `search` returns at most `limit` candidates, best first, `score` the
    cosine similarity in [-1, 1], ranks 1-based and contiguous, ties broken by
    id ascending. Scope and validity apply as a prefilter, before the limit.
    `upsert` replaces rows by id, one row per id even when several processes
    write at once; `delete` ignores unknown ids. `fingerprints` lists one
    (id, `VectorRow.fingerprint`) pair per stored row. `vectors` returns the
    stored vector of each given id it holds (unknown ids are left out). Raises
    IndexUnavailable when the backing store cannot be read or written.
    """

    def upsert(self, rows: Sequence[VectorRow]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def search(
        self, vector: Sequence[float] | Vectors, *, where: Filter, limit: int
    ) -> list[Candidate]: ...

    def vectors(self, ids: Sequence[str]) -> dict[str, Vector]: ...

    def ids(self) -> set[str]: ...

    def fingerprints(self) -> list[tuple[str, str]]: ...

    def count(self) -> int: ...

    def clear(self) -> None: ...

    def stored_model(self) -> str | None:
        """The embedding model of the stored rows (None when empty)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of `dims` float32 values.

    `embed` returns an array of shape (len(texts), dims), row i for text i;
    an empty input gives shape (0, dims). Raises EmbedderUnavailable when the
    model cannot run, ConfigError when it is misconfigured locally.
    """

    @property
    def model(self) -> str: ...

    @property
    def dims(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens a text costs in an agent's context (>= 0)."""

    def count(self, text: str) -> int: ...


@runtime_checkable
class MemoryStore(Protocol):
    """Reads from the source of truth (the relational plane).

    `hydrate` returns records for the ids that still exist, keyed by id;
    ids that no longer hydrate are simply absent. `browse` lists items in
    scope newest first (updated desc, then id), only starred ones with
    `favorites_only`; `count` counts the items in scope. `links` returns, for
    each given memory id that has outgoing edges, its edges in the order its
    body names them (`[[name]]` links resolved when the body was written, by
    `recall.links.prefer`); a target may have become inactive since (callers
    guard); `edges` is what the graph walk reads (`recall.graph`).
    `identifiers` returns the exact id, exact name/slug and id-prefix
    (>= 8 characters) matches in scope, best first. `usage` returns each id's
    decayed usage utility in [0, 1). `isolation` returns a project's
    isolation (`open` when unknown). A memory whose `expires_at` has come (by
    the store's clock: `recall.decay.expired`) is gone at once: `hydrate`
    leaves it out and `browse`, `count`, `identifiers` and
    `session_neighbours` never return or count it, before any limit.
    """

    def hydrate(self, ids: Iterable[str], *, expired: bool = False) -> dict[str, Record]:
        """Records by id; an expired memory only with `expired` (the cold tier's
        `include_history`: expired but not yet purged)."""
        ...

    def browse(self, *, where: Filter, limit: int, favorites_only: bool = False) -> list[Record]:
        """The newest records `where` admits (ties by id, descending)."""
        ...

    def names(self, *, where: Filter, limit: int, since: datetime | None = None) -> list[Named]:
        """(id, name, description, updated) of the first `limit` memories in
        `browse`'s order, and nothing else of them: PromptRecall's corpus (5,000
        rows at 100,000 memories: 40 ms, against 155 as whole records). A memory
        written without a description has its body's lead there instead
        (`recall.results.lead`, read from the body's first `LEAD_CHARS`). With
        `since`, only those updated at or after it (a corpus's refresh)."""
        ...

    def count(self, *, where: Filter) -> int: ...

    def expired_ids(self) -> frozenset[str]:
        """The memories whose expiry has come but which are not purged yet: the
        planes still hold them until the purge, so Recall drops them from the
        channels' lists before deciding that nothing answers."""
        ...

    def links(self, ids: Sequence[str]) -> dict[str, tuple[Link, ...]]: ...

    def edges(
        self, ids: Sequence[str], *, where: Filter, reverse: bool = False, min_weight: float = 0.0
    ) -> dict[str, tuple[Link, ...]]:
        """Each given memory's edges of every type whose other end is a memory
        `where` admits, with weight >= `min_weight`: outgoing ones, and with
        `reverse` also incoming ones (`Link.reverse`, `target` = their source).
        One read for all `ids` (the graph walk asks once per hop). Per memory:
        outgoing before incoming, each by (position, target id); an id with
        no such edge is absent."""
        ...

    def session_neighbours(
        self,
        ids: Sequence[str],
        *,
        where: Filter,
        minutes: float,
        turns: int,
        cap: int,
        kinds: Collection[str] | None = None,
    ) -> dict[str, tuple[Neighbour, ...]]:
        """Each given memory's session neighbours (`recall.neighbourhood.near`,
        the one rule): same non-empty session, within `minutes` by occurred_at
        and `turns` by session order where both ends have them, in scope and
        live per `where`, nearest first, at most `cap` per seed; only seeds of
        `kinds` (None: any) are read. A seed with none is absent."""
        ...

    def earlier_turns(
        self, ids: Sequence[str], *, where: Filter, turns: int
    ) -> dict[str, tuple[str, ...]]:
        """Each given memory's turns at distance 1..`turns` before it in its session
        (same non-empty session, by session order), in scope and live per `where`,
        nearest first (`recall.context.turns_before`, the rule); none: absent. One
        read however many ids (the semantic channel asks for its whole pool)."""
        ...

    def passages(self, ids: Sequence[str]) -> dict[str, Vectors]:
        """Each given memory's sentence vectors (`recall.passages`), one unit-length
        row per sentence, as the index last stored them; a memory without any is
        absent. One read however many ids (the semantic channel asks for its pool).
        Kept in the store, beside the rows, rather than in a vector plane: one
        implementation serves every profile and a plane's rebuild keeps them."""
        ...

    def identifiers(self, text: str, *, where: Filter, limit: int) -> list[Record]: ...

    def usage(self, ids: Sequence[str]) -> dict[str, float]: ...

    def isolation(self, project: str) -> str: ...

    def as_of(
        self, *, where: Filter, valid_at: datetime | None = None,
        recorded_at: datetime | None = None,
    ) -> list[Record]:  # fmt: skip
        """The memories in scope as known at `recorded_at` (None: as stored now): each
        memory's latest revision recorded at or before it, none whose latest is a
        delete (`recall.timetravel`). Each record's `active` says whether it is valid
        at `valid_at` (`timetravel.valid_at`: valid_from <= valid_at < invalid_at;
        None: invalid_at unset in that state); only records `where` admits (its
        `active_only` included) are returned, by id. Memories only (notes keep no
        history); `favorite` is False in a past state (a star is not a revision)."""
        ...


@runtime_checkable
class Channel(Protocol):
    """One source of ranked candidates for the retrieval pipelines.

    `name` keys the channel's weight in a config's `channel_weights` (weight
    0 or absent: the channel does not run), its provenance on hits and its
    warnings. `role` says how its list joins the others:
    - "rank": fused with the other rank channels by weight (full text, vectors);
    - "pin": exact matches placed above every fused hit (Search's identifiers);
    - "expand": read from `seeds` (the best fused memories of the rank
      channels, best first, with their scores), then fused with them by
      weight (the graph: `recall.expansion`).
    `needs_vector`: the pipeline embeds the query once and hands it over in
    `query.vector`; when that fails the channel is skipped with a warning. A
    channel that needs no vector may run while the query is being embedded
    (its `query.vector` is then None; recall/gather.py).

    `candidates` returns at most `depth` candidates, best first, ranks
    1-based and contiguous, no duplicate ids, with scope and validity
    (`where`) applied inside its query, before the depth limit. It raises
    ChannelOff when it is not configured (skipped silently), a RecallError
    when its plane fails (skipped with a warning naming it), and ConfigError
    for a local misconfiguration (propagates).
    """

    @property
    def name(self) -> str: ...

    @property
    def role(self) -> str: ...

    @property
    def needs_vector(self) -> bool: ...

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]: ...
