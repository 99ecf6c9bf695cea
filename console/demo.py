"""Demo data the project wrote itself: four projects of a small software team.

The projects, memories and notes live in `demo_data/demo.jsonl`, in the import
format (console/records.py), and load through the importer like any other
file: outbox jobs, wikilink edges and favorites included. Two demo-only keys
say what the format cannot: `days_ago` on a memory (its age, counted from the
moment of loading) and `supersedes` on a memory that replaces another one
through `services.memory_supersede`, as a person would in the console.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from console import importing, indexing, reading, services
from console.models import Edge, Memory, Project

DATA = Path(__file__).resolve().parent / "demo_data" / "demo.jsonl"


@dataclass
class DemoReport:
    projects: int = 0
    memories: int = 0
    superseded: int = 0
    notes: int = 0
    favorites: int = 0
    edges: int = 0
    seconds: float = 0.0
    names: list[str] = field(default_factory=list)


def demo_records() -> list[dict[str, Any]]:
    """The records of the demo file, in file order, demo-only keys still in."""
    records = []
    for record in reading.read_records([DATA]):
        if record.data is None:
            raise ValueError(f"demo data {record.where}: {record.error}")
        records.append(record.data)
    return records


def demo_load(*, if_empty: bool = False) -> DemoReport | None:
    """Load the demo data and index it; None when `if_empty` and memories exist."""
    if if_empty and Memory.objects.exists():
        return None
    specs = demo_records()
    slugs = [s["slug"] for s in specs if s.get("type") == "project"]
    taken = list(Project.objects.filter(slug__in=slugs).values_list("slug", flat=True))
    if taken:
        raise ValueError(f"the demo is already loaded (project {taken[0]!r} exists)")
    started = time.perf_counter()
    now = timezone.now()
    imported = [_dated(s, now) for s in specs if "supersedes" not in s]
    replacements = [s for s in specs if "supersedes" in s]
    with transaction.atomic():
        records = (reading.Record(f"{DATA.name} record {n}", s) for n, s in enumerate(imported, 1))
        result = importing.import_records(records, index=False)
        problems = result.errors + result.warnings
        if problems:
            # The shipped file loads whole or not at all, never half a demo.
            raise ValueError(f"the demo data does not import cleanly: {problems[0]}")
        for spec in replacements:
            _supersede(spec)
    indexing.apply_pending()
    return DemoReport(
        projects=result.projects,
        memories=result.memories,
        superseded=len(replacements),
        notes=result.notes,
        favorites=sum(bool(s.get("favorite")) for s in imported),
        edges=Edge.objects.count(),
        seconds=time.perf_counter() - started,
    )


def _dated(spec: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The record for the importer: `days_ago` becomes its `created` timestamp."""
    spec = dict(spec)
    days = spec.pop("days_ago", None)
    if days is not None:
        spec["created"] = now - timedelta(days=days)
    return spec


def _supersede(spec: dict[str, Any]) -> None:
    """Replace the active memory `spec` names; the fields `spec` omits carry over."""
    old = Memory.objects.get(
        project__slug=spec.get("project"), name=spec["supersedes"], invalid_at__isnull=True
    )
    fields = {k: v for k, v in spec.items() if k not in ("type", "project", "supersedes")}
    services.memory_supersede(memory=old, **fields)
