"""Where the engine's knobs come from: settings, the environment, the override rows.

The one configuration path (ARCHITECTURE section 5), using the engine's own
resolver (`recall.config.resolve`): for each section ("recall", "search",
"briefing", "prompt", "dedup") the built-in defaults < `settings.RECALL[
"SEARCH"]` (and so on) < `RECALL_SEARCH_*` environment variables, strictly
(a bad value is a ConfigError naming the knob, the value and its source,
reported by `manage.py check` at start-up), then the section's override row
(`Setting` key `search_config`, ...) decoded over that base at each call,
failure-soft. The base is computed once per process (`wiring.reset()` drops
it with the other built objects).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from console.models import Setting
from console.prepared import Prepared
from recall.config import SECTIONS, Configs, Layer, Problem, resolve
from recall.errors import ConfigError

ROW_SUFFIX = "_config"
LABELS = {
    "briefing": "Briefing",
    "search": "Search",
    "recall": "Agent recall",
    "prompt": "Prompt recall",
    "dedup": "Duplicate hints",
}


def row_key(section: str) -> str:
    """The override row's `Setting.key` of a section ("search" -> "search_config")."""
    return f"{section}{ROW_SUFFIX}"


def section_of_row(key: str) -> str | None:
    """The section an override row key belongs to, or None."""
    section = key.removesuffix(ROW_SUFFIX)
    return section if key.endswith(ROW_SUFFIX) and section in SECTIONS else None


def layers(section: str) -> list[Layer]:
    """The settings and environment layers of one section, in order."""
    name = section.upper()
    return [
        Layer(f"settings.RECALL[{name!r}]", settings.RECALL.get(name) or {}),
        Layer("environment variable {key}", dict(os.environ), prefix=f"RECALL_{name}_"),
    ]


def problems() -> list[Problem]:
    """Every bad settings or environment value, in every section."""
    found: list[Problem] = []
    for section, cls in SECTIONS.items():
        try:
            resolve(cls(), layers(section), strict=True)
        except ConfigError as exc:
            found += [p for p in exc.problems if isinstance(p, Problem)]
    return found


def base() -> Configs:
    """Defaults < settings < environment for every section (ConfigError if any is bad)."""
    bad = problems()
    if bad:
        raise ConfigError("; ".join(str(p) for p in bad), tuple(bad))
    values = {
        section: resolve(cls(), layers(section), strict=True)[0]
        for section, cls in SECTIONS.items()
    }
    return Configs(**values)


_ROW = Prepared(
    lambda _, key: Setting.objects.filter(key=key)[:1], model=Setting, columns=("value",)
)


def override_row(section: str) -> Mapping[str, Any] | str | None:
    """The section's override row as stored (read on every call: compiled once)."""
    rows = _ROW.rows("value", row_key(section))
    return rows[0][0] if rows else None


def override(section: str) -> dict[str, Any]:
    """The section's override row as a dict ({} when absent or unreadable)."""
    row = override_row(section)
    return dict(row) if isinstance(row, Mapping) else {}
