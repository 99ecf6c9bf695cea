"""The full-text plane on tantivy (the default `TextIndex` backend).

Fields: id, item, project (a global item is stored as `_global_`), active,
kind (all exact), name, title, description, body and tags (English stemming,
`STEMMED`: tantivy's `en_stem`, but a kana or ideograph is a word of its own; what
snippets are cut from), `text` (all of those in one field,
what a query matches and what document frequencies come from), `context`
(the previous turns of the item's session, never shown), updated (a fast
date), `terms` (stored: the analysed tokens of the own text and of each
previous turn, for scoring), `length` (a fast field: the own text's token
count), plus `words`: the lower-cased, unstemmed words of the visible text
fields, used only to expand the palette's last word as a prefix.

Queries never go through tantivy's parser: `recall.query.words` splits the
user's text, each word is stemmed by the same analyzer as the index and
becomes term queries OR-ed over `text` and `context`; the scope and validity
filter joins as zero-scored MUST clauses, so it applies before the limit. The
best `RESCORE_POOL` (or `limit`, if larger) of tantivy's own BM25 (whose b is
fixed at 0.75) are then scored again with `recall.bm25` (BM25F, k1 1.2,
b 0.4, the neighbour turns at 0.5 / 0.35, the query's neighbouring words as
pairs found within 4 tokens, a long text mixed half and half with its best
20-token window) from the stored tokens, the index's
document frequencies and its mean length, and ranked by that score; every
document holding a rare query term (in at most `RARE_DF` documents) joins
them, as tantivy's b 0.75 can put a long text holding it past the pool. A prefix
is expanded to at most `PREFIX_EXPANSIONS` of the most frequent indexed words
it starts with (words in most documents excepted), each then stemmed like a
typed word; a prefix query (the palette, as you type) keeps tantivy's score.

Concurrency policy: tantivy allows one `IndexWriter` per index directory,
across processes, through a lock file held by an OS file lock (released by
the kernel when the holder dies, so a killed writer leaves no stale lock).
Each write (`upsert`, `delete`, `clear`) takes the writer for one batch only:
acquire, apply, commit, release. When another writer holds the lock the call
retries with exponential backoff for up to `lock_timeout_s`, then raises
IndexUnavailable. A rebuild (`bulk`) instead holds one writer for all its
writes and commits once at the end: 483 commits and merge waits were half of
the text plane's time in a reindex of 100,000 memories, and a rebuild that
dies leaves the index as it was before it began. The index worker keeps its
writer between batches (`kept`): each batch still commits, but the writer is
taken once and segment merges run on in the background instead of being
waited for at each release (at 100,000 memories, batches of 10: 37-42 ms
mean and 200-240 ms at p90 when each took and released the writer, 13 ms and
20-24 ms kept); `let_go` gives it back when another process may want it.
Readers never take the lock: any number of processes can search while a
writer works; this process reloads its reader after each of its own commits,
and before a read whenever meta.json's bytes differ from the commit it last
loaded (tantivy's own watcher polls every 500 ms, so a search in one gunicorn
worker just after a write in another could miss it).
"""

from __future__ import annotations

import heapq
import struct
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any

import tantivy

from recall import background, bm25
from recall.errors import IndexUnavailable
from recall.indexes import fragments, layout
from recall.indexes.scope_statistics import ScopeStatistics, most_held
from recall.query import CJK, words
from recall.types import MEMORY, Candidate, Doc, Filter, Visible, micros

GLOBAL = "_global_"
TEXT_FIELDS = ("name", "title", "description", "body", "tags")
QUERY_FIELDS = ("text", "context")
BOOSTS = {"context": 0.5}
TERMS_FIELD = "terms"
LENGTH_FIELD = "length"
# Layout 3 added `text`, `context` as the joined previous turns, `terms` and
# `length`; 4 the filter fields `tag`, `agent_id`, `session_id`, `importance`
# and `created`; 5 kana and ideographs as words of their own (`STEMMED`, `PLAIN`);
# 6 words folded (`recall.query.fold`): an older directory is cleared on open and
# rebuilt by reindex.
LAYOUT = 6
# What Recall's attribute filters read (`Filter.tags` ... `until`): `tag` holds
# each tag as one exact term, `created` microseconds since the epoch (an item
# with no creation time has none, so any bound excludes it).
TAG_FIELD = "tag"
# Candidates re-scored with BM25F (or `limit`, if larger): the fused default's
# R@10 / nDCG@10 on all four dev sets are the same at 50 as at 100 (and on LoCoMo
# turns at 200 and 300), and each is a stored document read: at 100,000 memories
# the text search's p50 / p95 went from 6.4 / 9.2 ms at 100 to 4.9 / 6.2 at 50.
RESCORE_POOL = 50
RARE_DF = 16  # a query term at most this many documents hold joins the re-score (`_rare_matches`)
BULK_BATCH = 100_000  # the batch `bulk`'s writer is sized for (its indexing threads)
PARAMS = bm25.Bm25F()
SNIPPET_FIELDS = ("body", "description", "title")
PREFIX_FIELD = "words"
PREFIX_EXPANSIONS = 10
PREFIX_SCAN = 4096
# Expansions skip words in more than this share of documents (and more than
# PREFIX_COMMON_MIN of them): their BM25 weight is near zero while their
# postings are the longest ("t" -> "the" scores almost every document).
PREFIX_COMMON_SHARE = 0.2
PREFIX_COMMON_MIN = 1000
FETCH_SLACK = 8
SNIPPET_CHARS = 150
HEAD_WORDS = 24
MIN_HEAP_MB = 15
ID_WORDS = 4  # u64 fast fields holding an id's first 32 UTF-8 bytes
_ID_PACK = struct.Struct(f">{ID_WORDS}Q")

