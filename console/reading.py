"""Records from files: JSON lines, and markdown files or folders (see console/records.py).

A line or file that cannot be read becomes a `Record` without data but with
the reason, so the importer reports it with its place and carries on. JSON
lines keep file order; markdown files are sorted so projects come first and
memories in time order (session turns in order), then notes.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from console.records import TYPES, RecordError, parse_markdown


@dataclass
class Record:
    where: str  # "file.jsonl:12" or "notes/x.md"
    data: dict[str, Any] | None
    error: str = ""


def read_records(paths: Iterable[Path]) -> Iterator[Record]:
    """Records of JSON-lines files and markdown files or folders, in order."""
    for path in paths:
        if path.is_dir():
            yield from _read_markdown(sorted(path.rglob("*.md")), root=path)
        elif path.suffix.lower() in (".md", ".markdown"):
            yield from _read_markdown([path], root=path.parent)
        else:
            yield from _read_jsonl(path)


def empty_folders(paths: Iterable[Path]) -> list[str]:
    """Why each folder among `paths` would import nothing: a folder is read for its
    markdown files alone (one of JSON-lines files imported 0 and exited 0)."""
    said = []
    for path in paths:
        if not path.is_dir() or any(path.rglob("*.md")):
            continue
        reason = (
            f"{path} holds no markdown files (*.md, in it or its subfolders): "
            "a folder is read for those alone"
        )
        jsonl = sum(1 for _ in path.rglob("*.jsonl"))
        if jsonl:
            them = "1 .jsonl file: pass it as a file"
            if jsonl > 1:
                them = f"{jsonl} .jsonl files: pass them as files"
            reason += f"; it holds {them}, e.g. {path / '*.jsonl'}"
        said.append(reason)
    return said


def count_records(paths: Iterable[Path]) -> int:
    total = 0
    for path in paths:
        if path.is_dir():
            total += sum(1 for _ in path.rglob("*.md"))
        elif path.suffix.lower() in (".md", ".markdown"):
            total += 1
        else:
            with path.open("rb") as fh:
                total += sum(1 for line in fh if line.strip())
    return total


# A byte that is not UTF-8, read with errors="surrogateescape": U+DC80..U+DCFF.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _not_utf8(line: str) -> str:
    """The reason a line read with errors="surrogateescape" is refused, or ''."""
    bad = _ESCAPED_BYTE.search(line)
    if bad is None:
        return ""
    return f"not UTF-8 (byte 0x{ord(bad.group()) - 0xDC00:02x} at column {bad.start() + 1})"


def _read_jsonl(path: Path) -> Iterator[Record]:
    # A bad byte is refused with its line (a strict decode stopped the whole run,
    # naming no file): lines split as before, each bad byte kept as a surrogate.
    with path.open("rb") as raw:
        fh = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="")
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path.name}:{number}"
            if reason := _not_utf8(line):
                yield Record(where, None, reason)
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as exc:
                yield Record(where, None, f"not JSON ({exc.msg} at column {exc.colno})")
                continue
            if not isinstance(data, dict):
                yield Record(where, None, "not a JSON object")
                continue
            yield Record(where, data)


def _read_markdown(paths: list[Path], *, root: Path) -> Iterator[Record]:
    """Projects first, then memories in time order (session turns in order), notes."""
    records: list[tuple[tuple[Any, ...], Record]] = []
    for path in paths:
        where = str(path.relative_to(root)) if path != root else path.name
        raw = path.read_bytes()
        try:
            data = parse_markdown(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            reason = f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start})"
            records.append(((9, where), Record(where, None, reason)))
            continue
        except RecordError as exc:
            records.append(((9, where), Record(where, None, str(exc))))
            continue
        rank = TYPES.index(data["type"]) if data.get("type") in TYPES else 1
        when = str(data.get("created") or data.get("created_at") or "")
        order = data.get("session_order")
        order = order if isinstance(order, int) else 0
        session = str(data.get("session_id") or "")
        records.append(((rank, when, session, order, where), Record(where, data)))
    for _, record in sorted(records, key=lambda pair: pair[0]):
        yield record
