from __future__ import annotations

import numpy as np

from recall.planes import CachedEmbedder
from recall.testing import FakeEmbedder


def test_a_repeated_query_is_embedded_once_and_the_cache_is_bounded():
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner, size=2)

    first = cached.embed(["chroma"])
    again = cached.embed(["chroma"])
    cached.embed(["b"])
    cached.embed(["c"])  # evicts "chroma" (least recently used)
    cached.embed(["chroma"])

    assert np.array_equal(first, again) and first.shape == (1, inner.dims)
    assert inner.calls == 4


def test_batches_pass_through_and_the_port_is_kept():
    inner = FakeEmbedder()
    cached = CachedEmbedder(inner)

    out = cached.embed(["a", "b"])
    cached.embed(["a", "b"])

    assert out.shape == (2, inner.dims) and inner.calls == 2
    assert (cached.model, cached.dims) == (inner.model, inner.dims)