# tantivy's `simple` tokenizer (runs of alphanumeric characters), but each kana or
# ideograph a word of its own (`recall.query.CJK`), as the other text planes split them.
_WORDS = rf"[{CJK}]|[[\p{{Alphabetic}}\p{{N}}]--[{CJK}]]+"
STEMMED = "recall_stem"  # the visible text and the context: words, lower case, folded
# (`recall.query.fold`: "Hermès" is "hermes"), English stems
PLAIN = "recall_words"  # the palette's prefixes: words in lower case, folded
_PLAIN = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(_WORDS))
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.ascii_fold())
    .build()
)
_ANALYZER = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.regex(_WORDS))
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.ascii_fold())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)


@lru_cache(maxsize=8192)
def stems(word: str) -> tuple[str, ...]:
    """The terms `STEMMED` indexes for a word (the query-side analyzer)."""
    return tuple(_ANALYZER.analyze(word))


def build_schema() -> tantivy.Schema:
    """The index schema; changing it needs a reindex."""
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("fp", stored=True, tokenizer_name="raw", index_option="basic")
    for name in ("item", "project", "active", "kind", TAG_FIELD, "agent_id", "session_id"):
        sb.add_text_field(name, tokenizer_name="raw", index_option="basic")
    sb.add_float_field("importance", indexed=True, fast=True)
    sb.add_integer_field("created", indexed=True, fast=True)
    for name in (*TEXT_FIELDS, *QUERY_FIELDS):
        stored = name in SNIPPET_FIELDS or name == "name"
        sb.add_text_field(name, stored=stored, tokenizer_name=STEMMED, index_option="freq")
    sb.add_bytes_field(TERMS_FIELD, stored=True)
    sb.add_unsigned_field(LENGTH_FIELD, fast=True)
    sb.add_text_field(PREFIX_FIELD, tokenizer_name=PLAIN, index_option="basic")
    sb.add_date_field("updated", indexed=True, fast=True)
    for n in range(ID_WORDS):
        sb.add_unsigned_field(f"id{n}", fast=True)
    return sb.build()


def id_words(doc_id: str) -> list[int]:
    """An id's first 32 UTF-8 bytes, zero-padded, as big-endian u64 words.

    Comparing the words compares the ids (UTF-8 byte order is code point
    order), so ties break by id from fast fields, without loading documents.
    """
    raw = doc_id.encode("utf-8")[: ID_WORDS * 8].ljust(ID_WORDS * 8, b"\0")
    return [int.from_bytes(raw[n * 8 : n * 8 + 8], "big") for n in range(ID_WORDS)]


def id_from_words(words_: Sequence[int]) -> str | None:
    """The id back from its words; None when it may be longer than 32 bytes."""
    raw = _ID_PACK.pack(*words_)
    if raw[-1] != 0:
        return None
    return raw.rstrip(b"\0").decode("utf-8", errors="replace")


