"""In-memory reference adapters for the engine's ports.

They define the behaviour every real adapter must match (the contract suites
in `tests/contracts/` run against both) and let the engine's unit tests run
without Django, disks or models. Not for production: everything is a scan.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from recall import links, timetravel
from recall.context import turns_before
from recall.decay import expired as is_expired
from recall.errors import EmbedderUnavailable
from recall.neighbourhood import near
from recall.planes import Clock, utc_now
from recall.ports import Vectors
from recall.query import WORD, fold, words
from recall.results import lead
from recall.types import (
    MEMORY,
    RELATED,
    SUPERSEDES,
    Candidate,
    Doc,
    Filter,
    Link,
    Named,
    Neighbour,
    Record,
    VectorRow,
    conversation,
)

_SUFFIXES = ("ingly", "edly", "ing", "ies", "ied", "ed", "es", "s", "ly")
_TOKEN = re.compile(WORD)  # as the real planes split words (a kana or ideograph alone)


def stem(word: str) -> str:
    """A deliberately tiny suffix stripper (the real planes use Snowball)."""
    word = word.lower()
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def _tokens(text: str) -> list[str]:
    return [fold(t.lower()) for t in _TOKEN.findall(text)]


def _ranked(scored: Iterable[tuple[str, float, str | None]], limit: int) -> list[Candidate]:
    ordered = sorted(scored, key=lambda t: (-t[1], t[0]))[:limit]
    return [Candidate(id=i, rank=n, score=s, snippet=sn) for n, (i, s, sn) in enumerate(ordered, 1)]


def _admits(where: Filter, doc: Doc | VectorRow) -> bool:
    return where.admits_record(doc)


class InMemoryTextIndex:
    """BM25 (k1 1.2, b 0.75) over name, title, description, body and tags."""

    K1 = 1.2
    B = 0.75

    CONTEXT_WEIGHT = 0.5

    def __init__(self) -> None:
        self._docs: dict[str, Doc] = {}
        self._terms: dict[str, list[str]] = {}
        self._context: dict[str, list[str]] = {}

    def upsert(self, docs: Sequence[Doc]) -> None:
        for doc in docs:
            self._docs[doc.id] = doc
            text = " ".join([doc.name, doc.title, doc.description, doc.body, " ".join(doc.tags)])
            self._terms[doc.id] = [stem(t) for t in _tokens(text)]
            self._context[doc.id] = [stem(t) for t in _tokens(" ".join(doc.context))]

    def delete(self, ids: Sequence[str]) -> None:
        for i in ids:
            self._docs.pop(i, None)
            self._terms.pop(i, None)
            self._context.pop(i, None)

    def search(
        self,
        text: str,
        *,
        where: Filter,
        limit: int,
        snippets: bool = False,
        prefix: bool = False,
    ) -> list[Candidate]:
        query = words(text, keep_short_last=prefix)
        if not query or limit <= 0:
            return []
        exact = {stem(w) for w in query}
        last = query[-1] if prefix else None
        # The collection's statistics over the projects the search may see alone
        # (`Filter.visible`): no score depends on text outside them.
        visible = where.visible
        seen = Filter(where.projects, where.include_global, active_only=False)
        counted = [
            terms
            for doc_id, terms in self._terms.items()
            if visible is None or seen.admits_record(self._docs[doc_id])
        ]
        n = len(counted) or 1
        avg = sum(len(t) for t in counted) / n
        df: dict[str, int] = {}
        for terms in counted:
            for term in set(terms):
                df[term] = df.get(term, 0) + 1
        scored: list[tuple[str, float, str | None]] = []

        def wanted(term: str) -> bool:
            if term in exact:
                return True
            return last is not None and (term.startswith(last) or term.startswith(stem(last)))

        for doc_id, terms in self._terms.items():
            if not _admits(where, self._docs[doc_id]):
                continue
            matched = {t for t in terms if wanted(t)}
            context = {t for t in self._context[doc_id] if wanted(t)}
            if not matched and not context:
                continue
            score = 0.0
            for term in matched:
                tf = terms.count(term)
                idf = math.log(1 + (n - df.get(term, 0) + 0.5) / (df.get(term, 0) + 0.5))
                norm = tf + self.K1 * (1 - self.B + self.B * len(terms) / (avg or 1))
                score += idf * tf * (self.K1 + 1) / norm
            # Context (e.g. the previous turns of a session) counts at half weight.
            score += self.CONTEXT_WEIGHT * sum(
                math.log(1 + (n + 0.5) / (df.get(t, 0) + 0.5)) for t in context
            )
            snippet = self._snippet(self._docs[doc_id], matched) if snippets else None
            scored.append((doc_id, score, snippet))
        return _ranked(scored, limit)

    def snippets(
        self, text: str, ids: Sequence[str], *, where: Filter, prefix: bool = False
    ) -> dict[str, str]:
        """Each of `ids` that `search` finds: the snippet it gives."""
        found = self.search(text, where=where, limit=len(self._docs), snippets=True, prefix=prefix)
        wanted = set(ids)
        return {c.id: c.snippet for c in found if c.id in wanted and c.snippet is not None}

    @staticmethod
    def _snippet(doc: Doc, matched: set[str]) -> str:
        fields = [doc.body, doc.description, doc.title]
        source = next(
            (f for f in fields if any(stem(t) in matched for t in _tokens(f))),
            next((f for f in fields if f), doc.name),
        )
        tokens = source.split()
        hits = [bool(_tokens(t)) and stem(_tokens(t)[0]) in matched for t in tokens]
        start = max(0, hits.index(True) - 8) if True in hits else 0
        window = zip(tokens[start : start + 24], hits[start : start + 24], strict=True)
        return " ".join(f"\x01{t}\x02" if hit else t for t, hit in window)

    def ids(self) -> set[str]:
        return set(self._docs)

    def fingerprints(self) -> list[tuple[str, str]]:
        return [(i, doc.fingerprint()) for i, doc in self._docs.items()]

    def count(self) -> int:
        return len(self._docs)

    def clear(self) -> None:
        self._docs.clear()
        self._terms.clear()


class InMemoryVectorIndex:
    """Exact cosine scan over unit vectors."""

    def __init__(self) -> None:
        self._rows: dict[str, VectorRow] = {}

    def upsert(self, rows: Sequence[VectorRow]) -> None:
        for row in rows:
            self._rows[row.id] = row

    def delete(self, ids: Sequence[str]) -> None:
        for i in ids:
            self._rows.pop(i, None)

    def search(
        self, vector: Sequence[float] | Vectors, *, where: Filter, limit: int
    ) -> list[Candidate]:
        if limit <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        scored = [
            (row.id, float(np.dot(query, np.asarray(row.vector, dtype=np.float32))), None)
            for row in self._rows.values()
            if _admits(where, row)
        ]
        return _ranked(scored, limit)

    def vectors(self, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        rows = self._rows
        return {i: np.asarray(rows[i].vector, dtype=np.float32) for i in ids if i in rows}

    def ids(self) -> set[str]:
        return set(self._rows)

    def fingerprints(self) -> list[tuple[str, str]]:
        return [(i, row.fingerprint) for i, row in self._rows.items()]

    def count(self) -> int:
        return len(self._rows)

    def clear(self) -> None:
        self._rows.clear()

    def stored_model(self) -> str | None:
        return next((row.model for row in self._rows.values()), None)


class FakeEmbedder:
    """Deterministic bag-of-stems hashing embedder.

    Texts that share stems get a positive cosine, texts that share nothing get
    about zero: enough for engine tests, with no model. `fail=True` makes every
    call raise EmbedderUnavailable (for degrade tests); `calls` counts calls.
    """

    def __init__(self, dims: int = 64, *, fail: bool = False) -> None:
        self._dims = dims
        self.fail = fail
        self.calls = 0

    @property
    def model(self) -> str:
        return f"fake-hash-{self._dims}"

    @property
    def dims(self) -> int:
        return self._dims

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.fail:
            raise EmbedderUnavailable("fake embedder told to fail")
        out = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for token in _tokens(text):
                digest = hashlib.blake2b(stem(token).encode(), digest_size=4).digest()
                out[row, int.from_bytes(digest, "big") % self._dims] += 1.0
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
        return out


class InMemoryStore:
    """A MemoryStore over a dict of Records (the engine's unit-test store)."""

    def __init__(
        self,
        records: Iterable[Record] = (),
        *,
        isolation: dict[str, str] | None = None,
        usage: dict[str, float] | None = None,
        clock: Clock = utc_now,
    ) -> None:
        self.records: dict[str, Record] = {r.id: r for r in records}
        self.clock = clock  # expiry is read against it (tests pin it)
        self._isolation = dict(isolation or {})
        self._usage = dict(usage or {})
        # Explicit edges (associations, supersessions): (source, target) -> Link.
        self.explicit: dict[tuple[str, str, str], Link] = {}
        self.reads = 0  # `edges` calls (one per hop of a graph walk)
        # Transaction time: each memory's recorded states, oldest first (None: deleted).
        self.history: dict[str, list[tuple[datetime, Record | None]]] = {}
        self.sentences: dict[str, Vectors] = {}  # `passages`: unit rows by memory id

    def connect(self, source: str, target: str, weight: float = 1.0, rel: str = RELATED) -> None:
        """An explicit edge source -> target (replacing one of the same type)."""
        self.explicit[(source, target, rel)] = Link(target, weight, rel)

    def add(self, record: Record) -> None:
        self.records[record.id] = record

    def revise(self, record: Record, at: datetime) -> None:
        """Store `record` as its new state, recorded at `at` (a create or any change)."""
        self.records[record.id] = record
        self.history.setdefault(record.id, []).append((at, record))

    def remove(self, record_id: str, at: datetime) -> None:
        """Delete a record; its history keeps a final delete recorded at `at`."""
        self.records.pop(record_id, None)
        self.history.setdefault(record_id, []).append((at, None))

    def as_of(
        self, *, where: Filter, valid_at: datetime | None = None,
        recorded_at: datetime | None = None,
    ) -> list[Record]:  # fmt: skip
        if recorded_at is None:
            known = list(self.records.values())
        else:
            known = []
            for states in self.history.values():
                seen = [r for at, r in states if at <= recorded_at]
                if seen and seen[-1] is not None:
                    known.append(replace(seen[-1], favorite=False))
        return timetravel.as_known(known, where=where, instant=valid_at)

    def invalidate(self, record_id: str, superseded_by: str | None = None) -> None:
        self.records[record_id] = replace(
            self.records[record_id], active=False, superseded_by=superseded_by
        )

    def hydrate(self, ids: Iterable[str], *, expired: bool = False) -> dict[str, Record]:
        now = self.clock()
        found = (self.records[i] for i in ids if i in self.records)
        return {r.id: r for r in found if expired or not is_expired(r, now)}

    def browse(self, *, where: Filter, limit: int, favorites_only: bool = False) -> list[Record]:
        rows = [
            r
            for r in self.records.values()
            if self._admits(where, r) and (r.favorite or not favorites_only)
        ]
        rows.sort(key=lambda r: r.id, reverse=True)
        rows.sort(key=lambda r: r.updated.timestamp() if r.updated else 0.0, reverse=True)
        return rows[:limit]

    def names(self, *, where: Filter, limit: int, since: datetime | None = None) -> list[Named]:
        if where.items and MEMORY not in where.items:
            return []
        memories = replace(where, items=(MEMORY,))
        newest = self.browse(
            where=memories, limit=len(self.records) if since is not None else limit
        )
        if since is not None:
            newest = [r for r in newest if r.updated is not None and r.updated >= since]
        return [Named(r.id, r.name, lead(r.description, r.body), r.updated) for r in newest[:limit]]

    def count(self, *, where: Filter) -> int:
        return sum(1 for r in self.records.values() if self._admits(where, r))

    def expired_ids(self) -> frozenset[str]:
        now = self.clock()
        return frozenset(i for i, r in self.records.items() if is_expired(r, now))

    def links(self, ids: Sequence[str]) -> dict[str, tuple[Link, ...]]:
        """Each memory's `[[links]]`, resolved now by the one rule (`recall.links`)."""
        out: dict[str, tuple[Link, ...]] = {}
        for source in (self.records[i] for i in ids if i in self.records):
            wanted = links.names(source.body) if source.item == MEMORY else []
            rows = [
                (r.name, r.id, r.project)
                for r in self.records.values()
                if r.item == MEMORY and r.active and r.name in wanted and r.id != source.id
            ]
            chosen = links.prefer(rows, source.project)
            found = tuple(Link(chosen[name]) for name in wanted if name in chosen)
            if found:
                out[source.id] = found
        return out

    def edges(
        self, ids: Sequence[str], *, where: Filter, reverse: bool = False, min_weight: float = 0.0
    ) -> dict[str, tuple[Link, ...]]:
        """`[[links]]` (resolved now, as `links`) and explicit edges; see the port."""
        self.reads += 1
        wanted = set(ids)
        out: dict[str, list[Link]] = {}
        every = [(src, link) for src, found in self.links(list(self.records)).items()
                 for link in found]  # fmt: skip
        every += [(src, link) for (src, _, _), link in sorted(self.explicit.items())]
        every += [  # supersessions: replacement -> replaced
            (r.superseded_by, Link(r.id, 1.0, SUPERSEDES))
            for r in self.records.values()
            if r.superseded_by is not None
        ]
        for src, link in every:
            ends = [(src, link)] if src in wanted else []
            if reverse and link.target in wanted:
                ends.append((link.target, Link(src, link.weight, link.rel, reverse=True)))
            for here, edge in ends:
                other = self.records.get(edge.target)
                if other is None or other.item != MEMORY or not self._admits(where, other):
                    continue
                if edge.weight >= min_weight:
                    out.setdefault(here, []).append(edge)
        return {here: tuple(sorted(found, key=lambda e: e.reverse)) for here, found in out.items()}

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
        seeds = [
            r
            for r in (self.records.get(i) for i in ids)
            if r is not None and r.item == MEMORY and (kinds is None or r.kind in kinds)
        ]
        now = self.clock()
        rows = [r for r in self.records.values() if r.item == MEMORY and not is_expired(r, now)]
        return near(seeds, rows, where=where, minutes=minutes, turns=turns, cap=cap)

    def earlier_turns(
        self, ids: Sequence[str], *, where: Filter, turns: int
    ) -> dict[str, tuple[str, ...]]:
        now = self.clock()
        ordered = [
            r for r in self.records.values()
            if r.item == MEMORY and conversation(r) and r.session_order is not None
        ]  # fmt: skip
        wanted = set(ids)
        seeds = [(r.id, r.session_id, r.session_order or 0) for r in ordered if r.id in wanted]
        rows = [
            (r.id, r.session_id, r.session_order or 0)
            for r in ordered
            if self._admits(where, r) and not is_expired(r, now)
        ]
        return turns_before(seeds, rows, turns)

    def passages(self, ids: Sequence[str]) -> dict[str, Vectors]:
        return {i: self.sentences[i] for i in dict.fromkeys(ids) if i in self.sentences}

    def identifiers(self, text: str, *, where: Filter, limit: int) -> list[Record]:
        token = text.strip()
        if not token or " " in token:
            return []
        ranked: list[tuple[int, str, Record]] = []
        for r in self.records.values():
            if not self._admits(where, r):
                continue
            if r.id.upper() == token.upper():
                ranked.append((0, r.id, r))
            elif r.name == token:
                ranked.append((1, r.id, r))
            elif len(token) >= 8 and r.id.upper().startswith(token.upper()):
                ranked.append((2, r.id, r))
        ranked.sort(key=lambda t: (t[0], t[1]))
        return [r for _, _, r in ranked[:limit]]

    def usage(self, ids: Sequence[str]) -> dict[str, float]:
        return {i: self._usage[i] for i in ids if i in self._usage}

    def isolation(self, project: str) -> str:
        return self._isolation.get(project, "open")

    def _admits(self, where: Filter, r: Record) -> bool:
        return where.admits_record(r) and not is_expired(r, self.clock())
