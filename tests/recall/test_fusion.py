from __future__ import annotations

import math

import pytest

from recall.fusion import Fused, asking_turns, fuse, rrf, session_prior, zscore
from recall.results import Provenance
from recall.types import Candidate


def c(doc: str, rank: int, score: float = 0.0, snippet: str | None = None) -> Candidate:
    return Candidate(id=doc, rank=rank, score=score, snippet=snippet)


def test_an_item_in_both_channels_outranks_items_in_one():
    fused = rrf(
        {"fts": [c("a", 1), c("b", 2)], "semantic": [c("b", 1)]}, weights={"fts": 1, "semantic": 1}
    )

    assert [f.id for f in fused] == ["b", "a"]
    assert fused[0].score == pytest.approx(1 / (60 + 2) + 1 / (60 + 1))
    assert fused[1].score == pytest.approx(1 / (60 + 1))


def test_rrf_weights_and_k_scale_each_channel():
    fused = rrf(
        {"fts": [c("a", 1)], "semantic": [c("b", 1), c("a", 3)]},
        weights={"fts": 0.6, "semantic": 0.4},
        k=10,
    )

    scores = {f.id: f.score for f in fused}
    assert scores["a"] == pytest.approx(0.6 / (10 + 1) + 0.4 / (10 + 3))
    assert scores["b"] == pytest.approx(0.4 / (10 + 1))


def test_rrf_ties_break_on_id():
    fused = rrf({"fts": [c("b", 1)], "semantic": [c("a", 1)]}, weights={"fts": 1, "semantic": 1})

    assert [f.id for f in fused] == ["a", "b"]


def test_fused_hits_keep_provenance_and_fts_snippet():
    fused = rrf(
        {"fts": [c("a", 2, 7.5, "x \x01a\x02")], "semantic": [c("a", 1, 0.8)]},
        weights={},
    )

    assert fused[0].sources == (Provenance("fts", 2, 7.5), Provenance("semantic", 1, 0.8))
    assert fused[0].snippet == "x \x01a\x02"
    assert fused[0].source == "fused"
    assert fused[0].raw("semantic") == 0.8


def test_single_channel_hit_is_named_by_its_channel():
    fused = rrf({"fts": [c("a", 1)], "semantic": [c("b", 1)]}, weights={})

    assert {f.id: f.source for f in fused} == {"a": "fts", "b": "semantic"}


def test_zscore_matches_hand_computed_values():
    # fts scores 3, 1 -> mean 2, sd 1 -> z 1, -1 (min -1)
    # semantic scores 0.9, 0.5, 0.1 -> mean 0.5, sd sqrt(0.32/3) -> z ±0.4/sd, 0
    fused = zscore(
        {
            "fts": [c("a", 1, 3.0), c("b", 2, 1.0)],
            "semantic": [c("c", 1, 0.9), c("a", 2, 0.5), c("d", 3, 0.1)],
        },
        weights={"fts": 0.6, "semantic": 0.4},
    )

    sd = math.sqrt((0.4**2 + 0 + 0.4**2) / 3)
    z_hi = 0.4 / sd
    expected = {
        "a": 0.6 * 1 + 0.4 * 0,
        "b": 0.6 * -1 + 0.4 * -z_hi,  # missing from semantic: its minimum z
        "c": 0.6 * -1 + 0.4 * z_hi,  # missing from fts: its minimum z
        "d": 0.6 * -1 + 0.4 * -z_hi,
    }
    assert {f.id: f.score for f in fused} == pytest.approx(expected)
    assert [f.id for f in fused] == ["a", "c", "b", "d"]  # b and d tie: by id


def test_a_list_without_spread_lifts_what_it_found_above_what_it_did_not():
    fused = zscore({"fts": [c("b", 1, 2.0), c("a", 2, 2.0)]}, weights={"fts": 1})

    assert [(f.id, f.score) for f in fused] == [("a", 1.0), ("b", 1.0)]


def test_a_lone_full_text_match_counts_beside_the_meaning_channel():
    """The one memory holding a rare word, also the meaning channel's best, beats the
    meaning channel's second (a lone hit's z was 0: full text counted for nothing)."""
    meaning = [c("runbook", 1, 0.62), c("other", 2, 0.58), c("third", 3, 0.30), c("far", 4, 0.1)]
    fused = zscore(
        {"fts": [c("runbook", 1, 7.5)], "semantic": meaning}, weights={"fts": 0.6, "semantic": 0.4}
    )

    scores = {f.id: f.score for f in fused}
    assert scores["runbook"] - scores["other"] > 0.6  # full text's 0.6 x 1, on top


