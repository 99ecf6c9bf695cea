"""Snippets in plain Python: the best short fragment of a text, matched words marked.

For a plane whose engine has no usable highlighter. PostgreSQL's
`ts_headline` parses its input as HTML-ish text and drops what looks like a
tag (`<b>` vanishes from "the cache <b>flushes</b>"), and the snippet
contract is raw text: the document's own characters, only the matched words
wrapped in \\x01 ... \\x02. So the PostgreSQL text plane finds its hits in
SQL and cuts their fragments here, given a predicate that says whether a
word (lower-cased and folded, `tokens`) matched (the plane decides it with the
same stemmer as its index).

A fragment is a window of `WINDOW` words starting `LEAD` words before a
matched word: of those, the one holding the most matched words (the earliest
on a tie), moved back to hold `WINDOW` words when the text ends first (a text
that short is shown whole, as tantivy's snippets show it), widened to
whitespace on both ends so punctuation stays with its word.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import accumulate

from recall import query

WORD = re.compile(query.WORD)  # a kana or ideograph is a word of its own
WINDOW = 24
LEAD = 6  # words of context before the first match in the window


def tokens(text: str) -> list[str]:
    """The words of a text, lower-cased and folded, as the text planes split them."""
    return [query.fold(w.lower()) for w in WORD.findall(text)]


def _plain(text: str) -> str:
    """Stray sentinels dropped, so a renderer can trust the ones we add."""
    return text.replace("\x01", "").replace("\x02", "")


def fragment(text: str, matched: Callable[[str], bool]) -> str | None:
    """The best window of `text` with matched words wrapped; None when nothing matches."""
    spans = [(m.start(), m.end()) for m in WORD.finditer(text)]
    hits = [matched(query.fold(text[s:e].lower())) for s, e in spans]
    if not any(hits):
        return None
    n = len(spans)
    seen = list(accumulate(hits, initial=0))  # seen[i]: matches among the first i words
    # Each window starts LEAD words before a match; the one holding most matches wins.
    starts = sorted({max(0, i - LEAD) for i, hit in enumerate(hits) if hit})
    start = max(starts, key=lambda i: (seen[min(i + WINDOW, n)] - seen[i], -i))
    start = max(0, min(start, n - WINDOW))  # a window short of the end takes earlier words
    end = min(n, start + WINDOW)
    return _marked(text, spans[start:end], hits[start:end])


def _marked(text: str, spans: Sequence[tuple[int, int]], hits: Sequence[bool]) -> str:
    left = text.rfind(" ", 0, spans[0][0]) + 1
    right = text.find(" ", spans[-1][1])
    right = len(text) if right < 0 else right
    parts: list[str] = []
    pos = left
    for (s, e), hit in zip(spans, hits, strict=True):
        if hit:
            parts.append(_plain(text[pos:s]) + "\x01" + _plain(text[s:e]) + "\x02")
            pos = e
    parts.append(_plain(text[pos:right]))
    return "".join(parts).strip()


def widen(text: str, shown: str) -> tuple[str, str]:
    """What stands in `text` right before and after `shown` (where it first occurs) up
    to whitespace: an engine's fragment ends at the last word it scored, and so cut a
    full stop or a link's brackets off ("see [[idempotency-keys")."""
    at = text.find(shown) if shown else -1
    if at < 0:
        return "", ""
    before = re.search(r"\S*$", text[:at])
    after = re.match(r"\S*", text[at + len(shown) :])
    return (before.group() if before else ""), (after.group() if after else "")


def head(texts: Sequence[str]) -> str:
    """The first words of the first non-empty text (no match to show)."""
    for text in texts:
        if text.strip():
            return _plain(" ".join(text.split()[:WINDOW]))
    return ""


def snippet(fields: Sequence[str], matched: Callable[[str], bool], *, fallback: str = "") -> str:
    """The best fragment of the first field with a match, else the head of the first non-empty."""
    for text in fields:
        found = fragment(text, matched) if text else None
        if found is not None:
            return found
    return head([*fields, fallback])
