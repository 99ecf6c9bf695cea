"""The candidate stage: embed the query once, then ask each channel in turn.

One loop for every channel (ARCHITECTURE section 4): each returns ranked ids
at a depth with scope and validity applied INSIDE its query, before the depth
limit (filtering after a fixed depth would let out-of-scope or superseded hits
starve live, in-scope ones). A channel that is not configured (ChannelOff)
is skipped silently; one whose plane fails at run time (any RecallError but
ConfigError) is skipped with a warning naming it, and the others carry on.
If every channel that ran failed, the first failure propagates: there is
nothing to degrade to. ConfigError always propagates (a local
misconfiguration is an error, not a silent degrade).

The query is embedded on a worker thread while the channels that need no
vector (full text) run: the embedding model leaves the interpreter while it
computes, so the two overlap on two cores (Recall at 100,000 memories spent
about 2.5 ms embedding and 3 ms in full text, one after the other). Each
channel's list, status and warnings are recorded in the channels' own order
whichever ran first.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np

from recall.errors import ChannelOff, ConfigError, EmbedderUnavailable, QueryError, RecallError
from recall.planes import CachedEmbedder
from recall.ports import Channel, Embedder
from recall.types import Candidate, ChannelQuery, Filter

ON = "on"


@dataclass(slots=True)
class Gathered:
    """What the channels found, and how each one went.

    `lists` holds each channel's candidates by name (only channels that
    answered); `status` says "on", "off: <why>" or "skipped: <why>" per
    channel asked; `timings` holds milliseconds per channel and for "embed".
    """

    lists: dict[str, list[Candidate]] = field(default_factory=dict)
    status: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    embedded: bool = False
    query: ChannelQuery | None = None

    def merge(self, other: Gathered) -> None:
        """Fold another gathering (a later stage's channels) into this one."""
        self.lists.update(other.lists)
        self.status.update(other.status)
        self.warnings += other.warnings
        self.timings.update(other.timings)
        self.embedded = self.embedded or other.embedded


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)


def _why(exc: RecallError) -> str:
    if isinstance(exc, EmbedderUnavailable):
        return f"embedder unavailable ({exc})"
    return f"index unavailable ({exc})"


def embed_query(
    query: ChannelQuery, embedder: Embedder | None, gathered: Gathered
) -> tuple[ChannelQuery, str | None]:
    """The query with its vector set, or why it could not be embedded."""
    if query.vector is not None:
        return query, None
    if embedder is None:
        return query, "off: no embedder configured"
    start = time.perf_counter()
    try:
        vector = np.asarray(embedder.embed([query.text])[0], dtype=np.float32)
    except EmbedderUnavailable as exc:
        return query, f"skipped: {_why(exc)}"
    finally:
        gathered.timings["embed"] = _ms(start)
    gathered.embedded = True
    return replace(query, vector=vector), None


_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _embedding_pool() -> ThreadPoolExecutor:
    """The process's embedding threads (made again in a forked child: threads do not fork)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="embed"))
        return _pool[1]


def _embedding(
    channels: Sequence[Channel], query: ChannelQuery, embedder: Embedder | None, gathered: Gathered
) -> Future[tuple[ChannelQuery, str | None]] | None:
    """The query's embedding, started on a worker thread when a channel can run meanwhile.

    Not when the embedder keeps the query's vector (`CachedEmbedder.holds`: a
    repeated query): the lookup is microseconds, and handing it to the thread
    and back cost two thread switches, each waiting for a core on a busy machine."""
    if query.vector is not None or embedder is None:
        return None
    if isinstance(embedder, CachedEmbedder) and embedder.holds(query.text):
        return None
    if not any(c.needs_vector for c in channels) or all(c.needs_vector for c in channels):
        return None
    embedding = _embedding_pool().submit(embed_query, query, embedder, gathered)
    time.sleep(0)  # hand the interpreter over, so the thread reaches the model at once
    return embedding


@dataclass(slots=True)
class _Outcome:
    found: list[Candidate] | None
    status: str
    warning: str | None = None
    failure: RecallError | None = None


def gather(
    channels: Sequence[Channel],
    query: ChannelQuery,
    *,
    where: Filter,
    depth: int,
    embedder: Embedder | None,
    seeds: Sequence[Candidate] = (),
) -> Gathered:
    """Run `channels` on `query` (see the module docstring)."""
    gathered = Gathered(query=query)
    embedding = _embedding(channels, query, embedder, gathered)
    unembedded: str | None = None
    if embedding is None and any(c.needs_vector for c in channels):
        query, unembedded = embed_query(query, embedder, gathered)
        gathered.query = query
    outcomes: dict[int, _Outcome] = {}
    # The channels without a vector first: they run while the query is embedded.
    for at in sorted(range(len(channels)), key=lambda i: channels[i].needs_vector):
        channel = channels[at]
        if channel.needs_vector and embedding is not None:
            query, unembedded = embedding.result()
            gathered.query, embedding = query, None
        if channel.needs_vector and unembedded is not None:
            skipped = unembedded.startswith("skipped")
            warning = f"{channel.name} channel {unembedded}" if skipped else None
            outcomes[at] = _Outcome(None, unembedded, warning)
            continue
        outcomes[at] = _ask(channel, query, where, depth, seeds, gathered)
    failures = []
    for at, channel in enumerate(channels):
        outcome = outcomes[at]
        if outcome.found is not None:
            gathered.lists[channel.name] = outcome.found
        gathered.status[channel.name] = outcome.status
        if outcome.warning is not None:
            gathered.warnings.append(outcome.warning)
        if outcome.failure is not None:
            failures.append(outcome.failure)
    if failures and not gathered.lists:
        raise failures[0]
    return gathered


def _ask(
    channel: Channel,
    query: ChannelQuery,
    where: Filter,
    depth: int,
    seeds: Sequence[Candidate],
    gathered: Gathered,
) -> _Outcome:
    """One channel's candidates, or how it was off or failed (ConfigError propagates)."""
    name = channel.name
    start = time.perf_counter()
    try:
        return _Outcome(channel.candidates(query, where, depth, seeds), ON)
    except ChannelOff as exc:
        return _Outcome(None, f"off: {exc}")
    except ConfigError:
        raise
    except RecallError as exc:
        why = _why(exc)
        return _Outcome(None, f"skipped: {why}", f"{name} channel skipped: {why}", exc)
    finally:
        gathered.timings[name] = _ms(start)


def select(
    channels: Sequence[Channel],
    role: str,
    weights: Mapping[str, float],
    *,
    off: Collection[str] = (),
) -> list[Channel]:
    """The registered channels of `role` that run: weight > 0 and not switched `off`."""
    return [
        c for c in channels if c.role == role and weights.get(c.name, 0) > 0 and c.name not in off
    ]


def check_names(weights: Mapping[str, float], channels: Sequence[Channel]) -> None:
    """QueryError naming a weighted channel that is not registered."""
    known = [c.name for c in channels]
    for name in weights:
        if name not in known:
            raise QueryError(f"no channel named {name!r}; channels: {', '.join(known)}")