def test_a_lone_full_text_match_outranks_meaning_only_neighbours_it_is_not_among():
    """The one memory holding a rare word (a marker, an error code), absent from the
    meaning channel's list of near-duplicates, is the first hit: a list without spread
    gives its member the gap the meaning list has between its top and its floor, not 1
    (with 1, 40 of 300 such markers missed a Search's first page)."""
    meaning = [c(f"near{n:02}", n, 0.80 - 0.004 * n) for n in range(1, 51)]
    fused = zscore(
        {"fts": [c("marker", 1, 11.2)], "semantic": meaning}, weights={"fts": 0.6, "semantic": 0.4}
    )

    assert fused[0].id == "marker"
    assert [f.id for f in fused[1:4]] == ["near01", "near02", "near03"]


def test_zscore_ignores_an_empty_channel():
    fused = zscore({"fts": [c("a", 1, 2.0), c("b", 2, 1.0)], "semantic": []}, weights={})

    assert [f.id for f in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(1.0)


@pytest.mark.parametrize("method", ["rrf", "zscore"])
def test_fuse_dispatches_on_method(method: str):
    fused = fuse({"fts": [c("a", 1, 1.0)]}, method=method, weights={}, k=60)

    assert [f.id for f in fused] == ["a"]


def test_fuse_rejects_an_unknown_method():
    with pytest.raises(ValueError, match="borda"):
        fuse({}, method="borda", weights={}, k=60)


def test_session_prior_adds_the_best_score_of_the_hits_session() -> None:
    fused = [Fused("a", 2.0, ()), Fused("b", 1.0, ()), Fused("c", 1.5, ())]
    sessions = {"a": "s1", "b": "s1", "c": "s2"}

    lifted = session_prior(fused, sessions, weight=0.5)

    assert [f.id for f in lifted] == ["a", "c", "b"]
    assert [f.score for f in lifted] == pytest.approx([2.0 + 1.0, 1.5 + 0.75, 1.0 + 1.0])


def test_a_hit_without_a_session_is_its_own_session() -> None:
    fused = [Fused("alone", 1.0, ()), Fused("x", 0.9, ()), Fused("y", -0.5, ())]

    lifted = session_prior(fused, {"x": "s", "y": ""}, weight=0.3)

    assert [f.score for f in lifted] == pytest.approx([1.3, 0.9 * 1.3, -0.5 * 1.3])


def test_session_prior_reorders_and_breaks_ties_by_id() -> None:
    fused = [Fused("top", 3.0, ()), Fused("m", 1.15, ()), Fused("z", 1.0, ())]

    lifted = session_prior(fused, {"top": "s", "z": "s"}, weight=0.1)

    assert [f.id for f in lifted] == ["top", "z", "m"]  # 1.0 + 0.3 > 1.15 + 0.115
    tied = session_prior([Fused("b", 1.0, ()), Fused("a", 1.0, ())], {}, weight=1.0)
    assert [f.id for f in tied] == ["a", "b"]


def test_session_prior_at_zero_changes_nothing() -> None:
    fused = [Fused("b", 1.0, ()), Fused("a", 2.0, ())]

    assert session_prior(fused, {"a": "s", "b": "s"}, weight=0) == fused


def test_asking_turns_lowers_by_weight_times_the_spread_of_the_scores() -> None:
    fused = [Fused("q", 3.0, ()), Fused("a", 2.0, ()), Fused("b", 1.0, ())]
    spread = (2 / 3) ** 0.5  # population standard deviation of 3, 2, 1

    lowered = asking_turns(fused, {"q"}, weight=1.5)

    assert [f.id for f in lowered] == ["a", "q", "b"]  # 3 - 1.22: below 2, above 1
    assert lowered[1].score == pytest.approx(3.0 - 1.5 * spread)
    assert lowered[0] == fused[1]


def test_asking_turns_measures_the_spread_on_the_first_thirty() -> None:
    head = [Fused(f"h{i:02d}", 10.0 - i * 0.1, ()) for i in range(30)]
    tail = [Fused("far", -1000.0, ())]
    top = [f.score for f in head]
    mean = sum(top) / 30
    spread = (sum((s - mean) ** 2 for s in top) / 30) ** 0.5

    lowered = asking_turns([*head, *tail], {"h00"}, weight=1.0)

    assert {f.id: f.score for f in lowered}["h00"] == pytest.approx(10.0 - spread)


def test_asking_turns_at_zero_without_askers_or_spread_changes_nothing() -> None:
    fused = [Fused("a", 2.0, ()), Fused("b", 1.0, ())]
    assert asking_turns(fused, {"a"}, weight=0) == fused
    assert asking_turns(fused, set(), weight=1.0) == fused
    flat = [Fused("a", 1.0, ()), Fused("b", 1.0, ())]
    assert asking_turns(flat, {"a"}, weight=1.0) == flat
