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
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from recall.errors import ChannelOff, ConfigError, EmbedderUnavailable, QueryError, RecallError
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


def gather(
    channels: Sequence[Channel],
    query: ChannelQuery,
    *,
    where: Filter,
    depth: int,
    embedder: Embedder | None,
    seeds: Sequence[Candidate] = (),
) -> Gathered:
    """Run `channels` in order on `query` (see the module docstring)."""
    gathered = Gathered(query=query)
    unembedded: str | None = None
    if any(c.needs_vector for c in channels):
        query, unembedded = embed_query(query, embedder, gathered)
        gathered.query = query
    failures: list[RecallError] = []
    for channel in channels:
        name = channel.name
        if channel.needs_vector and unembedded is not None:
            gathered.status[name] = unembedded
            if unembedded.startswith("skipped"):
                gathered.warnings.append(f"{name} channel {unembedded}")
            continue
        start = time.perf_counter()
        try:
            found = channel.candidates(query, where, depth, seeds)
        except ChannelOff as exc:
            gathered.status[name] = f"off: {exc}"
            continue
        except ConfigError:
            raise
        except RecallError as exc:
            failures.append(exc)
            gathered.status[name] = f"skipped: {_why(exc)}"
            gathered.warnings.append(f"{name} channel skipped: {_why(exc)}")
            continue
        finally:
            gathered.timings[name] = _ms(start)
        gathered.lists[name] = found
        gathered.status[name] = ON
    if failures and not gathered.lists:
        raise failures[0]
    return gathered


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
