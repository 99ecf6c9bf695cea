"""Reading `?page=` (console/views/paging.py)."""

from __future__ import annotations

import pytest

from console.views.paging import PAST_THE_END, asked_page, page_notice


@pytest.mark.parametrize(
    ("text", "page"),
    [
        (None, 1), ("", 1), (" 2 ", 2), ("007", 7), ("999999999", 999999999),
        ("1" * 10, PAST_THE_END), ("9" * 5000, PAST_THE_END),
        ("0", None), ("000", None), ("-1", None), ("abc", None), ("1e2", None),
        ("2.0", None), ("²", None), ("٣", None),
    ],
)  # fmt: skip
def test_asked_page_reads_only_a_whole_number_from_one(text: str | None, page: int | None) -> None:
    assert asked_page(text) == page


@pytest.mark.parametrize(
    ("text", "shown", "pages", "notice"),
    [
        (None, 1, 3, ""),
        ("2", 2, 3, ""),
        ("9", 3, 3, "There is no page 9: showing page 3, the last."),
        ("2", 1, 1, "There is no page 2: showing the only page."),
        ("x" * 30, 1, 3, f"“{'x' * 19}…” is not a page number: showing the first page."),
    ],
)
def test_page_notice_says_which_page_is_shown_instead(
    text: str | None, shown: int, pages: int, notice: str
) -> None:
    assert page_notice(text, shown=shown, pages=pages) == notice
