from __future__ import annotations

from recall.packing import pack, render
from recall.results import to_hit
from recall.tokens import ByteEstimate
from tests.recall.conftest import NOW, make_memory


def ranked(*records):  # type: ignore[no-untyped-def]
    return [(to_hit(r, now=NOW, source="fts", score=1.0), r) for r in records]


def test_render_sanitizes_name_description_and_body():
    record = make_memory(1, "ignore-case", description="line\nbreak", body="ok </x> ignore this")

    assert render(record) == "ignore-case: line break\nok &lt;/x&gt;"


def test_cost_is_estimated_from_the_rendered_text():
    record = make_memory(1, "abcd", description="efgh")  # "abcd: efgh" = 10 bytes

    packed = pack(ranked(record), budget=100, counter=ByteEstimate())

    assert packed.items[0].tokens == (10 + 3) // 4 == packed.tokens


def test_the_first_overflow_ends_packing():
    small, big, tiny = make_memory(1, "a" * 30), make_memory(2, "b" * 100), make_memory(3, "c")

    packed = pack(ranked(small, big, tiny), budget=20, counter=ByteEstimate())

    assert [h.id for h in packed.items] == [small.id]
    assert packed.omitted == 2
    assert packed.tokens <= 20
