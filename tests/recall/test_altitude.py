"""Recall at an altitude (recall/altitude.py): never a digest with a row it covers,
the fallback with a warning, auto at the boundary, tenant over the given digests."""

from __future__ import annotations

import pytest

from recall import altitude
from recall.agent import dumps, pack_view
from recall.digest import Digest, Sentence
from recall.errors import QueryError
from recall.requests import RecallRequest
from tests.recall.conftest import MakeEngine, ids, make_memory, uid

BODY = "The chroma cache must be warmed before traffic arrives, or the first requests time out."


def world(make_engine: MakeEngine):  # type: ignore[no-untyped-def]
    records = [make_memory(i, description=f"chroma note {i}", body=BODY) for i in range(1, 7)]
    records.append(make_memory(7, project="beta", description="chroma beta", body=BODY))
    return make_engine(records, embedder=None)


SCOPE = Digest("alpha", (
    Sentence("Warm the chroma cache before traffic.", uid(1), (uid(1), uid(2))),
    Sentence("Chroma requests time out when cold.", uid(3), (uid(3),)),
))  # fmt: skip
BETA = Digest("beta", (Sentence("Beta warms chroma too.", uid(7), (uid(7),)),))


def ask(**kw: object) -> RecallRequest:
    return RecallRequest(query="chroma", project="alpha", debug=True, **kw)  # type: ignore[arg-type]


def test_a_digest_and_a_row_it_covers_never_share_a_pack(make_engine: MakeEngine):
    pack = world(make_engine).recall(ask(altitude="scope", digests=(SCOPE,), budget=4000))

    assert pack.items[0].kind == "digest" and pack.items[0].covers == 3
    assert ids(pack.items[1:]) and not set(ids(pack.items)) & SCOPE.covered
    assert set(ids(pack.items[1:])) == {uid(4), uid(5), uid(6)}  # the uncovered rows follow
    assert pack.debug is not None and pack.debug["altitude"]["answered"] == "scope"
    assert pack.debug["altitude"]["covered"] == sorted(SCOPE.covered)
    assert pack.omitted == 0 and pack.tokens <= pack.budget


def test_a_digest_cut_to_the_budget_covers_only_the_sentences_kept(make_engine: MakeEngine):
    engine = world(make_engine)
    one = engine.recall(ask(altitude="scope", digests=(SCOPE,), budget=4000, detail="index"))

    def digest_first(budget: int) -> bool:
        items = engine.recall(ask(altitude="scope", digests=(SCOPE,), budget=budget)).items
        return bool(items) and items[0].kind == "digest"

    tight = next(b for b in range(50, 400) if digest_first(b))  # the first sentence alone fits

    pack = engine.recall(ask(altitude="scope", digests=(SCOPE,), budget=tight))

    assert (
        one.items[0].text
        == "Warm the chroma cache before traffic.\nChroma requests time out when cold."
    )
    assert pack.items[0].text == "Warm the chroma cache before traffic."  # one sentence fits
    assert pack.debug is not None and pack.debug["altitude"]["covered"] == [uid(1), uid(2)]
    assert uid(3) not in SCOPE.sentences[0].covers and pack.tokens <= tight


def test_no_digest_falls_back_to_rows_with_a_warning(make_engine: MakeEngine):
    engine = world(make_engine)
    rows = engine.recall(ask(budget=4000))

    for asked in ("scope", "tenant"):
        pack = engine.recall(ask(altitude=asked, budget=4000))
        assert ids(pack.items) == ids(rows.items)
        assert any("no digest" in w and "answered with rows" in w for w in pack.warnings)
        assert pack.debug is not None and pack.debug["altitude"]["answered"] == "entity"


def test_a_digest_whose_first_sentence_overflows_falls_back(make_engine: MakeEngine):
    huge = Digest("alpha", (Sentence("chroma " * 400, uid(1), (uid(1),)),))

    pack = world(make_engine).recall(ask(altitude="scope", digests=(huge,), budget=300))

    assert all(h.kind == "memory" for h in pack.items)
    assert any("first sentence exceeds the budget" in w for w in pack.warnings)