def to_document(doc: Doc) -> tantivy.Document:
    """A `Doc` as a tantivy document."""
    out = tantivy.Document()
    out.add_text("id", doc.id)
    out.add_text("fp", doc.fingerprint())
    out.add_text("item", doc.item)
    out.add_text("project", doc.project if doc.project is not None else GLOBAL)
    out.add_text("active", "1" if doc.active else "0")
    out.add_text("kind", doc.kind)
    for tag in doc.tags:
        out.add_text(TAG_FIELD, tag)
    out.add_text("agent_id", doc.agent_id)
    out.add_text("session_id", doc.session_id)
    out.add_float("importance", float(doc.importance))
    if doc.created is not None:
        out.add_integer("created", micros(doc.created))
    tags = " ".join(doc.tags)
    texts = {"name": doc.name, "title": doc.title, "description": doc.description}
    texts |= {"body": doc.body, "tags": tags}
    for name, text in texts.items():
        out.add_text(name, text)
    visible = " ".join((doc.name, doc.title, doc.description, doc.body, tags))
    out.add_text("text", visible)
    out.add_text("context", " ".join(doc.context))
    streams = [_ANALYZER.analyze(visible), *(_ANALYZER.analyze(t) for t in doc.context)]
    out.add_bytes(TERMS_FIELD, bm25.encode(streams).encode())
    out.add_unsigned(LENGTH_FIELD, len(streams[0]))
    out.add_text(PREFIX_FIELD, visible)
    if doc.updated is not None:
        out.add_date("updated", doc.updated)
    for n, word in enumerate(id_words(doc.id)):
        out.add_unsigned(f"id{n}", word)
    return out


def attribute_clauses(schema: tantivy.Schema, where: Filter) -> list[tantivy.Query]:
    """Recall's attribute filters (tags ... until) as MUST queries (mirrors `Filter.admits`)."""
    must: list[tantivy.Query] = []
    if where.memories_only:
        must.append(tantivy.Query.term_query(schema, "item", MEMORY))
    for field in ("agent_id", "session_id"):
        value = getattr(where, field)
        if value is not None:
            must.append(tantivy.Query.term_query(schema, field, value))
    must.extend(tantivy.Query.term_query(schema, TAG_FIELD, tag) for tag in where.tags)
    if where.any_tags:
        must.append(any_of(schema, TAG_FIELD, where.any_tags))
    if where.min_importance is not None:
        floor = float(where.min_importance)
        must.append(tantivy.Query.range_query(schema, "importance", tantivy.FieldType.Float, floor))
    if where.since is not None or where.until is not None:
        low = None if where.since is None else micros(where.since)
        high = None if where.until is None else micros(where.until)
        must.append(
            tantivy.Query.range_query(schema, "created", tantivy.FieldType.Integer, low, high)
        )
    return must


def filter_clauses(
    schema: tantivy.Schema, where: Filter
) -> list[tuple[tantivy.Occur, tantivy.Query]]:
    """`where` as zero-scored MUST / MUST_NOT clauses (mirrors `Filter.admits`)."""
    must: list[tantivy.Query] = attribute_clauses(schema, where) if where.narrowed else []
    if where.active_only:
        must.append(tantivy.Query.term_query(schema, "active", "1"))
    if where.items is not None:
        must.append(any_of(schema, "item", where.items))
    if where.kinds is not None:
        must.append(any_of(schema, "kind", where.kinds))
    if (visible := visible_query(schema, where.visible)) is not None:
        must.append(visible)
    clauses = [(tantivy.Occur.Must, tantivy.Query.const_score_query(q, 0.0)) for q in must]
    if where.projects is None and not where.include_global:
        global_ = tantivy.Query.term_query(schema, "project", GLOBAL)
        clauses.append((tantivy.Occur.MustNot, global_))
    return clauses


def visible_query(schema: tantivy.Schema, visible: Visible) -> tantivy.Query | None:
    """The documents of the projects a search may see (`Filter.visible`; None: all)."""
    if visible is None:
        return None
    projects, include_global = visible
    return any_of(schema, "project", (*projects, *([GLOBAL] if include_global else [])))


def any_of(schema: tantivy.Schema, field: str, values: Sequence[str]) -> tantivy.Query:
    """Exact match on any of `values` (term queries: a term set is slower here)."""
    if not values:
        return tantivy.Query.empty_query()
    if len(values) == 1:
        return tantivy.Query.term_query(schema, field, values[0])
    terms = [(tantivy.Occur.Should, tantivy.Query.term_query(schema, field, v)) for v in values]
    return tantivy.Query.boolean_query(terms)


def mark(fragment: str, ranges: Sequence[tuple[int, int]]) -> str:
    """Wrap each highlighted range in \\x01 ... \\x02.

    tantivy's ranges are byte offsets into the UTF-8 fragment, not character
    offsets, so the slicing happens on bytes. Stray sentinels in the source
    text are dropped so the renderer can trust them.
    """
    raw = fragment.encode("utf-8")
    parts: list[str] = []
    pos = 0
    for start, end in sorted(ranges):
        if start < pos:
            continue
        parts.append(_plain(raw[pos:start]))
        parts.append("\x01" + _plain(raw[start:end]) + "\x02")
        pos = end
    parts.append(_plain(raw[pos:]))
    return "".join(parts)


def _plain(chunk: bytes) -> str:
    return chunk.decode("utf-8", errors="replace").replace("\x01", "").replace("\x02", "")


