"""Fusion and scoring stay finite for every weight the request schema allows (issue 19, item 3).

`{"fts": 1000, "semantic": 1000}` with z-score fusion once overflowed the
logistic (`math.exp` of a large negative sum) and answered 500. These
properties range over the schema's bounds: weights in [0, MAX_WEIGHT] per
channel, and the score ranges the channels produce (BM25 >= 0, cosine in
[-1, 1], link scores in [0, 1]).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recall.config import MAX_WEIGHT, Configs, RecallConfig
from recall.engine import Engine
from recall.errors import QueryError
from recall.fusion import fuse
from recall.planes import Planes
from recall.requests import RecallRequest
from recall.scoring import positive
from recall.testing import FakeEmbedder, InMemoryStore, InMemoryTextIndex, InMemoryVectorIndex
from recall.types import Candidate
from tests.recall.conftest import NOW, index, make_memory

CHANNELS = ("fts", "semantic", "identifier", "graph")
SEARCHING = ("fts", "semantic")  # the rank channels: one must keep a weight above 0
weight = st.floats(min_value=0, max_value=MAX_WEIGHT, allow_nan=False, allow_infinity=False)
weights = st.dictionaries(st.sampled_from(CHANNELS), weight, max_size=len(CHANNELS))
bm25 = st.floats(min_value=0, max_value=1e4, allow_nan=False)
cosine = st.floats(min_value=-1, max_value=1, allow_nan=False)


@st.composite
def channel_lists(draw: st.DrawFn) -> dict[str, list[Candidate]]:
    ids = [f"m{i}" for i in range(draw(st.integers(1, 30)))]
    lists: dict[str, list[Candidate]] = {}
    for channel, scores in (("fts", bm25), ("semantic", cosine), ("graph", cosine)):
        chosen = draw(st.lists(st.sampled_from(ids), unique=True, max_size=len(ids)))
        values = sorted((draw(scores) for _ in chosen), reverse=True)
        pairs = enumerate(zip(chosen, values, strict=True), 1)
        lists[channel] = [Candidate(id=i, rank=n, score=s) for n, (i, s) in pairs]
    return lists


@given(lists=channel_lists(), weights=weights, method=st.sampled_from(["rrf", "zscore"]))
@settings(max_examples=300, deadline=None)
def test_fused_scores_are_finite_and_their_positive_form_bounded(
    lists: dict[str, list[Candidate]], weights: dict[str, float], method: str
) -> None:
    for fused in fuse(lists, method=method, weights=weights, k=60):
        assert math.isfinite(fused.score)
        value = positive(fused.score, method)
        assert math.isfinite(value) and value >= 0
        if method == "zscore":
            assert value <= 1


@pytest.fixture(scope="module")
def engine() -> Engine:
    """One in-memory engine for every example (fusion is plane-independent arithmetic)."""
    planes = Planes(
        text=InMemoryTextIndex(),
        store=InMemoryStore(),
        vectors=InMemoryVectorIndex(),
        embedder=FakeEmbedder(),
        clock=lambda: NOW,
    )
    built = Engine(planes, base=Configs(), background_rebuild=False)
    index(built, [
        make_memory(1, description="chroma boot race", body="See [[chroma-two]]"),
        make_memory(2, name="chroma-two", description="chroma restarts"),
        make_memory(3, description="unrelated words entirely"),
    ])  # fmt: skip
    return built


@given(weights=weights, fusion=st.sampled_from(["rrf", "zscore"]))
@settings(max_examples=60, deadline=None)
def test_recall_answers_for_every_weight_the_schema_allows(
    engine: Engine, weights: dict[str, float], fusion: str
) -> None:
    request = RecallRequest(query="chroma boot", project="alpha", channel_weights=weights)
    config = RecallConfig(fusion=fusion)
    searching = {**config.channel_weights, **weights}
    if weights and not any(searching.get(name, 0) > 0 for name in SEARCHING):
        # Weights that turn off both channels that search answer a clear 400 (the
        # pack was empty and said nothing); hypothesis drew them now and then.
        with pytest.raises(QueryError, match="turn off every channel that searches"):
            engine.recall(request, config=config)
        return

    pack = engine.recall(request, config=config)

    assert all(math.isfinite(item.score) for item in pack.items)
