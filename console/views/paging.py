"""Which page of a paged list to show for `?page=`, and what to tell the person.

A list changes under its links (a filter, an archive, a delete), and people type
addresses: a page past the last, or a `page` that is not a page number, shows the
nearest page (the last, or the first) with a notice saying which was asked for and
which is shown, on every paged list (search results, a project's memories). Never a
silent other page, and never a 404 for a list that exists.
"""

from __future__ import annotations

import re

SHOWN_CHARS = 20  # of what `page` held, quoted in the notice
PAST_THE_END = 10**9  # a number of more digits: past any list's end (and int() of it is slow)


def asked_page(text: str | None) -> int | None:
    """The page number in `?page=` (1 when blank), or None when it is not one (0 neither)."""
    text = (text or "").strip()
    if not text:
        return 1
    if not re.fullmatch(r"[0-9]+", text):
        return None
    digits = text.lstrip("0")
    if not digits:
        return None
    return int(digits) if len(digits) <= 9 else PAST_THE_END


def page_notice(text: str | None, *, shown: int, pages: int) -> str:
    """What to say when the page `shown` (of `pages`) is not the one `?page=` asked for."""
    text = (text or "").strip()
    asked = asked_page(text)
    quoted = text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
    if asked is None:
        return f"“{quoted}” is not a page number: showing the first page."
    if asked == shown:
        return ""
    where = "the only page" if pages == 1 else f"page {shown}, the last"
    return f"There is no page {quoted}: showing {where}."
