"""Reads of a memory's history: its revisions, a past state, a diff between two.

Selectors only (nothing here writes). A past state is rebuilt from the
revision rows as an unsaved `Memory`, so the API and the console render it
as they render the present; validity follows the engine's one rule
(`recall.timetravel.valid_at`).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import UTC, datetime

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from console.models import Memory, MemoryRevision
from console.store import memory_record
from recall.sanitize import revealed
from recall.timetravel import valid_at

# The fields a diff compares one by one (the body is diffed line by line, by words).
DIFF_FIELDS = (
    "project", "kind", "name", "description", "tags", "importance", "valid_from",
    "invalid_at", "superseded_by_id", "source", "agent_id", "session_id",
)  # fmt: skip


def revisions_of(*, memory_id: str) -> list[MemoryRevision]:
    """Every revision of a memory, oldest first (a deleted memory's too)."""
    rows = MemoryRevision.objects.filter(memory_id=memory_id).select_related("project")
    return list(rows.order_by("number"))


def revision_at(*, memory_id: str, recorded_at: datetime) -> MemoryRevision | None:
    """The memory's latest revision recorded at or before `recorded_at` (None: none)."""
    rows = MemoryRevision.objects.filter(memory_id=memory_id, recorded_at__lte=recorded_at)
    return rows.select_related("project").order_by("-number").first()


def latest_number(*, memory_id: str) -> int:
    """The number of the memory's latest revision (0: none): what an edit form opened at."""
    rows = MemoryRevision.objects.filter(memory_id=memory_id).order_by("-number")
    return rows.values_list("number", flat=True).first() or 0


def state_numbered(*, memory_id: str, number: int) -> Memory | None:
    """The memory as its revision `number` recorded it (None: no such revision)."""
    row = MemoryRevision.objects.filter(memory_id=memory_id, number=number).first()
    return revision_memory(row) if row is not None else None


def revision_memory(revision: MemoryRevision) -> Memory:
    """A recorded state as an unsaved Memory (`updated`: when it was recorded)."""
    return Memory(
        id=revision.memory_id, project=revision.project, kind=revision.kind,
        name=revision.name, description=revision.description, body=revision.body,
        tags=list(revision.tags or []), importance=revision.importance,
        agent_id=revision.agent_id, session_id=revision.session_id, source=revision.source,
        valid_from=revision.valid_from, invalid_at=revision.invalid_at,
        superseded_by_id=revision.superseded_by_id or None,
        created=revision.created or revision.recorded_at, updated=revision.recorded_at,
    )  # fmt: skip


def memory_as_of(
    *, memory_id: str, as_of: datetime | None, recorded_as_of: datetime | None
) -> Memory | None:
    """The memory as known at `recorded_as_of` (None: now), if valid at `as_of`
    (None: any time); None when it was unknown, deleted or not valid then."""
    if recorded_as_of is None:
        memory = Memory.objects.select_related("project").filter(pk=memory_id).first()
    else:
        revision = revision_at(memory_id=memory_id, recorded_at=recorded_as_of)
        memory = None if revision is None or revision.deleted else revision_memory(revision)
    if memory is None or (as_of is not None and not valid_at(memory_record(memory), as_of)):
        return None
    return memory


def ids_named(*, name: str, project: str | None) -> list[str]:
    """The memories that have ever been called `name` in `project` (slug), then the
    global ones, each group most recently recorded first: where a past read by
    name looks (`memory_named_as_of`)."""
    rows = MemoryRevision.objects.filter(name=name).order_by("-recorded_at", "-number")
    places = ([rows.filter(project__slug=project)] if project is not None else []) + [
        rows.filter(project__isnull=True)
    ]
    found: dict[str, None] = {}
    for place in places:
        found.update(dict.fromkeys(place.values_list("memory_id", flat=True)))
    return list(found)


def memory_named_as_of(
    *, name: str, project: str | None, as_of: datetime | None, recorded_as_of: datetime | None
) -> Memory | None:
    """The memory called `name` then (`memory_as_of` of each of `ids_named`, the
    first whose state then carries the name), or None. Without `as_of` it is the
    one active then, as a read by name now takes the active one."""
    for memory_id in ids_named(name=name, project=project):
        found = memory_as_of(memory_id=memory_id, as_of=as_of, recorded_as_of=recorded_as_of)
        if found is None or found.name != name:
            continue
        if as_of is not None or found.invalid_at is None:
            return found
    return None


@dataclass(frozen=True, slots=True)
class FieldChange:
    field: str
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class RevisionDiff:
    """What changed from `old` (None: nothing before) to `new`."""

    old: MemoryRevision | None
    new: MemoryRevision
    fields: tuple[FieldChange, ...]
    body: SafeString  # escaped HTML: removed words in <del>, added ones in <ins>


def _shown(revision: MemoryRevision | None, field: str) -> str:
    if revision is None:
        return ""
    if field == "project":
        return revision.project.slug if revision.project else "(global)"
    value = getattr(revision, field)
    if isinstance(value, datetime):  # as the revision list shows times, to the second
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "" if value is None else str(value)


def _words(text: str) -> list[str]:
    """`text` split at each space; no text is no words (not one empty word, which put
    a space before a first body's every line)."""
    return text.split(" ") if text else []


CONTEXT_LINES = 3  # unchanged lines shown on each side of a change
CONTEXT_WORDS = 25  # unchanged words shown on each side of a change within a line


def _skipped(count: int, what: str) -> str:
    return (
        f'<span class="diff-skip">… {count:,} unchanged {what}{"s" if count != 1 else ""} …</span>'
    )


def _kept(
    items: list[str], *, first: bool, last: bool, context: int
) -> tuple[list[str], int, list[str]]:
    """An unchanged run shown beside the changes around it: the items kept before the
    left-out middle, how many are left out, the items kept after (`context` on each
    side a change lies; none before the first change or after the last)."""
    head = 0 if first else context
    tail = 0 if last else context
    if len(items) <= head + tail + 1:
        return items, 0, []
    return items[:head], len(items) - head - tail, items[len(items) - tail :]


def body_diff(before: str, after: str) -> SafeString:
    """A word-level diff of two bodies, line by line, as escaped HTML. Long unchanged
    runs are left out around the changes (`CONTEXT_LINES` lines, `CONTEXT_WORDS` words
    within a changed line), each said by a marker: a one-word change in a 200,000
    character body printed the whole body. A first version (nothing before) is shown
    whole: all of it is the change. A character that would reverse or hide the text
    around it shows as `⟨U+202E⟩` (`sanitize.revealed`), so adding one is a change seen."""
    out: list[str] = []
    old_lines, new_lines = revealed(before).splitlines(), revealed(after).splitlines()
    codes = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False).get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(codes):
        if op == "equal":
            head, left, tail = _kept(
                old_lines[i1:i2], first=n == 0, last=n == len(codes) - 1, context=CONTEXT_LINES
            )
            out.extend(escape(line) for line in head)
            out.extend([_skipped(left, "line")] if left else [])
            out.extend(escape(line) for line in tail)
            continue
        out.append(_changed_lines(old_lines[i1:i2], new_lines[j1:j2]))
    return mark_safe("\n".join(out))  # noqa: S308 - every piece of text is escaped


