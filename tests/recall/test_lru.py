"""The LRU map the caches share."""

from __future__ import annotations

import threading

import pytest

from recall.lru import LRU


def test_the_least_recently_used_entry_is_dropped_past_the_size() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    assert lru.get("a") == 1  # now the most recent
    lru.put("c", 3)

    assert "b" not in lru
    assert (lru.get("a"), lru.get("c"), len(lru)) == (1, 3, 2)


def test_putting_a_key_again_replaces_it_and_makes_it_the_most_recent() -> None:
    lru: LRU[str, int] = LRU(2)
    lru.put("a", 1)
    lru.put("b", 2)
    lru.put("a", 10)
    lru.put("c", 3)

    assert (lru.get("a"), "b" in lru, len(lru)) == (10, False, 2)


def test_an_entry_that_fails_its_test_is_dropped() -> None:
    lru: LRU[str, tuple[int, str]] = LRU(4)
    lru.put("k", (1, "page"))

    assert lru.get("k", valid=lambda kept: kept[0] == 1) == (1, "page")
    assert lru.get("k", valid=lambda kept: kept[0] == 2) is None
    assert "k" not in lru


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    lru: LRU[str, int] = LRU(0)
    lru.put("a", 1)
    assert (lru.get("a"), len(lru)) == (None, 0)
    with pytest.raises(ValueError):
        LRU(-1)


def test_clear_and_concurrent_writers_keep_it_within_its_size() -> None:
    lru: LRU[int, int] = LRU(50)

    def write(offset: int) -> None:
        for n in range(2_000):
            lru.put(offset + n, n)
            lru.get(offset + n // 2)

    threads = [threading.Thread(target=write, args=(k * 10_000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert len(lru) == 50
    lru.clear()
    assert len(lru) == 0
