"""The planes a pipeline reads: a plain value, no back-references.

Built once by the composition root (`console/wiring.py`, or a test) and handed
to every pipeline with an explicit, resolved config. Pipelines never reach
for anything else: no settings, no facade, no globals.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from recall.lru import LRU
from recall.ports import Embedder, MemoryStore, TextIndex, TokenCounter, VectorIndex, Vectors
from recall.tokens import ByteEstimate

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Planes:
    """Full text, vectors and their embedder, the source of truth, a token counter, a clock.

    `vectors` and `embedder` are None when no semantic plane is configured.
    """

    text: TextIndex
    store: MemoryStore
    vectors: VectorIndex | None = None
    embedder: Embedder | None = None
    tokens: TokenCounter = field(default_factory=ByteEstimate)
    clock: Clock = utc_now


class CachedEmbedder:
    """An Embedder that remembers single-text embeddings (a thread-safe LRU).

    Query embedding dominates a query's latency (ANCHORS.md); agents and
    people repeat queries. Batches of several texts pass straight through.
    """

    def __init__(self, inner: Embedder, size: int = 256) -> None:
        self.inner = inner
        self._rows: LRU[tuple[str, str], Vectors] = LRU(size)

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def dims(self) -> int:
        return self.inner.dims

    def holds(self, text: str) -> bool:
        """Whether `text`'s embedding is kept (its `embed` then costs no model call)."""
        return (self.inner.model, text) in self._rows

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) != 1:
            return self.inner.embed(texts)
        key = (self.inner.model, texts[0])
        hit = self._rows.get(key)
        if hit is not None:
            return hit[None, :]
        vector = np.asarray(self.inner.embed(texts)[0], dtype=np.float32)
        self._rows.put(key, vector)
        return vector[None, :]
