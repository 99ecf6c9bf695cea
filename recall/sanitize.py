"""Making stored text safe to show: to agents (plain text) and to people (HTML).

Agent-facing text is wrapped in one tag pair (`<memory-briefing>` ...). Any
stored field interpolated into it goes through `field` (or `name`): newlines
become spaces, phrases that start a prompt injection are cut to the end of
their line, `<` and `>` are escaped so no stored text can close or open the
wrapper (seamless leaves that hole open), and lengths are capped at a word
boundary. `truncate_block` is the last line of defence on a whole block.
"""

from __future__ import annotations

import html
import re

ELLIPSIS = "…"
MARK_START = "\x01"
MARK_END = "\x02"

# Whole words, case-insensitive, and not hyphen-attached (a slug such as
# `ignore-case-flag` or `no-override` is a name, not an instruction).
_INJECTION = re.compile(
    r"(?<![\w-])(?:ignore|disregard|from\s+now\s+on|you\s+must|override)(?![\w-])[^\n]*",
    re.IGNORECASE,
)
_SPACES = re.compile(r"\s+")
# C0/C1 control characters (our \x01/\x02 sentinels among them) have no place
# in agent-facing text; newlines and tabs become spaces with the other spacing.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def scrub(text: str) -> str:
    """Remove each injection-starting phrase and the rest of its line."""
    return _INJECTION.sub("", text)


def escape_angles(text: str) -> str:
    return text.replace("<", "&lt;").replace(">", "&gt;")


def cap(text: str, limit: int) -> str:
    """At most `limit` characters, cut at a word boundary, with an ellipsis."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space >= limit // 2:
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS


def field(text: str | None, limit: int = 300, *, scrub_phrases: bool = True) -> str:
    """One stored field made safe for agent-facing text (see module docstring)."""
    if not text:
        return ""
    text = _CONTROLS.sub("", text)
    if scrub_phrases:
        text = scrub(text)
    text = _SPACES.sub(" ", text).strip()
    return escape_angles(cap(text, limit))


def name(text: str | None, limit: int = 120) -> str:
    """A name or slug: sanitized but never phrase-scrubbed, so it round-trips to memory_read."""
    return field(text, limit, scrub_phrases=False)


def attribute(text: str | None, limit: int = 120) -> str:
    """A value for a tag attribute (quotes and ampersands escaped too)."""
    return html.escape(name(text, limit).replace("&lt;", "<").replace("&gt;", ">"), quote=True)


def truncate_block(text: str, *, max_bytes: int, closing: str) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes, still ending with `closing`.

    Cuts on a line boundary when one is near, never inside a UTF-8 sequence,
    and re-appends the closing tag so the wrapper always closes.
    """
    data = text.encode("utf-8")
    if len(data) <= max_bytes:
        return text
    tail = ("\n" + closing).encode("utf-8")
    room = max(0, max_bytes - len(tail))
    head = data[:room].decode("utf-8", errors="ignore")
    line = head.rfind("\n")
    if line >= len(head) // 2:
        head = head[:line]
    return head + "\n" + closing if room else closing


def snippet_html(snippet: str | None) -> str | None:
    """A raw FTS snippet as HTML: escaped FIRST, then sentinels become <mark>.

    A stray or unbalanced sentinel never produces broken markup: an end
    without a start is dropped, a start without an end is closed at the end.
    """
    if snippet is None:
        return None
    out: list[str] = []
    open_mark = False
    for part in re.split(f"([{MARK_START}{MARK_END}])", snippet):
        if part == MARK_START:
            if not open_mark:
                out.append("<mark>")
                open_mark = True
        elif part == MARK_END:
            if open_mark:
                out.append("</mark>")
                open_mark = False
        else:
            out.append(html.escape(part, quote=True))
    if open_mark:
        out.append("</mark>")
    return "".join(out).replace("<mark></mark>", "")
