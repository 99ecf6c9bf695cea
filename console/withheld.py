"""Text an agent was not shown (`recall.sanitize.WITHHELD`), kept through its writes.

Agent text marks where the phrase scrub cut a line. A write-back that keeps such a
line as it was read gets the stored line put back (`restored`: an edit or supersede
of a memory, an edit of a note); one that changed what was left of it, or a new item
holding the mark (`unmarked`), is refused (400, naming the field) rather than stored
with the mark in place of the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError

from console.models import Memory, Note
from recall import sanitize
from recall.agent import DESCRIPTION_CHARS, shown_lines

WITHHELD_NEW = (
    f"holds {sanitize.WITHHELD!r}, where a read left out text that reads as an "
    "instruction; a new memory has no stored text to put back there: write the text "
    "itself"
)
WITHHELD_CHANGED = (
    f"a line ending in {sanitize.WITHHELD!r} is not the line as it was read; keep "
    "that line as read (its stored text is put back) or leave the marker out"
)
# Each text field an agent reads scrubbed: the limit of its one line, or None for a
# body (read line by line); as `console.replies` shows them.
TEXTS: dict[str, int | None] = {"title": 200, "description": DESCRIPTION_CHARS, "body": None}


def warnings(fields: Mapping[str, Any], where: str = "") -> list[str]:
    """What a write stores that agents will not be shown: per text field, the lines
    the phrase scrub cuts (`recall.sanitize.cut_lines`). The text is stored whole and
    people see it; agents read `WITHHELD` from the phrase to the end of its line.
    The warning names lines, not phrases: it is agent text too, scrubbed the same."""
    out = []
    for name in TEXTS:
        lines = sanitize.cut_lines(str(fields.get(name) or ""))
        if lines:
            at = ", ".join(str(n) for n in lines[:5]) + (", ..." if len(lines) > 5 else "")
            out.append(
                f"{where}{name}, line{'s' if len(lines) > 1 else ''} {at}: part reads as an "
                f"instruction, so agents read {sanitize.WITHHELD!r} from there to the line's "
                "end (the text is stored whole; rephrase it for agents to read it)"
            )
    return out


def unmarked(fields: Mapping[str, Any], where: str = "") -> None:
    """400 for a new item's text that holds the withheld mark (nothing to restore)."""
    for name in TEXTS:
        if sanitize.withheld(fields.get(name)):
            raise ValidationError({f"{where}{name}": WITHHELD_NEW})


def restored(item: Memory | Note, fields: Mapping[str, Any]) -> dict[str, Any]:
    """`fields` with the text an agent was not shown put back where its read marked
    it, and the images it read as links (`sanitize.restore`): an item read, edited
    and written back keeps them."""
    out = dict(fields)
    for name, limit in TEXTS.items():
        written = out.get(name)
        if not sanitize.marked(written):
            continue
        stored = str(getattr(item, name, "") or "")
        if limit is None:
            back = sanitize.restore(str(written), stored, shown_lines)
        elif str(written).strip() == sanitize.line(stored, limit):  # the one line as read
            back = stored
        else:  # changed: its own text, unless it keeps a mark of text it was not shown
            back = None if sanitize.withheld(written) else str(written)
        if back is None:
            raise ValidationError({name: WITHHELD_CHANGED})
        out[name] = back
    return out
