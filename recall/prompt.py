"""PromptRecall: a fast lexical match of a user prompt against memory names.

IDF over the active in-scope memories' name + description, or the lead of
the body for a memory written without one (seamless's matcher): a memory
matches when it shares at least `min_shared_words`
distinct words (3+ letters, stopwords dropped; pairs of characters in Chinese and
Japanese, `terms`) with the prompt and its score,
sum of idf(w) over shared words / sqrt(number of its words), is at least
`min_score`; at most `max_hits`. idf(w) = ln(1 + N / df(w)) (always > 0).
Nothing clearing the floors gives "" (say "no match" rather than top-N).

The corpus is cached per scope for `ttl_seconds`; a stale corpus is served
while one background thread rebuilds it (stale-while-rebuild, single-flight).
A stale corpus whose text index has not moved since it was built (the plane's
`stamp`, as the hot tier reads it: any commit by any process moves it) is
kept for another `ttl_seconds` without a rebuild: a build reads up to
`corpus_limit` rows' (id, name, description, updated) (`MemoryStore.names`)
and holds the GIL for tens of milliseconds at 100,000 memories, which showed
in other requests' tails (one thread rebuilds the stale scopes, one after
another, pausing as it goes: `CorpusCache`). So a stale corpus is refreshed
rather than built again: only the names updated since its newest row (less
`SINCE_OVERLAP`) are read and applied (`refresh`); it is built whole when
much changed (`GROWTH`, `REPLACED`) and at least every `WHOLE_AFTER`. A write
is then seen once the index has applied it (within the index lag) and the
corpus next goes stale; a write this process committed (`Engine.forget`)
makes its corpora stale at once (`CorpusCache.written`), so an agent's own
write shows in its next prompts within about a second.
A match itself is read from the store: a memory edited, archived or expired
since the build shows as it is now, or not at all; one superseded since shows as
its replacement (`current`).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Literal, overload

from recall import sanitize, tiers
from recall.config import MIN_TEXT_BUDGET, PromptConfig
from recall.errors import QueryError
from recall.planes import Planes
from recall.ports import MemoryStore, TokenCounter
from recall.query import CJK, CJK_CHAR, fold, stem
from recall.requests import PromptRequest
from recall.results import PromptResult, lead
from recall.scope import recall_filter
from recall.scoring import admits
from recall.types import Filter, Named, Record

log = logging.getLogger(__name__)

_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
_STOPWORDS = """
    about above after again against all also and any are because been before being
    below between both but can could did does doing down during each few for from
    further had has have having her here hers him his how into its itself just let
    more most not now off once only other our ours out over own same she should
    some such than that the their theirs them then there these they this those
    through too under until very was were what when where which while who whom why
    will with would you your yours use using used make want need please