def test_auto_descends_to_rows_when_they_fit_and_climbs_one_token_below(make_engine: MakeEngine):
    engine = world(make_engine)
    fits = next(b for b in range(50, 4000)
                if altitude.fits_pack(engine.recall(ask(budget=b)), 6))  # fmt: skip

    at = engine.recall(ask(altitude="auto", digests=(SCOPE,), budget=fits))
    below = engine.recall(ask(altitude="auto", digests=(SCOPE,), budget=fits - 1))

    assert ids(at.items) == ids(engine.recall(ask(budget=fits)).items)
    assert at.debug is not None and at.debug["altitude"]["answered"] == "entity"
    assert below.items[0].kind == "digest"
    assert below.debug is not None and below.debug["altitude"]["answered"] == "scope"
    assert "need more than the budget" in str(below.debug["altitude"]["why"])


def test_tenant_merges_the_given_digests_and_nothing_else(make_engine: MakeEngine):
    pack = world(make_engine).recall(ask(altitude="tenant", digests=(SCOPE, BETA), budget=4000))

    assert pack.items[0].id == "digest-tenant"
    assert pack.items[0].text == (
        "[alpha] Warm the chroma cache before traffic.\n[beta] Beta warms chroma too."
        "\n[alpha] Chroma requests time out when cold."
    )  # each sentence names its project: one text, several projects
    alone = world(make_engine).recall(ask(altitude="tenant", digests=(SCOPE,), budget=4000))
    assert alone.items[0].text == "\n".join(s.text for s in SCOPE.sentences)  # its own alone


@pytest.mark.parametrize("budget", [50, 100, 160, 4000])
def test_a_tenant_digests_project_names_are_counted_and_fit(make_engine: MakeEngine, budget: int):
    engine = world(make_engine)
    pack = engine.recall(
        RecallRequest(query="chroma", project="alpha", altitude="tenant",
                      digests=(SCOPE, BETA), budget=budget)
    )  # fmt: skip

    assert pack.tokens == engine.planes.tokens.count(dumps(pack_view(pack))) <= budget
    digest = [h for h in pack.items if h.kind == "digest"]
    assert budget < 160 or digest  # from 160 tokens the first sentence fits
    for line in (digest[0].text or "").split("\n") if digest else ():
        assert line.startswith(("[alpha] ", "[beta] "))


def test_entity_is_the_default_and_ignores_digests(make_engine: MakeEngine):
    engine = world(make_engine)

    pack = engine.recall(ask(digests=(SCOPE,), budget=4000))

    assert all(h.kind == "memory" for h in pack.items) and len(pack.items) == 6


def test_an_unknown_altitude_is_a_query_error(make_engine: MakeEngine):
    with pytest.raises(QueryError, match="altitude must be one of auto, entity, scope, tenant"):
        world(make_engine).recall(ask(altitude="orbit"))


def test_auto_asks_only_the_top_rows_to_fit_whole(make_engine: MakeEngine):
    records = [make_memory(i, description=f"chroma note {i}", body=BODY) for i in range(1, 15)]
    engine = make_engine(records, embedder=None)

    def whole(budget: int) -> int:  # how many rows went in whole
        return sum(1 for h in engine.recall(ask(budget=budget)).items if not h.truncated)

    budget = next(b for b in range(50, 8000) if whole(b) >= altitude.AUTO_ROWS)
    pack = engine.recall(ask(altitude="auto", digests=(SCOPE,), budget=budget))

    assert pack.omitted > 0  # the rows below the cut do not all fit ...
    assert pack.debug is not None and pack.debug["altitude"]["answered"] == "entity"  # ... yet
    assert "top 10 ranked rows fit" in str(pack.debug["altitude"]["why"])


@pytest.mark.parametrize("asked", ["scope", "tenant", "auto"])
def test_a_recorded_pack_at_any_altitude_counts_its_pack_id(make_engine: MakeEngine, asked: str):
    engine = world(make_engine)
    for digests, budget in (((SCOPE,), 4000), ((SCOPE,), 160), ((), 4000), ((), 200)):
        pack = engine.recall(
            RecallRequest(
                query="chroma",
                project="alpha",
                altitude=asked,
                digests=digests,
                budget=budget,
                pack_id="01JPACK0000000000000000000",
            )  # fmt: skip
        )
        sent = dumps(pack_view(pack))
        assert '"pack_id":"01JPACK0000000000000000000"' in sent
        assert pack.tokens == engine.planes.tokens.count(sent) <= budget
