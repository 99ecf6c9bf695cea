"""The hot tier's cache (recall.tiers): keyed by request and config, valid while the
planes' stamps hold, for at most its TTL, dropped on a write; the engine's tier labels."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from recall import tiers
from recall.requests import RecallRequest
from recall.results import ContextPack, Hit

PACK = ContextPack(items=(), omitted=0, tokens=20, budget=100, debug={"timings_ms": {}})


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Plane:
    def __init__(self, value: object) -> None:
        self.value = value

    def stamp(self) -> object:
        return self.value


def test_a_pack_serves_while_the_stamp_holds_and_the_ttl_has_not_run_out() -> None:
    clock = Clock()
    hot = tiers.HotTier(ttl_seconds=30, clock=clock)
    hot.put("k", (1,), PACK)

    assert hot.get("k", (1,)) is PACK
    assert hot.get("k", (2,)) is None  # a plane moved: gone for good
    assert hot.get("k", (1,)) is None
    hot.put("k", (1,), PACK)
    clock.now = 30.5
    assert hot.get("k", (1,)) is None


def test_no_stamp_no_caching_and_a_write_forgets_everything() -> None:
    hot = tiers.HotTier()
    hot.put("k", None, PACK)
    assert hot.get("k", None) is None and len(hot) == 0

    hot.put("k", (1,), PACK)
    hot.forget()
    assert hot.get("k", (1,)) is None


def test_the_least_recently_used_pack_goes_first() -> None:
    hot = tiers.HotTier(size=2)
    hot.put("a", (1,), PACK)
    hot.put("b", (1,), PACK)
    hot.get("a", (1,))
    hot.put("c", (1,), PACK)

    assert hot.get("b", (1,)) is None
    assert hot.get("a", (1,)) is PACK and hot.get("c", (1,)) is PACK


def test_a_plane_without_a_stamp_turns_the_hot_tier_off() -> None:
    assert tiers.stamp(Plane(3), None, Plane("x")) == (3, "x")
    assert tiers.stamp(Plane(3), Plane(None)) is None
    assert tiers.stamp(Plane(3), object()) is None


def test_the_key_ignores_spacing_but_not_the_words_or_the_config() -> None:
    req = RecallRequest(query="deploy  order ", project="a")
    same = RecallRequest(query=" deploy order", project="a")

    assert tiers.key(req, "cfg") == tiers.key(same, "cfg")
    assert tiers.key(req, "cfg") != tiers.key(RecallRequest(query="deploy", project="a"), "cfg")
    assert tiers.key(req, "cfg") != tiers.key(req, "other")
    assert tiers.key(req, "cfg") != tiers.key(
        RecallRequest(query="deploy order", project="b"), "cfg"
    )


def test_history_goes_to_the_cold_tier_and_debug_says_who_answered() -> None:
    assert tiers.tier_of(RecallRequest(query="q", project=None)) == tiers.WARM
    assert tiers.tier_of(RecallRequest(query="q", project=None, include_history=True)) == tiers.COLD
    then = datetime(2024, 1, 1, tzinfo=UTC)
    assert tiers.tier_of(RecallRequest(query="q", project=None, as_of=then)) == tiers.COLD
    assert tiers.tier_of(RecallRequest(query="q", project=None, recorded_as_of=then)) == tiers.COLD

    said = tiers.answered(PACK, tiers.HOT, started=0.0)
    assert said.debug is not None and said.debug["tier"] == "hot"
    assert set(said.debug["timings_ms"]) == {"hot", "total"}  # type: ignore[arg-type]
    quiet = ContextPack(items=(), omitted=0, tokens=20, budget=100)
    assert tiers.answered(quiet, tiers.WARM, started=0.0) is quiet


def test_the_key_leaves_out_the_pack_id() -> None:
    req = RecallRequest(query="deploy order", project="a", pack_id="01A")
    assert tiers.key(req, "cfg") == tiers.key(replace(req, pack_id="01B"), "cfg")


def test_a_pack_serves_only_until_the_first_of_its_memories_expires() -> None:
    at = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    soon, later = (Hit(kind="memory", id=i, name=i, title=i, description="", project=None,
                       age="1d", source="fts", score=1.0, expires_at=at + timedelta(seconds=s))
                   for i, s in (("a", 60), ("b", 600)))  # fmt: skip
    pack = replace(PACK, items=(later, soon))
    hot = tiers.HotTier()
    hot.put("k", (1,), pack)

    assert tiers.until(pack) == at + timedelta(seconds=60)
    assert hot.get("k", (1,), at + timedelta(seconds=59)) is pack
    assert hot.get("k", (1,), at + timedelta(seconds=60)) is None
    assert hot.get("k", (1,), at) is None  # gone for good once seen expired
