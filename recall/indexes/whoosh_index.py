"""The full-text plane on Whoosh (pure Python, `whoosh-reloaded`).

Same fields and query shape as the tantivy adapter: id, item, project (a
global item is stored as `_global_`), active and kind are exact; name, title,
description, body, tags and context use a stemming analyzer (context at
boost 0.5, never shown); `words` holds the unstemmed lower-cased words of the
visible fields for prefix expansion only. The scope and validity filter is
passed as Whoosh's `filter`/`mask`, which apply before the limit.

User text never reaches Whoosh's query parser: `recall.query.words` splits
it, each word goes through the field's own analyzer and becomes `Term`
queries OR-ed across fields. Prefix expansion is expensive in Whoosh (it
walks the term list), so the last word expands only from
`PREFIX_MIN_CHARS` characters, and only to the `PREFIX_EXPANSIONS` most
frequent words; a shorter last word is matched as a plain word.

Concurrency policy: Whoosh allows one writer per index directory, across
processes, through its WRITELOCK file lock (an OS lock the kernel releases
when the holder dies). Each write takes the writer for one batch only:
acquire, apply, commit, release. When the lock is busy the call retries with
exponential backoff for up to `lock_timeout_s`, then raises
IndexUnavailable. Readers never lock; searches refresh to the latest commit.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from whoosh import highlight, index
from whoosh.analysis import (
    CharsetFilter,
    LowercaseFilter,
    RegexTokenizer,
    StemFilter,
    StopFilter,
)
from whoosh.fields import DATETIME, ID, KEYWORD, NUMERIC, STORED, TEXT, Schema
from whoosh.lang import stemmer_for_language
from whoosh.query import And, NumericRange, Or, Query, Term
from whoosh.searching import Searcher
from whoosh.writing import CLEAR, IndexWriter

from recall.errors import IndexUnavailable
from recall.indexes import fragments, layout
from recall.indexes.scope_statistics import ScopeStatistics, most_held
from recall.indexes.whoosh_scoring import Scope, ScopedBM25F, held_by, scope_of
from recall.query import FOLDS, WORD, words
from recall.types import MEMORY, Candidate, Doc, Filter, Visible, micros

GLOBAL = "_global_"
TEXT_FIELDS = ("name", "title", "description", "body", "tags", "context")
BOOSTS = {"context": 0.5}
SNIPPET_FIELDS = ("body", "description", "title")
PREFIX_FIELD = "words"
PREFIX_MIN_CHARS = 3
PREFIX_EXPANSIONS = 10
PREFIX_SCAN = 4096  # words read from the term list for a prefix searched in a scope
FETCH_SLACK = 8
SNIPPET_CHARS = 150
HEAD_WORDS = 24
MAX_WORD_CHARS = 39  # tantivy's en_stem drops tokens of 40 bytes or more
_TOKEN = WORD  # a kana or ideograph is a word of its own (`recall.query.CJK`)
# Layout 3 added the filter fields `tag` (each tag one exact term), `agent_id`,
# `session_id`, `importance` and `created` (microseconds since the epoch).
LAYOUT = 6  # 4: kana and ideographs indexed one by one; 5: words folded; 6: full width too


def build_schema() -> Schema:
    """The index schema; changing it needs a reindex."""
    # Snowball English (Porter2), the stemmer tantivy's `en_stem` uses, so
    # both backends index the same terms; no stop words, like tantivy, and
    # words of 40 characters or more dropped, like its `RemoveLongFilter(40)`
    # (kept, a pasted hash or blob would lengthen the field and shift BM25).
    # The size limits only act through the stop filter, hence the empty list.
    # Words are folded as every text plane folds them (`recall.query.fold`).
    plain = RegexTokenizer(_TOKEN) | LowercaseFilter() | CharsetFilter(FOLDS)
    stem = (
        plain
        | StopFilter(stoplist=frozenset(), minsize=1, maxsize=MAX_WORD_CHARS)
        | StemFilter(stemfn=stemmer_for_language("en"))
    )
    text = {
        name: TEXT(analyzer=stem, stored=name in SNIPPET_FIELDS or name == "name", phrase=False)
        for name in TEXT_FIELDS
    }
    exact = {name: ID() for name in ("item", "project", "active", "kind", "agent_id", "session_id")}
    return Schema(
        id=ID(stored=True, unique=True),
        fp=STORED(),
        updated=DATETIME(),
        tag=KEYWORD(),
        importance=NUMERIC(numtype=float, bits=64),
        created=NUMERIC(numtype=int, bits=64, signed=True),
        **exact,
        **text,
        **{PREFIX_FIELD: TEXT(analyzer=plain, phrase=False)},
    )


def to_fields(doc: Doc) -> dict[str, Any]:
    """A `Doc` as Whoosh field values."""
    tags = " ".join(doc.tags)
    fields: dict[str, Any] = {
        "id": doc.id,
        "fp": doc.fingerprint(),
        "item": doc.item,
        "project": doc.project if doc.project is not None else GLOBAL,
        "active": "1" if doc.active else "0",
        "kind": doc.kind,
        "agent_id": doc.agent_id,
        "session_id": doc.session_id,
        "importance": float(doc.importance),
        "name": doc.name,
        "title": doc.title,
        "description": doc.description,
        "body": doc.body,
        "tags": tags,
        "context": " ".join(doc.context),
        PREFIX_FIELD: " ".join((doc.name, doc.title, doc.description, doc.body, tags)),
    }
    if doc.updated is not None:
        fields["updated"] = doc.updated
    if doc.tags:  # a list: each value one exact term (KEYWORD splits a string on spaces)
        fields["tag"] = list(doc.tags)
    if doc.created is not None:
        fields["created"] = micros(doc.created)
    return fields


def attribute_queries(where: Filter) -> list[Query]:
    """Recall's attribute filters (tags ... until) as MUST queries (mirrors `Filter.admits`)."""
    must: list[Query] = []
    if where.memories_only:
        must.append(Term("item", MEMORY))
    for field in ("agent_id", "session_id"):
        value = getattr(where, field)
        if value is not None:
            must.append(Term(field, value))
    must.extend(Term("tag", tag) for tag in where.tags)
    if where.any_tags:
        must.append(Or([Term("tag", tag) for tag in where.any_tags]))
    if where.min_importance is not None:
        must.append(NumericRange("importance", float(where.min_importance), None))
    if where.since is not None or where.until is not None:
        low = None if where.since is None else micros(where.since)
        high = None if where.until is None else micros(where.until)
        must.append(NumericRange("created", low, high))
    return must


