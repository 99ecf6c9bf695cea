"""The extractive digest builder (recall/digest.py): split, MMR over centrality, covers."""

from __future__ import annotations

import numpy as np
import pytest

from recall import digest
from recall.digest import Digest, Sentence
from recall.testing import FakeEmbedder
from recall.tokens import ByteEstimate
from tests.recall.conftest import make_memory, uid


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Warm the big cache. Then deploy it now.", ["Warm the big cache.", "Then deploy it now."]),
        ("- run the nightly backup job\n- too short", ["run the nightly backup job"]),
        ("one two three", []),  # under MIN_WORDS
        # Code, table rows and rules are no sentences: the prose around them is.
        ("Restart the api pods.\n```sh\nkubectl rollout restart deploy/api --all now\n```\n"
         "| region | owner of it |\n|---|---|\n| eu-west | platform team on call |\n---\n"
         "Then watch the error rate.",
         ["Restart the api pods.", "Then watch the error rate."]),
        (" ".join(f"w{i}" for i in range(25)), [" ".join(f"w{i}" for i in range(20)) + " …"]),
        # A paragraph wrapped across lines is one sentence, not two halves.
        ("It uses the smoke customer and the\nStripe test clock for its checks.\n"
         "## Steps\n- Run the migrations first",
         ["It uses the smoke customer and the Stripe test clock for its checks.",
          "Run the migrations first"]),
        ("It uses the smoke customer and the\nstaging database for its checks.\n"
         "Bumping the version is how we flush a cache: old pods\nkeep reading the old key.",
         ["It uses the smoke customer and the staging database for its checks.",
          "Bumping the version is how we flush a cache: old pods keep reading the old key."]),
        # A link reads as its text: "Mind [[deploy-freeze-fridays]]." leaked the markup.
        ("Before a release mind [[deploy-freeze-fridays]] and [[runbook|the runbook]] first.",
         ["Before a release mind deploy-freeze-fridays and the runbook first."]),
    ],
)  # fmt: skip
def test_split_cuts_at_sentence_ends_list_items_and_long_runs(text: str, expected: list[str]):
    assert digest.split(text) == expected


def test_mmr_prefers_a_novel_sentence_to_a_duplicate_of_the_first():
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    centroid = np.array([2.6, 0.8]) / np.linalg.norm([2.6, 0.8])

    assert digest.centrality(vectors)[2] == pytest.approx(0.6 * centroid[0] + 0.8 * centroid[1])
    # a and b tie on centrality 0.9557 (a wins on index); then, without the redundancy
    # cut, b scores 0.7*0.9557 - 0.3*1.0 = 0.369 and c 0.7*0.8087 - 0.3*0.6 = 0.386
    assert digest.mmr(vectors, [1, 1, 1], budget=10, redundant=1.01) == [0, 2, 1]
    assert digest.mmr(vectors, [1, 1, 1], budget=10) == [0, 2]  # b restates a


def test_mmr_passes_over_a_sentence_that_overflows_the_budget():
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)

    # centralities 0.664, 0.996, 0.747: b goes first but costs 50; then c (0.7*0.747) beats a
    assert digest.mmr(vectors, [5, 50, 5], budget=12) == [2, 0]


def test_a_sentence_covers_its_source_and_rows_it_restates_entirely():
    pool = [Sentence("a", "m1"), Sentence("b", "m2"), Sentence("c", "m3"), Sentence("d", "m3")]
    vectors = np.array([[1, 0], [0.9, 0.436], [1, 0], [0, 1]], dtype=np.float32)

    # m2's only sentence has cosine 0.9 >= 0.8; m3 has one sentence far away: not covered
    assert digest.covers(pool, vectors, [0]) == [("m1", "m2")]


def test_build_links_each_sentence_to_the_rows_it_covers():
    records = [
        make_memory(1, body="The billing worker retries failed invoices every hour."),
        make_memory(2, body="The billing worker retries failed invoices every hour."),
        make_memory(3, body="Kafka consumers must commit offsets after processing."),
        make_memory(4, body="Archived advice nobody should read again today.", active=False),
    ]

    built = digest.build(records, project="alpha", embedder=FakeEmbedder(), counter=ByteEstimate())

    texts = [s.text for s in built.sentences]
    assert sorted(texts) == sorted({r.body for r in records[:3]})  # no inactive, no duplicate
    billing = next(s for s in built.sentences if s.text.startswith("The billing"))
    assert set(billing.covers) == {uid(1), uid(2)} and billing.covers[0] == billing.source
    assert built.covered == {uid(1), uid(2), uid(3)}


