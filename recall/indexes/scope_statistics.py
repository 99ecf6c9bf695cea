"""BM25's collection statistics counted over what one search may see.

IDF and length normalisation read three figures of the collection: how many
documents it holds, their mean length and how many hold each query word. A
full-text index counts them over every document it holds, so a score moved
with text the caller may not read: a token bound to one project could plant
a memory holding a word, search for it, and read from the score's fall
whether a sealed project's memories hold that word too (BM25 scores reach
agents in `/search/text`, "Why this result" and the inspector). Counted over
the search's visible projects (`Filter.visible`) instead, a score depends on
visible text alone.

`ScopeStatistics` keeps those figures per (reader, scope): the adapter says
which reader it searches (a value that changes with every commit) and how to
count; the scope's shape (rows, mean lengths, whatever the adapter needs) is
counted once per reader and scope, each word's frequency when first asked for.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from recall.lru import LRU

SCOPES = 64  # scopes kept per index (a deployment's token scopes, the console's logins)
WORDS = 20_000  # words' frequencies kept per scope before they are counted afresh

S = TypeVar("S")


@dataclass(slots=True)
class Statistics(Generic[S]):
    """One scope's figures under one reader."""

    shape: S
    frequencies: dict[str, int] = field(default_factory=dict)


class ScopeStatistics(Generic[S]):
    """The figures of the scopes searched lately (see the module docstring)."""

    def __init__(self, size: int = SCOPES) -> None:
        self._kept: LRU[tuple[object, Hashable], Statistics[S]] = LRU(size)
        self._lock = threading.Lock()

    def figures(
        self,
        reader: object,
        scope: Hashable,
        words: Iterable[str],
        *,
        shape: Callable[[], S],
        frequency: Callable[[S, str], int],
    ) -> tuple[S, dict[str, int]]:
        """(`scope`'s shape, {word: document frequency}) under `reader`.

        `shape` counts the scope's shape and `frequency` how many of its rows
        hold a word; each is called only for what is not kept."""
        key = (reader, scope)
        kept = self._kept.get(key)
        if kept is None:
            kept = Statistics(shape())
            self._kept.put(key, kept)
        known = kept.frequencies
        out = {}
        for word in words:
            df = known.get(word)
            if df is None:
                df = frequency(kept.shape, word)
                with self._lock:
                    if len(known) >= WORDS:
                        known.clear()
                    known[word] = df
            out[word] = df
        return kept.shape, out


def most_held(
    ranked: Iterable[tuple[str, int]],
    held: Callable[[str, int], int],
    *,
    limit: int,
    admit: Callable[[int], bool] = lambda n: n > 0,
) -> list[str]:
    """The `limit` words most documents of a scope hold (a prefix's expansions), best
    first, ties by word. `ranked` gives each word with its index-wide count, best first;
    `held(word, that count)` its count in the scope, which is never more: counting stops
    once the next word's index-wide count cannot reach the last word kept. `admit`
    says which counts may be kept."""
    best: list[tuple[int, str]] = []  # (-count in scope, word)
    for word, most in ranked:
        if len(best) == limit and most < -best[-1][0]:
            break
        count = held(word, most)
        if admit(count):
            best = sorted([*best, (-count, word)])[:limit]
    return [word for _, word in best]