def visible_query(visible: Visible) -> Query | None:
    """The documents of the projects a search may see (`Filter.visible`; None: all)."""
    if visible is None:
        return None
    projects, include_global = visible
    return Or([Term("project", p) for p in (*projects, *([GLOBAL] if include_global else []))])


def filter_queries(where: Filter) -> tuple[Query | None, Query | None]:
    """`where` as Whoosh (filter, mask) queries (mirrors `Filter.admits`)."""
    must: list[Query] = attribute_queries(where) if where.narrowed else []
    if where.active_only:
        must.append(Term("active", "1"))
    for field, allowed in (("item", where.items), ("kind", where.kinds)):
        if allowed is not None:
            must.append(Or([Term(field, v) for v in allowed]))
    if (visible := visible_query(where.visible)) is not None:
        must.append(visible)
    mask = None
    if where.projects is None and not where.include_global:
        mask = Term("project", GLOBAL)
    return (And(must) if must else None), mask


class SentinelFormatter(highlight.Formatter):  # type: ignore[misc]
    """Raw text with each match wrapped in \\x01 ... \\x02 (no HTML)."""

    between = " "

    def _text(self, text: str) -> str:
        return text.replace("\x01", "").replace("\x02", "")

    def format_token(self, text: str, token: Any, replace: bool = False) -> str:
        return "\x01" + self._text(highlight.get_text(text, token, replace)) + "\x02"