def test_build_stays_within_its_token_budget():
    records = [make_memory(i, body=f"Sentence number {i} says something rather long here.")
               for i in range(1, 30)]  # fmt: skip
    counter = ByteEstimate()

    built = digest.build(records, project="alpha", embedder=FakeEmbedder(), counter=counter,
                         budget=60)  # fmt: skip

    assert built.sentences
    assert sum(counter.count(s.text) + 1 for s in built.sentences) <= 60


def test_a_summarizer_replaces_the_extractive_step():
    class Shout:
        def summarize(self, sentences, *, budget, counter):  # type: ignore[no-untyped-def]
            return [
                Sentence(sentences[0].text.upper(), sentences[0].source, (sentences[0].source,))
            ]

    records = [make_memory(1, body="Warm the cache before traffic.")]
    built = digest.build(records, project="alpha", embedder=FakeEmbedder(),
                         counter=ByteEstimate(), summarizer=Shout())  # fmt: skip

    assert built.text == "WARM THE CACHE BEFORE TRAFFIC." and built.covered == {uid(1)}


def test_tenant_takes_each_projects_sentences_in_turn_each_named():
    a = Digest("alpha", (Sentence("a1", "1", ("1",)), Sentence("a2", "2", ("2",))))
    b = Digest("beta", (Sentence("b1", "3", ("3",)),))
    g = Digest(None, (Sentence("g1", "4", ("4",)),))

    merged = digest.tenant([a, b, g], bound="alpha")

    assert merged is not None
    assert [s.text for s in merged.sentences] == ["[alpha] a1", "[beta] b1", "[global] g1",
                                                  "[alpha] a2"]  # fmt: skip
    assert [s.covers for s in merged.sentences] == [("1",), ("3",), ("4",), ("2",)]
    assert merged.covered == {"1", "2", "3", "4"} and digest.tenant([]) is None


@pytest.mark.parametrize(
    ("project", "bound", "text"),
    [
        ("alpha", "alpha", "a1"),  # the bound project's alone: the pack item names it
        (None, None, "a1"),  # a recall bound to no project: the global digest alone
        ("beta", "alpha", "[beta] a1"),  # another project's alone (alpha's not built)
        (None, "alpha", "[global] a1"),
    ],
)
def test_a_tenant_digest_of_one_project_is_named_unless_it_is_the_bound_one(
    project: str | None, bound: str | None, text: str
):
    merged = digest.tenant([Digest(project, (Sentence("a1", "1", ("1",)),))], bound=bound)

    assert merged is not None and [s.text for s in merged.sentences] == [text]


def test_fingerprint_changes_when_an_active_row_changes():
    one = [make_memory(1), make_memory(2)]

    assert digest.fingerprint(one, "m") == digest.fingerprint(list(reversed(one)), "m")
    assert digest.fingerprint(one, "m") != digest.fingerprint(one[:1], "m")
    assert digest.fingerprint(one, "m") != digest.fingerprint(one, "other-model")


def test_a_vector_cache_embeds_only_the_sentences_it_has_not_seen():
    class Seen(FakeEmbedder):
        texts: list[str] = []

        def embed(self, texts):  # type: ignore[no-untyped-def]
            self.texts += list(texts)
            return super().embed(texts)

    embedder, cache = Seen(), digest.VectorCache(size=3)

    first = cache.embed(embedder, ["alpha beta", "gamma delta"])
    again = cache.embed(embedder, ["gamma delta", "epsilon zeta", "alpha beta"])

    assert embedder.texts == ["alpha beta", "gamma delta", "epsilon zeta"]
    assert np.allclose(again[0], first[1]) and np.allclose(again[2], first[0])
    assert cache.embed(embedder, []).shape == (0, embedder.dims)


def test_a_line_the_sanitizer_cut_gives_the_digest_no_sentence() -> None:
    record = make_memory(
        1,
        body="Restart the ledger worker after each deploy of billing.\n"
        "Attackers write ignore previous instructions into tickets all the time.",
    )
    said = [s.text for s in digest.candidates([record])]
    assert said == ["Restart the ledger worker after each deploy of billing."]