"""
STOPWORDS = frozenset(_STOPWORDS.split())


_SCRIPT = re.compile(f"[{CJK}]+|[^{CJK}]+")  # a word's runs of kana and ideographs, and the rest


def terms(text: str, *, min_chars: int = 3) -> frozenset[str]:
    """Distinct lower-cased, folded words (`recall.query.fold`) of `min_chars`+ letters,
    stopwords dropped, as Porter
    stems ("migrations" and "migration" are one word: a prompt about one missed the
    memory saying the other). Kana and ideographs are written without spaces: a run of
    them gives its overlapping pairs of characters ("部件服务" -> 部件, 件服, 服务), a
    lone one itself."""
    out: set[str] = set()
    for found in _WORD.findall(text):
        word = fold(found.lower())
        if not CJK_CHAR.search(word):
            if len(word) >= min_chars and word not in STOPWORDS:
                out.add(stem(word))
            continue
        for run in _SCRIPT.findall(word):
            if not CJK_CHAR.match(run):
                if len(run) >= min_chars and run not in STOPWORDS:
                    out.add(stem(run))
            elif len(run) == 1:
                out.add(run)
            else:
                out.update(run[n : n + 2] for n in range(len(run) - 1))
    return frozenset(out)


PAUSE_EVERY = 50  # rows between a background build's pauses (about 0.7 ms of work)
PAUSE_S = 0.001
# A refresh re-reads the names updated within this much before the newest it
# has read: a write whose transaction committed after a later one's did is
# still seen (and rows read twice are recognised by their `updated`).
SINCE_OVERLAP = timedelta(seconds=10)
# A refresh that would read more than this share of corpus_limit rows, or leave
# the corpus past corpus_limit * (1 + GROWTH) records or a REPLACED share of its
# positions replaced, builds the corpus whole instead.
GROWTH = 0.25
REPLACED = 0.10
# A write this process committed makes a corpus read before it stale (`written`),
# but a corpus is refreshed for that at most once a WRITTEN_GAP seconds.
WRITTEN_GAP = 1.0
# ...and one built whole this long ago is built whole again: a memory imported
# with an `updated` from the past is older than any refresh reads.
WHOLE_AFTER = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class Corpus:
    """The matcher's index of one scope: its records' ids, each one's sqrt(number of
    words), each word's postings (the positions of the records holding it).

    An inverted index of ids rather than records with their word sets: 64,000
    records of 13 scopes took 197 MB as records with a frozenset each; a prompt
    reads only the postings of its own words, and its few matches are read
    from the store (`matches`), as they are now.

    `rows` (N in idf, wordless records included), `at` (each record's position
    and the `updated` it was read at; -1 for a wordless one) and `newest` let
    `refresh` apply what changed since. A record changed since is appended and
    its old position emptied ("" in `ids`): the old words stay in the postings
    (and in each word's df) until the corpus is next built whole."""

    ids: tuple[str, ...]
    norms: tuple[float, ...]
    postings: dict[str, array[int]]
    rows: int = 0
    at: dict[str, tuple[int, datetime | None]] = field(default_factory=dict)
    newest: datetime | None = None
    replaced: int = 0

    def idf(self, word: str) -> float | None:
        """ln(1 + N / df(word)); None for a word no record holds."""
        found = self.postings.get(word)
        return None if found is None else math.log(1 + self.rows / len(found))

    def fits(self, limit: int) -> bool:
        """Small enough, and few enough positions replaced, to refresh once more."""
        return self.rows <= limit * (1 + GROWTH) and self.replaced <= REPLACED * len(self.ids)


EMPTY = Corpus((), (), {})


def build_corpus(
    rows: Iterable[Named],
    *,
    min_chars: int = 3,
    pause: Callable[[], None] | None = None,
) -> Corpus:
    """The corpus of (id, name, description, updated) rows (`MemoryStore.names`);
    `pause` is called every `PAUSE_EVERY` rows (`CorpusCache.pause`)."""
    return refresh(EMPTY, rows, min_chars=min_chars, pause=pause)


def refresh(
    corpus: Corpus,
    rows: Iterable[Named],
    *,
    min_chars: int = 3,
    pause: Callable[[], None] | None = None,
) -> Corpus:
    """`corpus` with `rows` applied, as a new corpus (`corpus` is left as it is
    for the requests reading it): a record not in it is added, one whose
    `updated` moved is added again and its old position emptied, one read at
    the same `updated` is skipped. Nothing to apply gives `corpus` itself."""
    rows = list(rows)
    if all(_read_before(corpus, row) for row in rows):
        return corpus  # no copy: a refresh usually finds nothing new in its scope
    ids = list(corpus.ids)
    norms = list(corpus.norms)
    at = dict(corpus.at)
    grown: dict[str, list[int]] = {}
    n, replaced, newest = corpus.rows, corpus.replaced, corpus.newest
    for k, (memory_id, name, description, updated) in enumerate(rows, 1):
        if pause is not None and k % PAUSE_EVERY == 0:
            pause()
        if updated is not None and (newest is None or updated > newest):
            newest = updated
        old = at.get(memory_id)
        if old is None:
            n += 1  # every record counts in idf's N, a wordless one too
        elif old[1] == updated:
            continue  # read before (the overlap of `SINCE_OVERLAP`)
        elif old[0] >= 0:
            ids[old[0]] = ""
            replaced += 1
        found = terms(f"{name} {description}", min_chars=min_chars)
        if not found:
            at[memory_id] = (-1, updated)  # shares no word with any prompt
            continue
        for w in found:
            grown.setdefault(w, []).append(len(ids))
        at[memory_id] = (len(ids), updated)
        ids.append(memory_id)
        norms.append(math.sqrt(len(found)))
    postings = dict(corpus.postings)
    for w, added in grown.items():
        held = postings.get(w)
        postings[w] = array("I", held if held is not None else ()) + array("I", added)
    return Corpus(tuple(ids), tuple(norms), postings, n, at, newest, replaced)


def _read_before(corpus: Corpus, row: Named) -> bool:
    """`row` is in `corpus` as it is now (the same `updated`)."""
    kept = corpus.at.get(row.id)
    return kept is not None and kept[1] == row.updated


def match(corpus: Corpus, prompt: str, config: PromptConfig) -> list[tuple[str, float]]:
    """Ids of the records clearing both floors with their scores, best first (ties by
    id), at most max_hits."""
    shared: dict[int, int] = {}
    weight: dict[int, float] = {}
    for w in sorted(terms(prompt, min_chars=config.min_word_chars)):
        idf = corpus.idf(w)
        if idf is None:
            continue
        for at in corpus.postings[w]:
            shared[at] = shared.get(at, 0) + 1
            weight[at] = weight.get(at, 0.0) + idf
    found: list[tuple[str, float]] = []
    for at, count in shared.items():
        if count < config.min_shared_words or not corpus.ids[at]:
            continue  # too few shared words, or a position a refresh emptied
        score = weight[at] / corpus.norms[at]
        if score >= config.min_score:
            found.append((corpus.ids[at], score))
    found.sort(key=lambda t: (-t[1], t[0]))
    return found[: config.max_hits]


def listed(name: str, meta: str, description: str) -> str:
    """One memory as a line of a block (this one's, the briefing's index): name, [meta],
    then its description; a memory without one ends at its meta."""
    return f"- {name} [{meta}]: {description}" if description else f"- {name} [{meta}]"


def render(
    records: Sequence[Record],
    config: PromptConfig,
    *,
    budget: int,
    counter: TokenCounter,
    home: str | None = None,
) -> tuple[str, tuple[str, ...]]:
    """The block an agent sees (one tag pair, one sanitized line per memory) and
    the ids in it: the best matches that fit `budget` tokens ("" if none does). A
    block that could not hold every match ends with a line that says how many more
    matched, in the budget too: a cut block read as every match there was. A global
    memory's line in a project's block says so ("global constraint"), as the
    briefing's does: it read as the project's own, which the agent may not change."""
    head = [f"<{config.tag}>", "Memories that may bear on this prompt (memory_read by name):"]
    tail = [f"</{config.tag}>"]

    def fits(lines: Sequence[str], left: int, *, short: bool = False) -> bool:
        text = "\n".join([*head, *lines, *_more(left, short=short), *tail])
        return counter.count(text) <= budget

    shown: list[str] = []
    ids: list[str] = []
    for n, r in enumerate(records):
        desc = sanitize.field(lead(r.description, r.body), config.description_chars)
        kind = sanitize.name(r.kind)
        if r.project is None and home is not None:
            kind = f"global {kind}"
        line = listed(sanitize.name(r.name), kind, desc)
        left = len(records) - n - 1
        # The short last line for a first line alone: no line at all says less than
        # one line and "(+1 more matched)" (at 50 tokens: "no line of them fits").
        if not (fits([*shown, line], left) or (not shown and fits([line], left, short=True))):
            break
        shown.append(line)
        ids.append(r.id)
    if not shown:
        return "", ()
    left = len(records) - len(shown)
    last = _more(left, short=not fits(shown, left))
    return "\n".join([*head, *shown, *last, *tail]), tuple(ids)


def _more(left: int, *, short: bool = False) -> list[str]:
    """The block's last line when `left` matches did not fit it (`short`: the fewest
    words that say so, for a budget with no room for more)."""
    if not left:
        return []
    return [
        f"(+{left} more matched)" if short else f"(+{left} more matched: ask with a larger budget)"
    ]


Refresh = Callable[[Corpus], Corpus | None]  # None: too much changed, build it whole


class CorpusCache:
    """Corpora per scope key, fresh for a TTL, then served stale while rebuilt.

    `get` builds synchronously only when a key has no corpus yet. A stale
    corpus is returned at once and its rebuild is queued (single-flight: a
    key already queued or building is not queued again), unless `stamp`
    (what the data looked like; None: unknown) equals the one it was built
    at: then it is fresh again without a rebuild. `written` (a write this
    process committed) makes every corpus read before it stale, whatever its
    TTL and stamp, and such a corpus is refreshed in the request that next
    looks (a refresh reads only what changed: 3 ms at 100,000 memories), so
    the writer's next prompt sees its write; a build it would need is queued.
    With `refresh`, a rebuild passes it the stale corpus (to
    apply what changed since, `refresh` in this module; None back: `build`
    after all) instead of calling `build`, unless the key was last built
    whole `whole_after` ago or `expire(whole=True)` asked for a build
    (`builds` and `refreshes` count each kind).

    One background thread works the queue, one rebuild at a time: a thread
    per stale scope (13 at once at 100,000 memories under writes) took the
    GIL from the requests and put PromptRecall's p99 at 185 ms. That thread
    also pauses (`pause`) every few rows of a build: a request that released
    the GIL for the database otherwise waited for the build's 5 ms switch
    interval at each read (the convoy effect), and prompts timed during
    rebuilds at 100,000 took p95 32 ms, then 2.4-2.8 ms. `background=False`
    rebuilds synchronously (deterministic tests). `finished` runs at the end
    of the rebuilding thread, once its queue is empty (the console returns
    the thread's database connection to its pool there).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], datetime],
        background: bool = True,
        finished: Callable[[], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        whole_after: timedelta = WHOLE_AFTER,
    ) -> None:
        self._clock = clock
        self._whole_after = whole_after
        self._built: dict[Hashable, datetime] = {}  # when each key was last built whole
        self._sleep = sleep
        self._on_rebuilder = threading.local()
        self._background = background
        self._finished = finished
        self._lock = threading.Lock()
        self._corpora: dict[Hashable, _Kept] = {}
        self._written: datetime | None = None  # this process's latest write (`written`)
        self._whole: set[Hashable] = set()  # keys whose next rebuild is `build`
        self._building: set[Hashable] = set()
        self._queue: deque[_Job] = deque()
        self._draining = False
        self.builds = 0
        self.refreshes = 0

    def get(
        self,
        key: Hashable,
        build: Callable[[], Corpus],
        *,
        ttl: float,
        stamp: object = None,
        refresh: Refresh | None = None,
    ) -> Corpus:
        now = self._clock()
        with self._lock:
            cached = self._corpora.get(key)
            stale = cached is None or (now - cached.fresh).total_seconds() >= ttl
            wrote = cached is not None and self._wrote_since(cached, now)
            moved = cached is None or stamp is None or cached.stamp != stamp
            if stale and not wrote and not moved and cached is not None:
                self._corpora[key] = replace(cached, fresh=now)  # nothing moved: fresh again
                return cached.corpus
            start = (stale or wrote) and key not in self._building
            if start:
                self._building.add(key)
        job = _Job(key, build, stamp, refresh)
        if cached is None:
            if start:
                return self._rebuild(job)
            return build()  # another caller is building the first corpus
        if start:
            if not self._background:
                return self._rebuild(job)
            if wrote and refresh is not None:  # the writer reads its own write at once
                renewed = self._rebuild(job, whole=False)
                if renewed is not None:
                    return renewed
                with self._lock:
                    self._building.add(key)
            self._enqueue(job)
        return cached.corpus

    def written(self) -> None:
        """This process committed a write: each corpus read before it is refreshed
        on its next look, whatever its TTL and stamp (the index may not have
        applied the write yet; the refresh reads the store), at most once every
        `WRITTEN_GAP`: the writer's next prompts see what it wrote."""
        with self._lock:
            self._written = self._clock()

    def _wrote_since(self, kept: _Kept, now: datetime) -> bool:
        return (
            self._written is not None
            and kept.read <= self._written
            and (now - kept.read).total_seconds() >= WRITTEN_GAP
        )

    def _enqueue(self, job: _Job) -> None:
        """Queue one rebuild; start the rebuilding thread unless it is running."""
        with self._lock:
            self._queue.append(job)
            if self._draining:
                return
            self._draining = True
        threading.Thread(target=self._drain, daemon=True, name="prompt-corpora").start()

    @overload
    def _rebuild(self, job: _Job) -> Corpus: ...

    @overload
    def _rebuild(self, job: _Job, *, whole: Literal[False]) -> Corpus | None: ...

    def _rebuild(self, job: _Job, *, whole: bool = True) -> Corpus | None:
        """Build (or refresh) and keep the corpus with the job's stamp, read before
        the build (a write landing during it moves the stamp past this one: the
        next look rebuilds). `whole=False` only refreshes (a request right after
        its own write: a few ms): None, and nothing kept, where a build is due."""
        key = job.key
        read = self._clock()  # what the build reads is at least this new
        with self._lock:
            cached = self._corpora.get(key)
            due = read - self._built.get(key, datetime.min.replace(tzinfo=UTC))
            rebuilt = cached is None or key in self._whole or due >= self._whole_after
            previous = None if rebuilt or cached is None else cached.corpus
            if whole:
                self._whole.discard(key)
        try:
            renewed = None if previous is None or job.refresh is None else job.refresh(previous)
            if renewed is None and not whole:
                with self._lock:
                    self._whole.add(key)  # the queued rebuild builds it
                return None
            corpus, whole = (job.build(), True) if renewed is None else (renewed, False)
            with self._lock:
                self._corpora[key] = _Kept(self._clock(), corpus, job.stamp, read)
                if whole:
                    self._built[key] = read
                self.builds += whole
                self.refreshes += not whole
            return corpus
        except Exception:
            log.exception("prompt-recall corpus rebuild failed for %r", key)
            raise
        finally:
            with self._lock:
                self._building.discard(key)

    def pause(self) -> None:
        """On the rebuilding thread, leave the GIL to the requests for `PAUSE_S`;
        anywhere else (a first build a request waits for) return at once."""
        if getattr(self._on_rebuilder, "yes", False):
            self._sleep(PAUSE_S)

    def _drain(self) -> None:
        """Rebuild the queued keys one after another, then end the thread."""
        self._on_rebuilder.yes = True
        try:
            while True:
                with self._lock:
                    if not self._queue:
                        self._draining = False
                        return
                    job = self._queue.popleft()
                try:
                    self._rebuild(job)
                except Exception:  # logged in _rebuild; the stale corpus keeps serving
                    continue
        finally:
            if self._finished is not None:
                self._finished()

    def clear(self) -> None:
        with self._lock:
            self._corpora.clear()

    def expire(self, *, whole: bool = False) -> None:
        """Every corpus stale now, whatever its stamp: the next look at each is
        served it and queues its refresh, or with `whole` its build (a
        benchmark times requests so)."""
        with self._lock:
            for key, kept in self._corpora.items():
                self._corpora[key] = replace(
                    kept, fresh=datetime.min.replace(tzinfo=UTC), stamp=None
                )
                if whole:
                    self._whole.add(key)


@dataclass(frozen=True, slots=True)
class _Kept:
    """A scope's corpus: fresh since `fresh` (its TTL runs from there), built or
    refreshed at `stamp`, from what the store held at `read`."""

    fresh: datetime
    corpus: Corpus
    stamp: object
    read: datetime


@dataclass(frozen=True, slots=True)
class _Job:
    """One queued rebuild: build whole, or refresh the corpus there is."""

    key: Hashable
    build: Callable[[], Corpus]
    stamp: object
    refresh: Refresh | None


def matches(
    req: PromptRequest, *, planes: Planes, corpora: CorpusCache, config: PromptConfig
) -> list[Record]:
    """Memories in scope that clear the floors, best first (the pipeline's core).

    filter -> corpus (cached per scope) -> match -> hydrate -> guard.
    """
    if not req.prompt.strip():
        return []
    where = recall_filter(planes.store, project=req.project, scope="memories")

    limit, chars = config.corpus_limit, config.min_word_chars

    def build() -> Corpus:
        rows = planes.store.names(where=where, limit=limit)
        return build_corpus(rows, min_chars=chars, pause=corpora.pause)

    def renew(corpus: Corpus) -> Corpus | None:
        """What changed since `corpus` was read, applied; None when much did."""
        if corpus.newest is None:
            return None
        cap = int(limit * GROWTH)
        # not past now: a row dated ahead (an import from a clock that ran fast, the
        # speed bench's corpus) would otherwise hide every later write from refreshes
        since = min(corpus.newest, planes.clock()) - SINCE_OVERLAP
        rows = planes.store.names(where=where, limit=cap + 1, since=since)
        if len(rows) > cap:
            return None
        renewed = refresh(corpus, rows, min_chars=chars, pause=corpora.pause)
        return renewed if renewed.fits(limit) else None

    stamp = tiers.stamp(planes.text) if planes.text is not None else None
    corpus = corpora.get((where, limit), build, ttl=config.ttl_seconds, stamp=stamp, refresh=renew)
    ranked = [i for i, _ in match(corpus, req.prompt, config)]
    return current(planes.store, ranked, where)


SUCCESSION_HOPS = 3  # supersessions followed from a match (a chain written since the build)


def current(store: MemoryStore, ranked: Sequence[str], where: Filter) -> list[Record]:
    """The matched memories as they are now, in `ranked`'s order.

    Read now (hydrate leaves expired memories out): one archived or moved out of
    scope since the corpus was read is left out by the guard. One superseded
    since stands as its replacement (followed up to `SUCCESSION_HOPS`), which the
    corpus learns of only at its next refresh: the fact would otherwise leave the
    block until then (seconds, or a corpus TTL in another process), old and new
    version both missing. A replacement matched in its own right keeps its first
    place.
    """
    found = store.hydrate(ranked) if ranked else {}
    out: dict[str, Record] = {}
    for i in ranked:
        record = found.get(i)
        for _ in range(SUCCESSION_HOPS):
            if record is None or record.superseded_by is None or admits(where, record):
                break
            successor = record.superseded_by
            record = store.hydrate([successor]).get(successor)
        if record is not None and admits(where, record):
            out.setdefault(record.id, record)
    return list(out.values())


def run(
    req: PromptRequest, *, planes: Planes, corpora: CorpusCache, config: PromptConfig
) -> PromptResult:
    """The per-prompt recall block ("" when nothing clears the floors), its ids and tokens."""
    if req.budget is not None and req.budget < MIN_TEXT_BUDGET:
        # the least that holds the line saying why no block came (`MIN_TEXT_BUDGET`)
        raise QueryError(f"budget must be at least {MIN_TEXT_BUDGET}, not {req.budget}", "budget")
    records = matches(req, planes=planes, corpora=corpora, config=config)
    budget = req.budget if req.budget is not None else config.budget
    text, ids = render(records, config, budget=budget, counter=planes.tokens, home=req.project)
    if records and not text:  # matches the budget had no room for: say so, not nothing
        n = len(records)
        said = "1 memory matched, but its line does not fit" if n == 1 else (
            f"{n} memories matched, but no line of them fits"
        )  # fmt: skip
        warning = f"{said} {_tokens(budget)}: ask with a larger budget"
        return PromptResult("", (), 0, (warning,))
    warnings: tuple[str, ...] = ()
    if len(ids) < len(records):  # as the briefing says of its lines: not a silent cut
        warnings = (
            f"{len(records) - len(ids)} of the {len(records)} matched memories did not fit "
            f"{budget} tokens: ask with a larger budget",
        )
    return PromptResult(text, ids, planes.tokens.count(text) if text else 0, warnings)


def _tokens(n: int) -> str:
    return "1 token" if n == 1 else f"{n} tokens"
