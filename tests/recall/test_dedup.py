from __future__ import annotations

from recall.config import DedupConfig
from recall.dedup import probe, restates, said_words
from recall.testing import FakeEmbedder
from tests.recall.conftest import MakeEngine, invalidate, make_memory, uid

TEXT = {"name": "chroma-boot-race", "description": "chroma races the api at boot"}


def test_the_most_similar_active_memory_is_hinted(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, **TEXT), make_memory(2, "lunch", description="menu")])

    hit = engine.dedup_hint(project="alpha", **TEXT)

    assert hit is not None and hit.id == uid(1)
    assert hit.similarity is not None and hit.similarity >= 0.83


def test_below_the_threshold_there_is_no_hint(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, "chroma", description="something else entirely here")])

    assert engine.dedup_hint(project="alpha", **TEXT) is None


def test_superseded_duplicate_does_not_starve_live_one_in_dedup(make_engine: MakeEngine):
    dupes = [make_memory(i, **TEXT) for i in range(1, 6)]
    live = make_memory(10, TEXT["name"], description="chroma races the api at boot time")
    engine = make_engine([*dupes, live])
    for d in dupes:
        invalidate(engine, d.id, superseded_by=live.id)

    hit = engine.dedup_hint(project="alpha", **TEXT)

    assert engine.base.dedup == DedupConfig(candidates=3)
    assert hit is not None and hit.id == live.id


def test_a_memory_not_in_the_vector_plane_yet_is_hinted_from_its_pending_vector(
    make_engine: MakeEngine,
):
    outside, inside = make_memory(1, project="beta", **TEXT), make_memory(2, **TEXT)
    engine = make_engine([outside, inside, make_memory(3, "lunch", description="menu")])
    vectors, embedder = engine.planes.vectors, engine.planes.embedder
    assert vectors is not None and embedder is not None
    vectors.delete([outside.id, inside.id])  # written; the index has not applied them yet
    vector = embedder.embed([probe("alpha", **TEXT, body="").embedding_text()])[0]
    pending = [(outside.id, vector), (inside.id, vector)]  # a tie: beta's sorts first

    hit = engine.dedup_hint(project="alpha", pending=pending, **TEXT)

    assert engine.dedup_hint(project="alpha", **TEXT) is None
    assert hit is not None and hit.id == inside.id  # in scope, as the plane's are
    assert hit.similarity is not None and hit.similarity > 0.9


def test_the_memory_being_edited_is_excluded(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, **TEXT)])

    assert engine.dedup_hint(project="alpha", exclude=[uid(1)], **TEXT) is None


def test_other_projects_are_out_of_scope(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, project="beta", **TEXT)])

    assert engine.dedup_hint(project="alpha", **TEXT) is None


def test_embedder_trouble_means_no_hint(make_engine: MakeEngine):
    engine = make_engine([make_memory(1, **TEXT)], embedder=FakeEmbedder(fail=True))
    assert engine.dedup_hint(project="alpha", **TEXT) is None

    broken = make_engine([make_memory(1, **TEXT)])
    broken.planes.vectors.fail = True  # type: ignore[union-attr]
    assert broken.dedup_hint(project="alpha", **TEXT) is None

    assert (
        make_engine([make_memory(1, **TEXT)], embedder=None).dedup_hint(project="alpha", **TEXT)
        is None
    )


def test_a_restatement_is_a_text_holding_nearly_every_word_of_the_new_one():
    old = make_memory(
        1, "replica-lag", description="The read replica lags 2 s at month end",
        body="Reports read from the replica, which falls behind during invoice runs.",
    )  # fmt: skip
    same = said_words("The read replica lags 2 seconds at month end", old.body)
    less = said_words("Replica lags at month end", "")  # five words: too few to tell
    other = said_words("The read replica is promoted at month end", "Reports read the primary.")

    assert restates(same, old) and not restates(less, old) and not restates(other, old)


def test_a_few_words_restate_only_the_same_words_in_the_same_order():
    old = make_memory(1, "ledger-db", description="The ledger lives in Postgres", body="")
    bye = make_memory(2, "bye", description="Nate: Bye Joanna!", body="")

    assert restates(said_words("the ledger lives in  postgres!", ""), old)
    assert not restates(said_words("Postgres holds the ledger", ""), old)
    assert not restates(said_words("The ledger lives in Postgres 16", ""), old)
    assert not restates(said_words("Joanna: Bye Nate!", ""), bye)  # the same words, swapped
    assert not restates(said_words("", ""), make_memory(3, "empty", description="", body=""))