def _changed_lines(old: list[str], new: list[str]) -> str:
    """Changed lines as one word-level diff (`body_diff`)."""
    old_words, new_words = _words("\n".join(old)), _words("\n".join(new))
    codes = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False).get_opcodes()
    parts: list[str] = []
    for m, (op, a1, a2, b1, b2) in enumerate(codes):
        if op == "equal":
            head, left, tail = _kept(
                old_words[a1:a2], first=m == 0, last=m == len(codes) - 1, context=CONTEXT_WORDS
            )
            if not left:
                parts.append(escape(" ".join(head)))
                continue
            parts.extend([escape(" ".join(head))] if head else [])
            parts.append(_skipped(left, "word"))
            parts.extend([escape(" ".join(tail))] if tail else [])
            continue
        if a2 > a1:
            parts.append(f"<del>{escape(' '.join(old_words[a1:a2]))}</del>")
        if b2 > b1:
            parts.append(f"<ins>{escape(' '.join(new_words[b1:b2]))}</ins>")
    return " ".join(parts)


def revision_diff(old: MemoryRevision | None, new: MemoryRevision) -> RevisionDiff:
    """Field by field, and the body by words (`body_diff`)."""
    changes = tuple(
        FieldChange(f, _shown(old, f), _shown(new, f))
        for f in DIFF_FIELDS
        if _shown(old, f) != _shown(new, f)
    )
    return RevisionDiff(old, new, changes, body_diff(old.body if old else "", new.body))