def head(fields: dict[str, str]) -> str:
    """The first words of the first non-empty snippet field (no match shown)."""
    for name in (*SNIPPET_FIELDS, "name"):
        text = fields.get(name) or ""
        if text.strip():
            return _plain(" ".join(text.split()[:HEAD_WORDS]).encode("utf-8"))
    return ""


class TantivyIndex:
    """`TextIndex` on a tantivy index directory (see the module docstring)."""

    def __init__(
        self,
        path: Path | str,
        *,
        writer_heap_mb: int = 64,
        lock_timeout_s: float = 10.0,
        rescore: bool = True,
        params: bm25.Bm25F = PARAMS,
        rare_df: int = RARE_DF,
    ) -> None:
        """`rescore` False ranks by tantivy's own BM25 (b 0.75), `params` other
        BM25F parameters, `rare_df` 0 re-scores tantivy's best alone (all for
        ablations)."""
        if writer_heap_mb < MIN_HEAP_MB:
            raise ValueError(f"writer_heap_mb must be >= {MIN_HEAP_MB}, got {writer_heap_mb}")
        if lock_timeout_s < 0:
            raise ValueError(f"lock_timeout_s must be >= 0, got {lock_timeout_s}")
        self.path = Path(path)
        self._heap = writer_heap_mb * 1_000_000
        self._lock_timeout_s = lock_timeout_s
        self.rescore = rescore
        self.params = params
        self.rare_df = rare_df
        self._opened: tantivy.Index | None = None
        with suppress(IndexUnavailable):  # a damaged folder: see `_index`
            self._opened = self._open()
        self._expansions: dict[tuple[str, Visible], list[str]] = {}
        self._expansions_shape: tuple[int, int] = (-1, -1)
        self._statistics: ScopeStatistics[tuple[int, float]] = ScopeStatistics()
        self._meta = self._read_meta()
        # `bulk`'s writer while it runs, and the thread that holds it (another
        # thread's writes wait for the lock, as another process's do).
        self._held: tuple[int, tantivy.IndexWriter] | None = None
        self._keeper: int | None = None  # the thread keeping a writer between writes (`kept`)
        self._kept: tantivy.IndexWriter | None = None

    @property
    def _index(self) -> tantivy.Index:
        """The open index. A folder that could not be opened (damaged) is tried again
        at each use, and its IndexUnavailable reaches the user: the full-text channel
        skipped with a warning, an index job kept queued, while the server's other
        planes go on answering; `manage.py reindex` mends the folder."""
        if self._opened is None:
            self._opened = self._open()
        return self._opened

    @property
    def _schema(self) -> tantivy.Schema:
        return self._index.schema

    def _open(self) -> tantivy.Index:
        try:
            layout.prepare(self.path, "the tantivy text index", version=LAYOUT)
            if tantivy.Index.exists(str(self.path)):
                index = tantivy.Index.open(str(self.path))
            else:
                index = tantivy.Index(build_schema(), str(self.path), reuse=False)
            index.register_tokenizer(STEMMED, _ANALYZER)
            index.register_tokenizer(PLAIN, _PLAIN)
            index.config_reader("commit")
        except (OSError, ValueError) as exc:
            raise IndexUnavailable(f"cannot open the text index at {self.path}: {exc}") from exc
        return index

    # -- writes -------------------------------------------------------------

    def upsert(self, docs: Sequence[Doc]) -> None:
        """Replace documents by id (delete the id's term, then add)."""
        if not docs:
            return
        with self._writer(len(docs)) as writer:
            for doc in docs:
                writer.delete_documents_by_term("id", doc.id)
                writer.add_document(to_document(doc))

    def delete(self, ids: Sequence[str]) -> None:
        """Delete documents by id; unknown ids are ignored."""
        if not ids:
            return
        with self._writer(1) as writer:
            for doc_id in ids:
                writer.delete_documents_by_term("id", doc_id)

    def clear(self) -> None:
        """Delete every document."""
        with self._writer(1) as writer:
            writer.delete_all_documents()

    @contextmanager
    def bulk(self) -> Iterator[None]:
        """Hold one writer for every write inside (a rebuild): one commit when the block
        ends, none if it raises (the index stays as it was). Readers see the old index
        until then; other writers wait for the lock, as for any batch."""
        if self._holding() is not None:  # already inside one
            yield
            return
        with self._writer(BULK_BATCH) as writer:
            self._held = (threading.get_ident(), writer)
            try:
                yield
            finally:
                self._held = None

    @contextmanager
    def kept(self) -> Iterator[None]:
        """Keep the writer between this thread's writes inside the block (see the
        module docstring); leaving the block lets it go."""
        if self._keeper is not None:
            raise RuntimeError("a writer is already kept")
        self._keeper = threading.get_ident()
        try:
            yield
        finally:
            self.let_go()
            self._keeper = None

    def let_go(self) -> None:
        """Give back the kept writer (waiting for its merges); the next write takes it again."""
        writer, self._kept = self._kept, None
        if writer is not None:
            writer.wait_merging_threads()

    @contextmanager
    def _writer(self, batch: int) -> Iterator[tantivy.IndexWriter]:
        """The writer for one batch: commit on success, always release the lock
        (inside `bulk`, its writer, committed when the bulk block ends; inside
        `kept`, the kept writer, released only by `let_go`)."""
        held = self._holding()
        if held is not None:
            yield held
            return
        keeping = self._keeper == threading.get_ident()
        writer = self._kept if keeping and self._kept is not None else self._acquire(batch)
        if keeping:
            self._kept = None  # kept again once this batch has committed
        try:
            yield writer
            writer.commit()
        except BaseException as exc:
            writer.rollback()
            writer.wait_merging_threads()
            if isinstance(exc, ValueError):
                problem = f"cannot write the text index at {self.path}: {exc}"
                raise IndexUnavailable(problem) from exc
            raise
        if keeping:
            self._kept = writer
        else:
            writer.wait_merging_threads()
        self._meta = self._read_meta()  # before the reload: it sees at least this commit
        self._index.reload()
        self._expansions.clear()

    def _holding(self) -> tantivy.IndexWriter | None:
        """`bulk`'s writer, if this thread holds one."""
        held = self._held
        return held[1] if held is not None and held[0] == threading.get_ident() else None

    def _acquire(self, batch: int) -> tantivy.IndexWriter:
        """Take the writer lock, retrying with backoff up to the lock timeout."""
        threads = 1 if batch < 2000 else max(1, min(4, self._heap // 20_000_000))
        deadline = time.monotonic() + self._lock_timeout_s
        delay = 0.005
        while True:
            try:
                return self._index.writer(heap_size=self._heap, num_threads=threads)
            except ValueError as exc:
                if "Lock" not in str(exc):
                    raise IndexUnavailable(f"cannot write the text index: {exc}") from exc
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise IndexUnavailable(
                        f"the text index at {self.path} is locked by another writer; "
                        f"gave up after {self._lock_timeout_s:g}s"
                    ) from exc
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, 0.25)

    # -- reads --------------------------------------------------------------

    def search(
        self,
        text: str,
        *,
        where: Filter,
        limit: int,
        snippets: bool = False,
        prefix: bool = False,
    ) -> list[Candidate]:
        """BM25F filtered by `where`, ties by id ascending (tantivy's own BM25 with
        `rescore` off, and for a prefix over every project)."""
        query_words = words(text, keep_short_last=prefix)
        if not query_words or limit <= 0:
            return []
        try:
            searcher = self._searcher()
            terms = self._terms(searcher, query_words, where, prefix=prefix)
            if not terms:
                return []
            query = self._query(terms, where)
            loaded: dict[tuple[int, int], tantivy.Document] = {}
            if not self.rescore or (prefix and where.visible is None):
                # As you type over every project: tantivy's own score, its statistics
                # the whole index's (re-scoring doubled the palette's 3-letter p50).
                ranked = self._top(searcher, query, limit)
            else:
                prior = self.params.prior_rows > 0
                figures = self._figures(searcher, where, terms)
                pool = self._top(searcher, query, max(limit, RESCORE_POOL))
                pool += self._rare_matches(searcher, figures[2], where, pool)
                sequence = [t for word in query_words for t in stems(word)]
                known = background.term_frequencies(query_words, stems) if prior else {}
                ranked = self._rescored(searcher, figures, sequence, known, pool, loaded)
                ranked = ranked[:limit]
            marked = self._snippet_query(terms) if snippets else None
            generators: dict[str, tantivy.SnippetGenerator] = {}
            out = []
            for n, (score, doc_id, address) in enumerate(ranked, 1):
                snippet = None
                if marked is not None:
                    doc = loaded.get(_key(address)) or searcher.doc(address)
                    snippet = self._snippet(searcher, marked, doc, generators)
                out.append(Candidate(id=doc_id, rank=n, score=score, snippet=snippet))
            return out
        except (OSError, ValueError) as exc:
            raise IndexUnavailable(f"cannot search the text index at {self.path}: {exc}") from exc

    def snippets(
        self, text: str, ids: Sequence[str], *, where: Filter, prefix: bool = False
    ) -> dict[str, str]:
        """Each of `ids` that `search` finds: the snippet it gives (a page's hits
        after a deeper ranking read without them)."""
        query_words = words(text, keep_short_last=prefix)
        if not query_words or not ids:
            return {}
        try:
            searcher = self._searcher()
            terms = self._terms(searcher, query_words, where, prefix=prefix)
            if not terms:
                return {}
            chosen = tantivy.Query.term_set_query(self._schema, "id", list(ids))
            query = tantivy.Query.boolean_query(
                [(tantivy.Occur.Must, self._query(terms, where)), (tantivy.Occur.Must, chosen)]
            )
            marked = self._snippet_query(terms)
            generators: dict[str, tantivy.SnippetGenerator] = {}
            out = {}
            for _, address in searcher.search(query, limit=len(ids), count=False).hits:
                doc = searcher.doc(address)
                out[_first(doc, "id")] = self._snippet(searcher, marked, doc, generators)
            return out
        except (OSError, ValueError) as exc:
            raise IndexUnavailable(f"cannot search the text index at {self.path}: {exc}") from exc

    def _figures(
        self, searcher: tantivy.Searcher, where: Filter, terms: list[str]
    ) -> tuple[int, float, dict[str, int]]:
        """BM25's collection statistics over the projects `where` may see
        (`recall.indexes.scope_statistics`): rows, mean own-text length and how
        many rows hold each term (own text first, else a turn's context)."""
        reader = (hash(self._meta), int(searcher.num_docs), int(searcher.num_segments))
        scope = visible_query(self._schema, where.visible)

        def frequency(_: object, term: str) -> int:
            if scope is None:  # the whole index: its own counts
                return int(searcher.doc_freq("text", term) or searcher.doc_freq("context", term))
            held = (self._count(searcher, scope, f, term) for f in ("text", "context"))
            return next((n for n in held if n), 0)

        whole = scope if scope is not None else tantivy.Query.all_query()
        (rows, mean), dfs = self._statistics.figures(
            reader, where.visible, terms, shape=lambda: self._shape(searcher, whole),
            frequency=frequency,
        )  # fmt: skip
        return rows, mean, dfs

    def _count(
        self, searcher: tantivy.Searcher, scope: tantivy.Query, field: str, term: str
    ) -> int:
        """How many documents of `scope` hold `term` in `field`."""
        held = tantivy.Query.term_query(self._schema, field, term)
        both = [(tantivy.Occur.Must, held), (tantivy.Occur.Must, scope)]
        found: Any = searcher.search(tantivy.Query.boolean_query(both), limit=1, count=True)
        return int(found.count)

    @staticmethod
    def _shape(searcher: tantivy.Searcher, scope: tantivy.Query) -> tuple[int, float]:
        """How many documents `scope` holds and their mean own-text length."""
        found: Any = searcher.aggregate(scope, {"s": {"stats": {"field": LENGTH_FIELD}}})
        return int(found["s"]["count"] or 0), float(found["s"]["avg"] or 0.0)

    def _rare_matches(
        self,
        searcher: tantivy.Searcher,
        dfs: Mapping[str, int],
        where: Filter,
        pool: list[tuple[float, str, tantivy.DocAddress]],
    ) -> list[tuple[float, str, tantivy.DocAddress]]:
        """The matches of the query's rare terms (at most RARE_DF documents hold
        each) that `pool` lacks.

        tantivy's own BM25 (b 0.75) ranks a long text holding the query's
        rarest word below every short one holding a commoner word of the
        query: past RESCORE_POOL of those, the runbook holding the identifier
        asked for never reached the re-score, which reads its passages. Every
        document holding a rare term is read: a few more reads, at most
        RARE_DF a term.
        """
        rare = [t for t, df in dfs.items() if 0 < df <= self.rare_df]
        if not rare:
            return []
        seen = {doc_id for _, doc_id, _ in pool}
        found = self._top(searcher, self._query(rare, where), self.rare_df * len(rare))
        return [hit for hit in found if hit[1] not in seen]

    def _rescored(
        self,
        searcher: tantivy.Searcher,
        figures: tuple[int, float, Mapping[str, int]],
        sequence: list[str],
        known: Mapping[str, float],
        ranked: list[tuple[float, str, tantivy.DocAddress]],
        loaded: dict[tuple[int, int], tantivy.Document],
    ) -> list[tuple[float, str, tantivy.DocAddress]]:
        """`ranked` scored again with BM25F (`recall.bm25`), best first, ties by id.

        `figures` are the scope's statistics (`_figures`); `sequence` is the
        query's terms in its order (with repeats), for the pairs of
        neighbouring words; `known` their frequencies in English at large, the
        prior of the scope's idf (`recall.background`; a prefix's expansions
        count as rare). The documents read are kept in `loaded`, by address,
        for the snippets.
        """
        if not ranked:
            return ranked
        params = self.params
        rows, avglen, dfs = figures
        prior = background.Prior(known, avglen) if params.prior_rows else None
        weights = bm25.term_weights(dfs, rows, params, prior)
        pairs = bm25.pairs(sequence, weights) if params.proximity > 0 else []
        weights = bm25.pair_weights(pairs, weights, params)
        scorer = bm25.Scorer(weights, pairs, avglen=avglen, params=params)  # once a query
        out = []
        for _, doc_id, address in ranked:
            doc = searcher.doc(address)
            loaded[_key(address)] = doc
            stored: Any = doc.get_first(TERMS_FIELD)
            out.append((scorer.score(bytes(stored or b"0").decode()), doc_id, address))
        out.sort(key=lambda r: (-r[0], r[1]))
        return out

    def _terms(
        self, searcher: tantivy.Searcher, query_words: list[str], where: Filter, *, prefix: bool
    ) -> list[str]:
        """The stemmed terms to look for, with the last word's prefix expansion."""
        out: list[str] = []
        for word in query_words:
            out.extend(t for t in stems(word) if t not in out)
        if prefix:
            for word in self._expand(searcher, query_words[-1], where):
                out.extend(t for t in stems(word) if t not in out)
        return out

    def _expand(self, searcher: tantivy.Searcher, typed: str, where: Filter) -> list[str]:
        """The words starting with `typed` that most documents `where` may see hold.

        Counted over the visible projects alone (`Filter.visible`): ten words of
        a project the caller cannot see crowded its own out of the expansions, and
        the palette said "no memory matches" (a security review). The term
        dictionary gives every word with its index-wide count, best first; a
        word's count in scope is at most that, so counting stops once the next
        word's index-wide count cannot reach the tenth best in scope.

        Scanning the term dictionary for a 1- or 2-letter prefix costs about
        0.3 ms, so those expansions are cached per scope until this process
        commits or the index's shape (docs, segments) changes; a stale entry only
        misses a brand-new word for a moment.
        """
        shape = (searcher.num_docs, searcher.num_segments)
        if shape != self._expansions_shape:
            self._expansions.clear()
            self._expansions_shape = shape
        key = (typed, where.visible)
        cached = self._expansions.get(key)
        if cached is not None:
            return cached
        found = searcher.terms_with_prefix(PREFIX_FIELD, typed, limit=PREFIX_SCAN)
        ranked = sorted(found, key=lambda tf: (-tf[1], tf[0]))
        rows, _, _ = self._figures(searcher, where, [])
        common = max(PREFIX_COMMON_MIN, PREFIX_COMMON_SHARE * rows)
        scope = visible_query(self._schema, where.visible)

        def held(word: str, most: int) -> int:
            return most if scope is None else self._count(searcher, scope, PREFIX_FIELD, word)

        expanded = most_held(ranked, held, limit=PREFIX_EXPANSIONS, admit=lambda n: 0 < n <= common)
        if len(typed) <= 2:
            self._expansions[key] = expanded
        return expanded

    def _snippet_query(self, terms: list[str]) -> tantivy.Query:
        """The terms over the fields snippets are cut from (what gets marked)."""
        should = [
            (tantivy.Occur.Should, tantivy.Query.term_query(self._schema, field, term))
            for field in SNIPPET_FIELDS
            for term in terms
        ]
        return tantivy.Query.boolean_query(should)

    def _query(self, terms: list[str], where: Filter) -> tantivy.Query:
        should: list[tuple[tantivy.Occur, tantivy.Query]] = []
        for field in QUERY_FIELDS:
            for term in terms:
                q = tantivy.Query.term_query(self._schema, field, term)
                if field in BOOSTS:
                    q = tantivy.Query.boost_query(q, BOOSTS[field])
                should.append((tantivy.Occur.Should, q))
        text = tantivy.Query.boolean_query(should)
        return tantivy.Query.boolean_query(
            [(tantivy.Occur.Must, text), *filter_clauses(self._schema, where)]
        )

    def _top(
        self, searcher: tantivy.Searcher, query: tantivy.Query, limit: int
    ) -> list[tuple[float, str, tantivy.DocAddress]]:
        """The best `limit` hits as (score, id, address), ties broken by id.

        tantivy breaks ties by document address, so fetch a little more and,
        when the tie at the cut may extend past it, fetch every match.
        """
        result = searcher.search(query, limit=limit + FETCH_SLACK, count=True)
        hits = result.hits
        if len(hits) == limit + FETCH_SLACK and hits[-1][0] >= hits[limit - 1][0]:
            total = int(getattr(result, "count", 0) or 0) or 4 * len(hits)
            hits = searcher.search(query, limit=total, count=False).hits
        if len(hits) > limit:
            hits = self._settle_tie(searcher, hits, limit)
        ranked = [
            (float(score), doc_id, address)
            for (score, address), doc_id in zip(hits, self._ids_of(searcher, hits), strict=True)
        ]
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return ranked[:limit]

    @staticmethod
    def _settle_tie(
        searcher: tantivy.Searcher, hits: list[tuple[Any, tantivy.DocAddress]], limit: int
    ) -> list[tuple[Any, tantivy.DocAddress]]:
        """Keep the hits above the cut plus the tied ones with the smallest ids.

        The tie is settled on the ids' first 8 bytes (a fast field), keeping
        every hit that shares the deciding value, so a large tie loads no
        documents and decodes few ids.
        """
        cut = hits[limit - 1][0]
        above = [h for h in hits if h[0] > cut]
        tied = [h for h in hits if h[0] == cut]
        want = limit - len(above)
        if len(tied) <= want:
            return above + tied
        heads = [int(v or 0) for v in searcher.fast_field_values("id0", [a for _, a in tied])]
        bound = heapq.nsmallest(want, heads)[-1]
        return above + [h for h, head in zip(tied, heads, strict=True) if head <= bound]

    def _ids_of(
        self, searcher: tantivy.Searcher, hits: Sequence[tuple[Any, tantivy.DocAddress]]
    ) -> list[str]:
        """The ids of hits, from fast fields (stored documents for long ids)."""
        if not hits:
            return []
        addresses = [address for _, address in hits]
        columns = [searcher.fast_field_values(f"id{n}", addresses) for n in range(ID_WORDS)]
        out = []
        for address, words_ in zip(addresses, zip(*columns, strict=True), strict=True):
            doc_id = id_from_words([w or 0 for w in words_])
            out.append(doc_id if doc_id is not None else searcher.doc(address)["id"][0])
        return out

    def _snippet(
        self,
        searcher: tantivy.Searcher,
        query: tantivy.Query,
        doc: tantivy.Document,
        generators: dict[str, tantivy.SnippetGenerator],
    ) -> str:
        """The best fragment of body, else description, else title."""
        for field in SNIPPET_FIELDS:
            if not doc.get_first(field):
                continue
            generator = generators.get(field)
            if generator is None:
                generator = tantivy.SnippetGenerator.create(searcher, query, self._schema, field)
                generator.set_max_num_chars(SNIPPET_CHARS)
                generators[field] = generator
            snippet = generator.snippet_from_doc(doc)
            ranges = [(r.start, r.end) for r in snippet.highlighted()]
            if ranges:
                shown = snippet.fragment()
                before, after = fragments.widen(_first(doc, field), shown)
                shift = len(before.encode("utf-8"))  # the ranges are byte offsets
                moved = [(start + shift, end + shift) for start, end in ranges]
                return mark(before + shown + after, moved)
        return head({name: _first(doc, name) for name in (*SNIPPET_FIELDS, "name")})

    def ids(self) -> set[str]:
        """Every indexed id."""
        searcher = self._searcher()
        total = searcher.num_docs
        if total == 0:
            return set()
        hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
        return set(self._ids_of(searcher, hits))

    def fingerprints(self) -> list[tuple[str, str]]:
        """One (id, fingerprint) pair per live document."""
        searcher = self._searcher()
        total = searcher.num_docs
        if total == 0:
            return []
        hits = searcher.search(tantivy.Query.all_query(), limit=total, count=False).hits
        pairs = []
        for _, address in hits:
            stored = searcher.doc(address)
            pairs.append((_first(stored, "id"), _first(stored, "fp")))
        return pairs

    def count(self) -> int:
        """The number of live documents."""
        return int(self._searcher().num_docs)

    def stamp(self) -> object:
        """Which commit the reader sees (`recall.tiers.Stamped`): meta.json's bytes
        (its `opstamp` moves with every commit by any process; its change time alone
        did not: two commits within one file-system clock tick kept it) and the
        searcher's shape, which moves once this process's reader has reloaded."""
        searcher = self._searcher()
        if self._meta is None:
            return None
        return (hash(self._meta), int(searcher.num_docs), int(searcher.num_segments))

    def _read_meta(self) -> bytes | None:
        try:
            return (self.path / "meta.json").read_bytes()
        except OSError:
            return None

    def _searcher(self) -> tantivy.Searcher:
        """A searcher on the latest commit by any process (about 10 us to check)."""
        try:
            meta = self._read_meta()
            if meta != self._meta:
                self._index.reload()
                self._meta = meta
            return self._index.searcher()
        except ValueError as exc:
            raise IndexUnavailable(f"cannot read the text index at {self.path}: {exc}") from exc


def _key(address: tantivy.DocAddress) -> tuple[int, int]:
    return (int(address.segment_ord), int(address.doc))


def _first(doc: tantivy.Document, field: str) -> str:
    value: Any = doc.get_first(field)
    return value if isinstance(value, str) else ""
