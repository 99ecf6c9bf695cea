"""console/allocator.py: glibc's arenas capped, freed memory handed back, the warm heap frozen."""

from __future__ import annotations

import platform

import pytest

from console import allocator

GLIBC = platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(
    not GLIBC, reason="mallopt and malloc_trim exist only in glibc; elsewhere the next test applies"
)
def test_on_glibc_the_arenas_are_capped_and_freed_heap_is_returned() -> None:
    assert allocator.tune() is True

    scattered = [bytes(200) for _ in range(300_000)]  # small blocks: the heap, not mmap
    del scattered

    assert allocator.trim() is True  # 60 MB of freed heap pages went back


def test_without_glibc_both_calls_do_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allocator, "_glibc", lambda: None)

    assert allocator.tune() is False and allocator.trim() is False


def test_frozen_objects_are_left_out_of_full_collections() -> None:
    import gc

    held = [[n] for n in range(200_000)]  # tracked containers, as the vector copy's rows
    try:
        assert allocator.freeze() >= len(held)
        walked = {id(o) for generation in (0, 1, 2) for o in gc.get_objects(generation)}
        assert not any(id(x) in walked for x in held)  # no collection walks them now
        gone: list[object] = [[]]
        gone.append(gone)  # a cycle made after the freeze is still collected
        del gone
        assert gc.collect() >= 1
    finally:
        gc.unfreeze()
