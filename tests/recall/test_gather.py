"""The candidate stage: one loop over every channel, failures named, never silent."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from recall.errors import ChannelOff, ConfigError, EmbedderUnavailable, IndexUnavailable, QueryError
from recall.gather import check_names, gather, select
from recall.planes import CachedEmbedder
from recall.ports import EXPAND, PIN, RANK
from recall.testing import FakeEmbedder
from recall.types import Candidate, ChannelQuery, Filter


class Stub:
    """A channel that returns fixed ids, or raises."""

    def __init__(
        self, name: str, ids: Sequence[str] = (), *, role: str = RANK, vector: bool = False,
        error: Exception | None = None,
    ) -> None:  # fmt: skip
        self.name, self.role, self.needs_vector = name, role, vector
        self.ids, self.error = list(ids), error
        self.asked: list[tuple[ChannelQuery, int, Sequence[Candidate]]] = []

    def candidates(
        self, query: ChannelQuery, where: Filter, depth: int, seeds: Sequence[Candidate]
    ) -> list[Candidate]:
        self.asked.append((query, depth, seeds))
        if self.error is not None:
            raise self.error
        return [Candidate(i, n, 1.0 / n) for n, i in enumerate(self.ids[:depth], 1)]


def run(*channels: Stub, embedder: FakeEmbedder | None = None, depth: int = 5):
    return gather(channels, ChannelQuery("chroma"), where=Filter(), depth=depth, embedder=embedder)


def test_each_channel_answers_under_its_name_in_order():
    fts, other = Stub("fts", ["a", "b"]), Stub("other", ["c"])

    got = run(fts, other, depth=1)

    assert {name: [c.id for c in found] for name, found in got.lists.items()} == {
        "fts": ["a"],
        "other": ["c"],
    }
    assert got.status == {"fts": "on", "other": "on"} and got.warnings == []
    assert set(got.timings) == {"fts", "other"} and not got.embedded


def test_the_query_is_embedded_once_for_every_channel_that_needs_it():
    embedder = FakeEmbedder()
    first, second, plain = Stub("v1", vector=True), Stub("v2", vector=True), Stub("fts")

    got = run(first, second, plain, embedder=embedder)

    assert embedder.calls == 1 and got.embedded and "embed" in got.timings
    assert first.asked[0][0].vector is not None and first.asked[0][0] is second.asked[0][0]
    assert got.query is first.asked[0][0]  # the embedded query, for the stages after
    assert plain.asked[0][0].text == "chroma"


class Waiting(FakeEmbedder):
    """Embeds only once `asked` is set (or gives up after 10 s), and says which it was."""

    def __init__(self, asked: threading.Event) -> None:
        super().__init__()
        self.asked, self.saw_it = asked, False

    def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
        self.saw_it = self.asked.wait(timeout=10)
        return super().embed(texts)


class Signalling(Stub):
    def __init__(self, name: str, ids: Sequence[str], asked: threading.Event) -> None:
        super().__init__(name, ids)
        self.signal = asked

    def candidates(self, query, where, depth, seeds):  # type: ignore[no-untyped-def]
        self.signal.set()
        return super().candidates(query, where, depth, seeds)


def test_channels_without_a_vector_run_while_the_query_is_embedded():
    asked = threading.Event()
    embedder = Waiting(asked)
    semantic, fts = Stub("semantic", ["b"], vector=True), Signalling("fts", ["a"], asked)

    got = run(semantic, fts, embedder=embedder)

    assert embedder.saw_it  # full text was asked before the embedding finished
    assert list(got.lists) == ["semantic", "fts"] == list(got.status)  # the channels' order
    assert semantic.asked[0][0].vector is not None and got.embedded


def test_an_embedder_failure_beside_full_text_keeps_the_channels_order_in_the_warnings():
    broken = Stub("graph", error=IndexUnavailable("edges unreadable"))
    semantic = Stub("semantic", vector=True)

    got = run(semantic, broken, Stub("fts", ["a"]), embedder=FakeEmbedder(fail=True))

    assert got.warnings == [
        "semantic channel skipped: embedder unavailable (fake embedder told to fail)",
        "graph channel skipped: index unavailable (edges unreadable)",
    ]
    assert list(got.lists) == ["fts"]


def test_no_embedding_when_no_channel_needs_it():
    embedder = FakeEmbedder()
    run(Stub("fts", ["a"]), embedder=embedder)
    assert embedder.calls == 0


def test_without_an_embedder_a_vector_channel_is_off_silently():
    got = run(Stub("fts", ["a"]), Stub("semantic", ["b"], vector=True))

    assert got.status["semantic"] == "off: no embedder configured"
    assert set(got.lists) == {"fts"} and got.warnings == []


def test_an_embedder_failure_skips_vector_channels_with_a_warning():
    got = run(Stub("fts", ["a"]), Stub("semantic", vector=True), embedder=FakeEmbedder(fail=True))

    assert set(got.lists) == {"fts"} and not got.embedded
    assert got.warnings == [
        "semantic channel skipped: embedder unavailable (fake embedder told to fail)"
    ]


def test_a_failing_channel_is_named_and_the_others_carry_on():
    broken = Stub("semantic", error=IndexUnavailable("vector table unreadable"))

    got = run(Stub("fts", ["a"]), broken)

    assert set(got.lists) == {"fts"}
    assert got.warnings == ["semantic channel skipped: index unavailable (vector table unreadable)"]
    assert got.status["semantic"].startswith("skipped")


def test_when_every_channel_fails_the_first_failure_propagates():
    first = IndexUnavailable("text index unreadable")
    with pytest.raises(IndexUnavailable, match="text index"):
        run(Stub("fts", error=first), Stub("other", error=IndexUnavailable("also down")))


def test_a_channel_that_is_off_is_skipped_silently():
    got = run(Stub("fts", ["a"]), Stub("graph", error=ChannelOff("no edges table")))
    assert got.status["graph"] == "off: no edges table" and got.warnings == []


def test_a_config_error_always_propagates():
    with pytest.raises(ConfigError):
        run(Stub("fts", ["a"]), Stub("semantic", error=ConfigError("model file missing")))


def test_embedder_config_errors_propagate_too():
    class Misconfigured(FakeEmbedder):
        def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
            raise ConfigError("no model at /nowhere")

    with pytest.raises(ConfigError):
        run(Stub("semantic", vector=True), embedder=Misconfigured())


def test_seeds_reach_the_channel():
    expand = Stub("link", ["x"], role=EXPAND)
    seeds = [Candidate("s", 1, 0.9)]

    gather([expand], ChannelQuery("q"), where=Filter(), depth=3, embedder=None, seeds=seeds)

    assert expand.asked[0][2] == seeds


def test_select_runs_the_role_with_a_positive_weight_unless_switched_off():
    channels = [Stub("fts"), Stub("semantic"), Stub("identifier", role=PIN), Stub("zero")]
    weights = {"fts": 0.6, "semantic": 0.4, "identifier": 1.0, "zero": 0.0}

    assert [c.name for c in select(channels, RANK, weights)] == ["fts", "semantic"]
    assert [c.name for c in select(channels, RANK, weights, off=("semantic",))] == ["fts"]
    assert [c.name for c in select(channels, PIN, weights)] == ["identifier"]
    assert select(channels, RANK, {}) == []


def test_a_weight_for_an_unknown_channel_is_a_query_error():
    with pytest.raises(QueryError, match="no channel named 'bm99'; channels: fts, semantic"):
        check_names({"bm99": 1.0}, [Stub("fts"), Stub("semantic")])
    check_names({"fts": 1.0}, [Stub("fts")])


def test_an_embedder_unavailable_raised_by_a_channel_is_reported_as_such():
    got = run(Stub("fts", ["a"]), Stub("remote", error=EmbedderUnavailable("timeout")))
    assert got.warnings == ["remote channel skipped: embedder unavailable (timeout)"]


def test_a_query_whose_vector_is_kept_is_embedded_on_the_calling_thread():
    """A repeated query's vector comes from the engine's cache (`CachedEmbedder`): the
    lookup is done where the Recall runs, not handed to the embedding thread and back
    (two thread switches, each a wait for a core on a busy machine)."""
    threads: list[str] = []

    class Where(FakeEmbedder):
        def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
            threads.append(threading.current_thread().name)
            return super().embed(texts)

    cached = CachedEmbedder(Where())
    semantic, fts = Stub("semantic", ["b"], vector=True), Stub("fts", ["a"])
    seen: list[str] = []
    real = cached.embed

    def watched(texts: Sequence[str]):  # type: ignore[no-untyped-def]
        seen.append(threading.current_thread().name)
        return real(texts)

    cached.embed = watched  # type: ignore[method-assign]
    query = ChannelQuery("chroma")

    first = gather([semantic, fts], query, where=Filter(), depth=5, embedder=cached)
    again = gather([semantic, fts], query, where=Filter(), depth=5, embedder=cached)

    assert threads == seen[:1] and threads[0].startswith("embed")  # the model: on its thread
    assert seen[1] == threading.current_thread().name  # the kept vector: here
    assert first.embedded and again.embedded
    assert (again.query.vector == first.query.vector).all()  # type: ignore[union-attr]
