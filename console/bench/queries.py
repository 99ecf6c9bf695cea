"""The evaluation queries (`../shared/eval` format): one per line, with their gold ids."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Query:
    id: str
    project: str
    text: str
    gold: set[str]
    category: str | None


def read_queries(path: Path, limit: int | None = None) -> list[Query]:
    """Queries with a non-empty gold set, in file order."""
    out: list[Query] = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = json.loads(line)
            if not row.get("gold"):
                continue
            category = row.get("category")
            out.append(
                Query(
                    id=str(row["id"]),
                    project=str(row["project"]),
                    text=str(row["query"]),
                    gold=set(map(str, row["gold"])),
                    category=None if category is None else str(category),
                )
            )
            if limit is not None and len(out) >= limit:
                break
    return out
