"""console/allocator.py: glibc's arenas capped and freed memory handed back."""

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
