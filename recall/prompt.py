"""PromptRecall: a fast lexical match of a user prompt against memory names.

IDF over the active in-scope memories' name + description (seamless's
matcher): a memory matches when it shares at least `min_shared_words`
distinct words (3+ letters, stopwords dropped) with the prompt and its score,
sum of idf(w) over shared words / sqrt(number of its words), is at least
`min_score`; at most `max_hits`. idf(w) = ln(1 + N / df(w)) (always > 0).
Nothing clearing the floors gives "" (say "no match" rather than top-N).

The corpus is cached per scope for `ttl_seconds`; a stale corpus is served
while one background thread rebuilds it (stale-while-rebuild, single-flight).
A stale corpus whose text index has not moved since it was built (the plane's
`stamp`, as the hot tier reads it: any commit by any process moves it) is
kept for another `ttl_seconds` without a rebuild: a build reads up to
`corpus_limit` rows' (id, name, description) (`MemoryStore.names`) and holds
the GIL for tens of milliseconds at 100,000 memories, which showed in other
requests' tails (one thread rebuilds the stale scopes, one after another,
pausing as it goes: `CorpusCache`). A write is then seen once the index has
applied it (within the index lag) and the corpus next goes stale.
A match itself is read from the store: a memory edited, archived or expired
since the build shows as it is now, or not at all.
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
from dataclasses import dataclass
from datetime import UTC, datetime

from recall import sanitize, tiers
from recall.config import PromptConfig
from recall.errors import QueryError
from recall.planes import Planes
from recall.ports import TokenCounter
from recall.requests import PromptRequest
from recall.results import PromptResult
from recall.scope import recall_filter
from recall.scoring import admits
from recall.types import Record

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


def terms(text: str, *, min_chars: int = 3) -> frozenset[str]:
    """Distinct lower-cased words of `min_chars`+ letters, stopwords dropped."""
    return (
        frozenset(w for w in (m.lower() for m in _WORD.findall(text)) if len(w) >= min_chars)
        - STOPWORDS
    )


PAUSE_EVERY = 50  # rows between a background build's pauses (about 0.7 ms of work)
PAUSE_S = 0.001


@dataclass(frozen=True, slots=True)
class Corpus:
    """The matcher's index of one scope: its records' ids, each one's sqrt(number of
    words), each word's postings (the positions of the records holding it) and idf.

    An inverted index of ids rather than records with their word sets: 64,000
    records of 13 scopes took 197 MB as records with a frozenset each; a prompt
    reads only the postings of its own words, and its few matches are read
    from the store (`matches`), as they are now."""

    ids: tuple[str, ...]
    norms: tuple[float, ...]
    postings: dict[str, array[int]]
    idf: dict[str, float]


def build_corpus(
    rows: Iterable[tuple[str, str, str]],
    *,
    min_chars: int = 3,
    pause: Callable[[], None] | None = None,
) -> Corpus:
    """The corpus of (id, name, description) rows (`MemoryStore.names`);
    `pause` is called every `PAUSE_EVERY` rows (`CorpusCache.pause`)."""
    kept: list[str] = []
    norms: list[float] = []
    lists: dict[str, list[int]] = {}
    n = 0  # every record counts in idf's N, a wordless one too
    for memory_id, name, description in rows:
        n += 1
        if pause is not None and n % PAUSE_EVERY == 0:
            pause()
        found = terms(f"{name} {description}", min_chars=min_chars)
        if not found:
            continue  # shares no word with any prompt
        for w in found:
            lists.setdefault(w, []).append(len(kept))
        kept.append(memory_id)
        norms.append(math.sqrt(len(found)))
    return Corpus(
        tuple(kept),
        tuple(norms),
        {w: array("I", at) for w, at in lists.items()},
        {w: math.log(1 + n / len(at)) for w, at in lists.items()},
    )


def match(corpus: Corpus, prompt: str, config: PromptConfig) -> list[tuple[str, float]]:
    """Ids of the records clearing both floors with their scores, best first (ties by
    id), at most max_hits."""
    shared: dict[int, int] = {}
    weight: dict[int, float] = {}
    for w in sorted(terms(prompt, min_chars=config.min_word_chars)):
        idf = corpus.idf.get(w)
        if idf is None:
            continue
        for at in corpus.postings[w]:
            shared[at] = shared.get(at, 0) + 1
            weight[at] = weight.get(at, 0.0) + idf
    found: list[tuple[str, float]] = []
    for at, count in shared.items():
        if count < config.min_shared_words:
            continue
        score = weight[at] / corpus.norms[at]
        if score >= config.min_score:
            found.append((corpus.ids[at], score))
    found.sort(key=lambda t: (-t[1], t[0]))
    return found[: config.max_hits]


def render(
    records: Sequence[Record], config: PromptConfig, *, budget: int, counter: TokenCounter
) -> tuple[str, tuple[str, ...]]:
    """The block an agent sees (one tag pair, one sanitized line per memory) and
    the ids in it: the best matches that fit `budget` tokens ("" if none does)."""
    head = [f"<{config.tag}>", "Memories that may bear on this prompt (memory_read by name):"]
    shown: list[str] = []
    ids: list[str] = []
    for r in records:
        desc = sanitize.field(r.description, config.description_chars)
        line = f"- {sanitize.name(r.name)} [{sanitize.name(r.kind)}]: {desc}"
        if counter.count("\n".join([*head, *shown, line, f"</{config.tag}>"])) > budget:
            break
        shown.append(line)
        ids.append(r.id)
    if not shown:
        return "", ()
    return "\n".join([*head, *shown, f"</{config.tag}>"]), tuple(ids)


class CorpusCache:
    """Corpora per scope key, fresh for a TTL, then served stale while rebuilt.

    `get` builds synchronously only when a key has no corpus yet. A stale
    corpus is returned at once and its rebuild is queued (single-flight: a
    key already queued or building is not queued again), unless `stamp`
    (what the data looked like; None: unknown) equals the one it was built
    at: then it is fresh again without a rebuild. One background thread
    works the queue, one rebuild at a time: a thread per stale scope (13 at
    once at 100,000 memories under writes) took the GIL from the requests
    and put PromptRecall's p99 at 185 ms. That thread also pauses (`pause`)
    every few rows of a build: a request that released the GIL for the
    database otherwise waited for the build's 5 ms switch interval at each
    read (the convoy effect), and prompts timed during rebuilds at 100,000
    took p95 32 ms, then 2.4-2.8 ms. `background=False` rebuilds synchronously
    (deterministic tests). `finished` runs at the end of the rebuilding
    thread, once its queue is empty (the console returns the thread's
    database connection to its pool there).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], datetime],
        background: bool = True,
        finished: Callable[[], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._on_rebuilder = threading.local()
        self._background = background
        self._finished = finished
        self._lock = threading.Lock()
        self._corpora: dict[Hashable, tuple[datetime, Corpus, object]] = {}
        self._building: set[Hashable] = set()
        self._queue: deque[tuple[Hashable, Callable[[], Corpus], object]] = deque()
        self._draining = False
        self.builds = 0

    def get(
        self, key: Hashable, build: Callable[[], Corpus], *, ttl: float, stamp: object = None
    ) -> Corpus:
        now = self._clock()
        with self._lock:
            cached = self._corpora.get(key)
            stale = cached is None or (now - cached[0]).total_seconds() >= ttl
            if stale and cached is not None and stamp is not None and cached[2] == stamp:
                self._corpora[key] = (now, cached[1], stamp)  # nothing moved: fresh again
                return cached[1]
            start = stale and key not in self._building
            if start:
                self._building.add(key)
        if cached is None:
            if start:
                return self._rebuild(key, build, stamp)
            return build()  # another caller is building the first corpus
        if start:
            if not self._background:
                return self._rebuild(key, build, stamp)
            self._enqueue(key, build, stamp)
        return cached[1]

    def _enqueue(self, key: Hashable, build: Callable[[], Corpus], stamp: object) -> None:
        """Queue one rebuild; start the rebuilding thread unless it is running."""
        with self._lock:
            self._queue.append((key, build, stamp))
            if self._draining:
                return
            self._draining = True
        threading.Thread(target=self._drain, daemon=True, name="prompt-corpora").start()

    def _rebuild(self, key: Hashable, build: Callable[[], Corpus], stamp: object) -> Corpus:
        """Build and keep the corpus with `stamp`, read before the build (a write
        landing during it moves the stamp past this one: the next look rebuilds)."""
        try:
            corpus = build()
            with self._lock:
                self._corpora[key] = (self._clock(), corpus, stamp)
                self.builds += 1
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
                    key, build, stamp = self._queue.popleft()
                try:
                    self._rebuild(key, build, stamp)
                except Exception:  # logged in _rebuild; the stale corpus keeps serving
                    continue
        finally:
            if self._finished is not None:
                self._finished()

    def clear(self) -> None:
        with self._lock:
            self._corpora.clear()

    def expire(self) -> None:
        """Every corpus stale now, whatever its stamp: the next look at each is
        served it and queues its rebuild (a benchmark times requests so)."""
        with self._lock:
            for key, (_, corpus, _) in self._corpora.items():
                self._corpora[key] = (datetime.min.replace(tzinfo=UTC), corpus, None)


def matches(
    req: PromptRequest, *, planes: Planes, corpora: CorpusCache, config: PromptConfig
) -> list[Record]:
    """Memories in scope that clear the floors, best first (the pipeline's core).

    filter -> corpus (cached per scope) -> match -> hydrate -> guard.
    """
    if not req.prompt.strip():
        return []
    where = recall_filter(planes.store, project=req.project, scope="memories")

    def build() -> Corpus:
        rows = planes.store.names(where=where, limit=config.corpus_limit)
        return build_corpus(rows, min_chars=config.min_word_chars, pause=corpora.pause)

    stamp = tiers.stamp(planes.text) if planes.text is not None else None
    corpus = corpora.get((where, config.corpus_limit), build, ttl=config.ttl_seconds, stamp=stamp)
    ranked = [i for i, _ in match(corpus, req.prompt, config)]
    # Read now (hydrate leaves expired memories out): archived or moved since the build
    # is left out by the guard.
    found = planes.store.hydrate(ranked) if ranked else {}
    return [r for r in (found.get(i) for i in ranked) if r is not None and admits(where, r)]


def run(
    req: PromptRequest, *, planes: Planes, corpora: CorpusCache, config: PromptConfig
) -> PromptResult:
    """The per-prompt recall block ("" when nothing clears the floors), its ids and tokens."""
    if req.budget is not None and req.budget < 1:
        raise QueryError(f"budget must be >= 1, not {req.budget}")
    records = matches(req, planes=planes, corpora=corpora, config=config)
    budget = req.budget if req.budget is not None else config.budget
    text, ids = render(records, config, budget=budget, counter=planes.tokens)
    return PromptResult(text, ids, planes.tokens.count(text) if text else 0)
