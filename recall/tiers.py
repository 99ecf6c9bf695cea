"""Recall's three tiers (seed 003: hot < 5 ms, warm < 15 ms, cold < 200 ms).

- **hot**: a request this process answered a moment ago, answered again
  from `HotTier`, a small LRU of packs keyed by the request (its query with
  whitespace collapsed) and the resolved config. An entry serves while
    - the planes' stamps are the ones it was computed under (`stamp`): every
      write, by any process, reaches the planes (a text index commit, a
      vector copy refresh), so every process's hot entries give way then;
      a store that can say a stamp of its own (the console's: its outbox's
      newest job) adds it, so they give way at the write's commit, before
      any index worker has applied it;
    - no write committed in this process since (the console calls
      `Engine.forget` when a write commits, before its index job is applied);
    - it is younger than `ttl_seconds` (ages, usage, stars and other
      processes' worth feedback drift slowly);
    - no memory it holds has expired (`until`: the earliest `expires_at`);
    - its project's isolation is what it was (the engine adds it to the key:
      sealing a project takes the global memories out of its scope and moves
      no plane's stamp).
  The key leaves out the request's `pack_id`: a recorded recall answered hot
  carries its own id, the reply's tokens counted again (`packing.relabel`).
  Planes that cannot say their stamp (PostgreSQL's, LanceDB without its
  in-process copy) leave the hot tier off: every request is then warm.
- **warm**: the pipeline (`recall.recall.run`).
- **cold**: a request that reaches past the live memories: `include_history`
  (archived and superseded memories are candidates too) or time travel
  (`as_of`, `recorded_as_of`: `recall.timetravel` over the revision rows);
  never cached.

`debug.tier` says which tier answered and `debug.latency_ms` how long it took.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, runtime_checkable

from recall.errors import IndexUnavailable
from recall.lru import LRU
from recall.requests import RecallRequest
from recall.results import ContextPack

HOT, WARM, COLD = "hot", "warm", "cold"
HOT_SIZE = 512
HOT_TTL_SECONDS = 30.0


@runtime_checkable
class Stamped(Protocol):
    """A plane that can say, cheaply, which state its readers see now: the stamp
    changes whenever what a search returns may have changed."""

    def stamp(self) -> object: ...


def stamp(*planes: object) -> tuple[object, ...] | None:
    """The planes' stamps together; None when a plane cannot tell (no hot tier),
    a plane that cannot be read now included (its channel is then skipped with a
    warning, in the warm tier)."""
    out: list[object] = []
    for plane in planes:
        if plane is None:
            continue
        if not isinstance(plane, Stamped):
            return None
        try:
            value = plane.stamp()
        except IndexUnavailable:
            return None
        if value is None:
            return None
        out.append(value)
    return tuple(out)


def tier_of(req: RecallRequest) -> str:
    """The tier a request goes to when the hot tier cannot answer it."""
    past = req.include_history or req.as_of is not None or req.recorded_as_of is not None
    return COLD if past else WARM


def key(req: RecallRequest, config: object) -> str:
    """The request (query whitespace-collapsed) and the resolved config, as one key."""
    same = replace(req, query=" ".join(req.query.split()), pack_id=None)
    return repr((same, config))


def until(pack: ContextPack) -> datetime | None:
    """The earliest expiry among the pack's memories (None: none expires)."""
    hits = (*pack.items, *(pack.associated or ()))
    return min((h.expires_at for h in hits if h.expires_at is not None), default=None)


@dataclass(slots=True)
class _Entry:
    pack: ContextPack
    stamp: tuple[object, ...]
    made: float
    until: datetime | None


class HotTier:
    """The hot tier's packs (thread-safe; see the module docstring)."""

    def __init__(
        self,
        *,
        size: int = HOT_SIZE,
        ttl_seconds: float = HOT_TTL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.size = size
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._entries: LRU[str, _Entry] = LRU(size)

    def get(
        self, key: str, stamp: tuple[object, ...] | None, now: datetime | None = None
    ) -> ContextPack | None:
        """The entry for `key` if it still holds (`now`: the planes' clock, for expiry)."""
        if stamp is None or not self.size:
            return None

        def holds(entry: _Entry) -> bool:
            expired = entry.until is not None and (now is None or now >= entry.until)
            old = self._clock() - entry.made > self.ttl_seconds
            return entry.stamp == stamp and not old and not expired

        entry = self._entries.get(key, valid=holds)
        return None if entry is None else entry.pack

    def put(self, key: str, stamp: tuple[object, ...] | None, pack: ContextPack) -> None:
        if stamp is None or not self.size:
            return
        self._entries.put(key, _Entry(pack, stamp, self._clock(), until(pack)))

    def forget(self) -> None:
        """Drop every entry (a write committed in this process)."""
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def answered(pack: ContextPack, tier: str, started: float) -> ContextPack:
    """`pack` with its debug (when asked) saying which tier answered, in how long."""
    if pack.debug is None:
        return pack
    latency = round((time.perf_counter() - started) * 1000, 3)
    debug = {**pack.debug, "tier": tier, "latency_ms": latency}
    if tier == HOT:  # the stages ran for the entry, not for this answer
        debug["timings_ms"] = {"hot": latency, "total": latency}
    return replace(pack, debug=debug)
