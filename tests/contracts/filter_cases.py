"""Recall's attribute filters (tags ... until) as cases every plane's contract runs.

`ATTRIBUTES` are the per-row values of a small grid (tags with a space and a
quote, an agent with a quote, creation times on a filter's bounds, one row
with no creation time, notes beside memories); `FILTERS` the filters checked
against `Filter.admits`; `NARROW` pairs a filter with the attributes of rows
it refuses and of rows it admits, for the "before the limit" cases.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from recall.types import Filter

T0 = datetime(2024, 1, 1, tzinfo=UTC)
DAY = timedelta(days=1)
TAGS = [(), ("red",), ("red", "blue"), ("blue", "red team"), ("o'clock",), ("green",)]
AGENTS = ["", "ag-1", "o'brien"]
SESSIONS = ["", "s-1", "s-2", "s-3"]
IMPORTANCES = [0.1, 0.5, 0.7, 0.69999999, 0.9, 1.0]  # 0.69999999: below 0.7 in every plane


def attributes(n: int) -> dict[str, Any]:
    """The filtered attributes of grid row `n` (item, tags ... created)."""
    return {
        "item": "note" if n % 7 == 3 else "memory",
        "tags": TAGS[n % len(TAGS)],
        "agent_id": AGENTS[n % len(AGENTS)],
        "session_id": SESSIONS[n % len(SESSIONS)],
        "importance": IMPORTANCES[n % len(IMPORTANCES)],
        "created": None if n % 11 == 5 else T0 + (n % 6) * DAY,
    }


GRID_SIZE = 42

FILTERS = [
    Filter(tags=("red",)),
    Filter(tags=("red", "blue")),
    Filter(tags=("red team",)),
    Filter(tags=("o'clock",)),
    Filter(any_tags=("blue", "green")),
    Filter(tags=("red",), any_tags=("blue", "green")),
    Filter(agent_id="ag-1"),
    Filter(agent_id="o'brien"),
    Filter(session_id="s-2"),
    Filter(min_importance=0.7),
    Filter(min_importance=0.0),
    Filter(min_importance=1.0),
    Filter(since=T0 + 3 * DAY),
    Filter(until=T0 + 3 * DAY),
    Filter(since=T0 + 2 * DAY, until=T0 + 3 * DAY),
    Filter(since=T0 + 2 * DAY + timedelta(microseconds=1)),
    Filter(until=T0 + 2 * DAY - timedelta(microseconds=1)),
    Filter(tags=("red",), agent_id="ag-1", min_importance=0.5, since=T0 + DAY),
    Filter(projects=("alpha",), include_global=False, kinds=("fact",), tags=("blue",)),
    Filter(active_only=False, items=("note",), tags=("red",)),
]

# (label, attributes of the rows the filter refuses, of the rows it admits, filter)
NARROW: list[tuple[str, dict[str, Any], dict[str, Any], Filter]] = [
    ("tags", {"tags": ("red",)}, {"tags": ("red", "blue")}, Filter(tags=("red", "blue"))),
    ("any_tags", {"tags": ("red",)}, {"tags": ("blue",)}, Filter(any_tags=("blue", "green"))),
    ("agent_id", {"agent_id": "other"}, {"agent_id": "ag-1"}, Filter(agent_id="ag-1")),
    ("session_id", {"session_id": "s-1"}, {"session_id": "s-2"}, Filter(session_id="s-2")),
    ("min_importance", {"importance": 0.4}, {"importance": 0.8}, Filter(min_importance=0.5)),
    ("since", {"created": T0}, {"created": T0 + 2 * DAY}, Filter(since=T0 + DAY)),
    ("until", {"created": T0 + 2 * DAY}, {"created": T0}, Filter(until=T0 + DAY)),
]
