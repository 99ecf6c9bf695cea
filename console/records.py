"""The record shape shared by import and export, and its two file formats.

Two formats, one record shape (a dict per item, with a `type` of `project`,
`memory`, `note` or `edge`; a record without `type` is a memory):

- JSON lines: one record per line. Our export writes projects (by slug), then
  memories, notes and explicit edges (each by id), keys in a fixed order,
  timestamps ISO-8601 UTC. Lines in the evaluation format (`id`, `project`,
  `name`, `description`, `created_at`, `metadata`) import too.
- Markdown: one file per item, YAML front matter plus the body, in a folder
  per project (`_global/` for global memories and inbox notes, `_notes/` for
  notes, `_project.md` for the project itself). Explicit edges sit in their
  source memory's front matter.

Reading files into records is `console/reading.py`, records into the database
`console/importing.py`, the database into files `console/exporting.py`.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

import yaml

TYPES = ("project", "memory", "note", "edge", "revision", "digest")
FRONT_MATTER = re.compile(r"\A---\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)", re.DOTALL | re.MULTILINE)

MEMORY_KEYS = (
    "type", "id", "project", "kind", "name", "description", "body", "tags", "importance",
    "agent_id", "session_id", "session_order", "source", "valid_from", "occurred_at",
    "invalid_at", "superseded_by", "favorite", "external_id", "metadata", "created", "updated",
    "access_count", "last_accessed_at", "expires_at", "feedback_used", "feedback_helpful",
    "feedback_harmful",
)  # fmt: skip
NOTE_KEYS = (
    "type", "id", "project", "title", "slug", "description", "body", "tags", "source_url",
    "favorite", "created", "updated",
)  # fmt: skip
# A memory's recorded states (transaction time, console/services/revisions.py):
# JSON lines only, after the edges, by memory id then number.
REVISION_KEYS = (
    "type", "memory", "number", "op", "recorded_at", "project", "kind", "name", "description",
    "body", "tags", "importance", "valid_from", "invalid_at", "superseded_by", "source",
    "agent_id", "session_id", "created", "deleted",
)  # fmt: skip
DIGEST_KEYS = ("type", "project", "sentences", "edited_by", "edited_at")
PROJECT_KEYS = (
    "type", "slug", "name", "description", "parent", "isolation", "favorite", "retired_at",
    "created",
)  # fmt: skip


class RecordError(ValueError):
    """A record that cannot be imported; the message says why."""


# --- timestamps ---------------------------------------------------------------


def iso(value: datetime | None) -> str | None:
    """ISO-8601 in UTC with a `Z`; microseconds only when there are some."""
    if value is None:
        return None
    value = value.astimezone(UTC)
    spec = "microseconds" if value.microsecond else "seconds"
    return value.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def parse_time(value: Any, *, key: str) -> datetime | None:
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, date):
        parsed = datetime(value.year, value.month, value.day)
    else:
        try:
            parsed = datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise RecordError(f"{key}: {value!r} is not an ISO-8601 timestamp") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


# --- front matter -------------------------------------------------------------


class _FrontMatterDumper(yaml.SafeDumper):
    """Safe YAML whose strings read back exactly.

    A string with a line break or a character YAML treats as one (NEL,
    U+2028, U+2029) or cannot print goes double-quoted, with escapes: plain
    or single-quoted YAML folds its line breaks and turns a NEL into a space.
    """


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = None if value.isprintable() else '"'  # NEL, U+2028/9 and newlines are not printable
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_FrontMatterDumper.add_representer(str, _represent_str)


def markdown_text(record: dict[str, Any]) -> str:
    """One markdown file: every key but the body as YAML front matter, then the body."""
    front = {k: v for k, v in record.items() if k != "body"}
    matter = yaml.dump(
        front, Dumper=_FrontMatterDumper, sort_keys=False, allow_unicode=True, width=1 << 16
    )
    return f"---\n{matter}---\n\n{record.get('body', '')}\n"


def parse_markdown(text: str) -> dict[str, Any]:
    """Front matter and body of one markdown file (body exactly as exported)."""
    match = FRONT_MATTER.match(text)
    if not match:
        if text.split("\n", 1)[0].rstrip("\r") == "---":  # opened: say so, not "no front matter"
            raise RecordError("front matter opened at line 1 is never closed by a '---' line")
        raise RecordError("no YAML front matter (the file must start with a '---' line)")
    try:
        data = yaml.safe_load(match.group(1)) or {}
    except yaml.YAMLError as exc:
        raise RecordError(f"front matter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise RecordError("front matter must be a mapping of keys to values")
    # Our export writes "\n" + body + "\n" after the front matter: strip exactly
    # those, so a body's own blank lines and carriage returns survive.
    newline = "\r\n" if match.group(0).endswith("\r\n") else "\n"
    body = text[match.end() :]
    body = body.removeprefix(newline)
    body = body.removesuffix(newline)
    if data.get("type", "memory") != "project":
        data["body"] = body
    elif body.strip():
        data.setdefault("description", body.strip())
    return data