class WhooshIndex:
    """`TextIndex` on a Whoosh index directory (see the module docstring)."""

    def __init__(
        self, path: Path | str, *, writer_heap_mb: int = 64, lock_timeout_s: float = 10.0
    ) -> None:
        if writer_heap_mb <= 0:
            raise ValueError(f"writer_heap_mb must be > 0, got {writer_heap_mb}")
        if lock_timeout_s < 0:
            raise ValueError(f"lock_timeout_s must be >= 0, got {lock_timeout_s}")
        self.path = Path(path)
        self._heap_mb = writer_heap_mb
        self._lock_timeout_s = lock_timeout_s
        self._opened: index.Index | None = None
        with suppress(IndexUnavailable):  # a damaged folder: see `_index`
            self._opened = self._open()
        self._searcher: Searcher | None = None
        self._statistics: ScopeStatistics[Scope] = ScopeStatistics()
        self._highlighter = highlight.Highlighter(
            fragmenter=highlight.ContextFragmenter(maxchars=SNIPPET_CHARS, surround=40),
            formatter=SentinelFormatter(),
        )

    @property
    def _index(self) -> index.Index:
        """The open index; a folder that could not be opened is tried again at each
        use (as `TantivyIndex._index` says)."""
        if self._opened is None:
            self._opened = self._open()
        return self._opened

    def _open(self) -> index.Index:
        # Whoosh reports a damaged directory with many unrelated exception
        # types (pickle, struct, EOF, its own), hence the broad catch.
        try:
            layout.prepare(self.path, "the Whoosh text index", version=LAYOUT)
            if index.exists_in(str(self.path)):
                return index.open_dir(str(self.path))
            return index.create_in(str(self.path), build_schema())
        except Exception as exc:
            raise IndexUnavailable(f"cannot open the text index at {self.path}: {exc}") from exc

    # -- writes -------------------------------------------------------------

    def upsert(self, docs: Sequence[Doc]) -> None:
        """Replace documents by id (Whoosh's unique-field update)."""
        if not docs:
            return
        # Whoosh's update does not see documents added earlier in the same
        # uncommitted batch, so keep only the last version of each id.
        latest = {doc.id: doc for doc in docs}
        with self._writer() as writer:
            for doc in latest.values():
                writer.update_document(**to_fields(doc))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        if not ids:
            return
        with self._writer() as writer:
            for doc_id in ids:
                writer.delete_by_term("id", doc_id)

    def clear(self) -> None:
        """Delete every document."""
        writer = self._acquire()
        try:
            writer.commit(mergetype=CLEAR)
        except Exception as exc:
            writer.cancel()
            raise IndexUnavailable(f"cannot clear the text index at {self.path}: {exc}") from exc

    @contextmanager
    def _writer(self) -> Iterator[IndexWriter]:
        """The writer for one batch: commit on success, always release the lock."""
        writer = self._acquire()
        try:
            yield writer
        except BaseException:
            writer.cancel()
            raise
        try:
            writer.commit()
        except Exception as exc:  # Whoosh's write errors are untyped
            raise IndexUnavailable(f"cannot write the text index at {self.path}: {exc}") from exc

    def _acquire(self) -> IndexWriter:
        """Take the writer lock, retrying with backoff up to the lock timeout."""
        deadline = time.monotonic() + self._lock_timeout_s
        delay = 0.005
        while True:
            try:
                return self._index.writer(limitmb=self._heap_mb)
            except index.LockError as exc:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise IndexUnavailable(
                        f"the text index at {self.path} is locked by another writer; "
                        f"gave up after {self._lock_timeout_s:g}s"
                    ) from exc
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.25)

    # -- reads --------------------------------------------------------------

    def _current(self) -> Searcher:
        """A searcher on the latest commit, reopened only when the index changed."""
        # Not `Searcher.refresh()`: it reuses segment readers and misses
        # deletions committed since (seen with whoosh-reloaded 2.7.5).
        try:
            if self._searcher is None or not self._searcher.up_to_date():
                if self._searcher is not None:
                    self._searcher.close()
                self._searcher = self._index.searcher()
        except Exception as exc:  # a damaged segment surfaces as anything
            raise IndexUnavailable(f"cannot read the text index at {self.path}: {exc}") from exc
        return self._searcher

    def stamp(self) -> object:
        """Which commit the reader sees (`recall.tiers.Stamped`): the index's generation."""
        try:
            return int(self._index.latest_generation())
        except Exception:  # unreadable: no stamp, so nothing is served hot
            return None

    def search(
        self,
        text: str,
        *,
        where: Filter,
        limit: int,
        snippets: bool = False,
        prefix: bool = False,
    ) -> list[Candidate]:
        """BM25F over the text fields, filtered by `where`, ties by id ascending."""
        query_words = words(text, keep_short_last=prefix)
        if not query_words or limit <= 0:
            return []
        searcher = self._current()
        try:
            scoped = self._scoped(searcher, where)
            query = self._query(scoped, query_words, prefix=prefix)
            if query is None:
                return []
            hits = self._top(scoped, query, where, limit)
            return [
                Candidate(
                    id=hit["id"],
                    rank=n,
                    score=score,
                    snippet=self._snippet(hit) if snippets else None,
                )
                for n, (score, hit) in enumerate(hits, 1)
            ]
        except Exception as exc:
            raise IndexUnavailable(f"cannot search the text index at {self.path}: {exc}") from exc

    def snippets(
        self, text: str, ids: Sequence[str], *, where: Filter, prefix: bool = False
    ) -> dict[str, str]:
        """Each of `ids` that `search` finds: the snippet it gives (a page's hits
        after a deeper ranking read without them)."""
        query_words = words(text, keep_short_last=prefix)
        if not query_words or not ids:
            return {}
        searcher = self._current()
        try:
            scoped = self._scoped(searcher, where)
            query = self._query(scoped, query_words, prefix=prefix)
            if query is None:
                return {}
            chosen = And([query, Or([Term("id", doc_id) for doc_id in ids])])
            filter_, mask = filter_queries(where)
            found = scoped.search(chosen, limit=len(ids), filter=filter_, mask=mask)
            return {hit["id"]: self._snippet(hit) for hit in found}
        except Exception as exc:
            raise IndexUnavailable(f"cannot search the text index at {self.path}: {exc}") from exc

    def _query(self, searcher: Searcher, query_words: list[str], *, prefix: bool) -> Query | None:
        typed = list(query_words)
        last = query_words[-1]
        if prefix and len(last) >= PREFIX_MIN_CHARS:
            typed.extend(self._expand(searcher, last))
        analyzer = self._index.schema["body"].analyzer
        terms: list[str] = []
        for word in typed:
            terms.extend(t.text for t in analyzer(word) if t.text not in terms)
        if not terms:
            return None
        clauses = [
            Term(field, term, boost=BOOSTS.get(field, 1.0))
            for field in TEXT_FIELDS
            for term in terms
        ]
        return Or(clauses)

    @staticmethod
    def _expand(searcher: Searcher, typed: str) -> list[str]:
        """The words starting with `typed` that most documents in the searcher's scope
        hold (`ScopedBM25F`; every document without one): ten words of a project the
        caller cannot see crowded its own out. A word's count in scope is at most its
        frequency in the index, so counting stops once that cannot reach the tenth."""
        reader = searcher.reader()
        weighting = searcher.weighting
        if not isinstance(weighting, ScopedBM25F):
            frequent = reader.most_frequent_terms(PREFIX_FIELD, PREFIX_EXPANSIONS, prefix=typed)
            return [_text(term) for _, term in frequent]
        frequent = reader.most_frequent_terms(PREFIX_FIELD, PREFIX_SCAN, prefix=typed)
        return most_held(
            ((_text(term), int(most)) for most, term in frequent),
            lambda word, _: int(weighting.frequency(PREFIX_FIELD, word)),
            limit=PREFIX_EXPANSIONS,
        )

    def _scoped(self, searcher: Searcher, where: Filter) -> Searcher:
        """`searcher`, or one on its reader scoring by the statistics of the projects
        `where` may see (`recall.indexes.whoosh_scoring`) when that is not all."""
        visible = where.visible
        seen = visible_query(visible)
        if seen is None:
            return searcher
        reader = searcher.reader().generation()  # moves with every commit

        def counted(scope: Scope, key: str) -> int:
            field, word = key.split("\x00", 1)
            return held_by(searcher, scope, field, word)

        def figures(keys: list[str]) -> tuple[Scope, dict[str, int]]:
            return self._statistics.figures(
                reader, visible, keys, shape=lambda: scope_of(searcher, seen, TEXT_FIELDS),
                frequency=counted,
            )  # fmt: skip

        def frequency(field: str, text: Any) -> int:
            key = f"{field}\x00{_text(text)}"  # a term as Whoosh gives it: bytes or str
            return figures([key])[1][key]

        scope, _ = figures([])
        weighting = ScopedBM25F(scope, frequency)
        return Searcher(searcher.reader(), weighting=weighting, closereader=False)

    def _top(
        self, searcher: Searcher, query: Query, where: Filter, limit: int
    ) -> list[tuple[float, Any]]:
        """The best `limit` hits as (score, hit), ties broken by id."""
        filter_, mask = filter_queries(where)
        fetch = limit + FETCH_SLACK
        while True:
            results = searcher.search(query, limit=fetch, filter=filter_, mask=mask)
            hits = [(float(hit.score), hit) for hit in results]
            if len(hits) < fetch or hits[-1][0] < hits[limit - 1][0]:
                break
            fetch *= 4
        hits.sort(key=lambda sh: (-sh[0], sh[1]["id"]))
        return hits[:limit]

    def _snippet(self, hit: Any) -> str:
        """The best fragment of body, else description, else title."""
        stored = hit.fields()
        for field in SNIPPET_FIELDS:
            text = stored.get(field) or ""
            if not text:
                continue
            fragment = str(self._highlighter.highlight_hit(hit, field, text=text, top=1)).strip()
            if "\x01" in fragment:
                shown = fragment.replace("\x01", "").replace("\x02", "")
                edges = fragments.widen(text, shown)
                before, after = (e.replace("\x01", "").replace("\x02", "") for e in edges)
                return before + fragment + after
        for field in (*SNIPPET_FIELDS, "name"):
            text = stored.get(field) or ""
            if text.strip():
                head = " ".join(text.split()[:HEAD_WORDS])
                return head.replace("\x01", "").replace("\x02", "")
        return ""

    def ids(self) -> set[str]:
        """Every indexed id."""
        return {fields["id"] for fields in self._current().all_stored_fields()}

    def fingerprints(self) -> list[tuple[str, str]]:
        """One (id, fingerprint) pair per live document."""
        stored = self._current().all_stored_fields()
        return [(fields["id"], str(fields.get("fp", ""))) for fields in stored]

    def count(self) -> int:
        """The number of live documents."""
        return int(self._current().doc_count())


def _text(term: str | bytes) -> str:
    return term.decode("utf-8") if isinstance(term, bytes) else term
