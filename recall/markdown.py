"""What a memory's markdown is made of, as far as cutting and extracting text need.

A pack that cuts an item inside a fenced code block closes the fence
(`open_fence`, recall/packing.py); a digest takes its sentences from prose
only (`prose`, recall/digest.py): a line of code, a table row or a rule is no
sentence a person would write in a summary; passages read a fenced block as one
(recall/passages.py), and the console's plain text reads code lines and rules
the same way (console/views/text.py `plain_blocks`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

# A line opening or closing a fenced code block (CommonMark: three or more ` or ~,
# indented at most three spaces); a closing fence is the same character, as long or longer.
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})", re.MULTILINE)
# An inline code span: a run of backticks up to the next run of the same length.
_CODE_SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
# A table's separator row (| --- | :-: |) or a thematic break (---, ***, * * *).
_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$|^\s*(?:[-*_]\s*){3,}$")


def fence(line: str) -> str:
    """The fence `line` starts with (it opens or closes a fenced code block), else ""."""
    found = _FENCE.match(line)
    return found.group(1) if found is not None else ""


def rule(line: str) -> bool:
    """Whether `line` is a table's separator row or a thematic break: no text."""
    return _RULE.match(line) is not None


def closes(line: str, opened: str) -> bool:
    """Whether `line` closes the code block `opened` (its fence) opened."""
    return _closes(fence(line), opened)


def _closes(mark: str, opened: str) -> bool:
    return bool(mark) and mark[0] == opened[0] and len(mark) >= len(opened)


def open_fence(text: str) -> str:
    """The fence of the code block `text` leaves open at its end, "" when none is."""
    opened = ""
    for m in _FENCE.finditer(text):
        mark = m.group(1)
        if not opened:
            opened = mark
        elif _closes(mark, opened):
            opened = ""
    return opened


def prose(text: str) -> str:
    """`text` without its fenced code blocks, table rows and rules (line by line)."""
    kept = (line for line in _outside_fences(text) if not rule(line) and not _table_row(line))
    return "\n".join(kept)


def without_code(text: str) -> str:
    """`text` with its fenced code blocks and inline code spans left out (each span
    a space): what reads as markup there is code (`[[tool.mypy.overrides]]` is
    TOML, no link)."""
    return _CODE_SPAN.sub(" ", "\n".join(_outside_fences(text)))


def _outside_fences(text: str) -> Iterator[str]:
    """The lines of `text` outside its fenced code blocks (the fences' own lines too)."""
    opened = ""
    for line in text.splitlines():
        mark = fence(line)
        if mark:
            opened = "" if opened and _closes(mark, opened) else opened or mark
        elif not opened:
            yield line


def _table_row(line: str) -> bool:
    """A table row: it starts with a pipe, or holds two (prose rarely does)."""
    stripped = line.strip()
    return stripped.startswith("|") or stripped.count("|") >= 2
