"""The filter stage: who may see what, as a `Filter` every channel applies inside its query.

- Recall: the bound project plus global items, unless the project is sealed
  (nothing in or out); no project means global only.
- Search: every project (None) or the chosen ones, plus global items unless
  the caller is confined to a sealed project (`include_global=False`).
"""

from __future__ import annotations

from dataclasses import replace

from recall.errors import QueryError
from recall.ports import MemoryStore
from recall.requests import ENTITIES, SCOPES
from recall.types import ISOLATION_SEALED, MEMORY, NOTE, Filter


def scope_of(scope: str, entities: tuple[str, ...] | None) -> str:
    """The scope a Recall asks for: fabriq's `entities` list, else `scope` (its alias).

    QueryError for an unknown entity, an empty list, or a `scope` other than
    the default "all" that says something else than `entities`.
    """
    if entities is None:
        return scope
    unknown = [e for e in entities if e not in ENTITIES]
    if unknown or not entities:
        given = ", ".join(map(repr, unknown)) or "nothing"
        raise QueryError(f"entities must list memories, notes or both, not {given}")
    wanted = "all" if set(entities) == set(ENTITIES) else entities[0]
    if scope not in ("all", wanted):
        raise QueryError(f"scope {scope!r} and entities {list(entities)} disagree; give one")
    return wanted


def recall_filter(
    store: MemoryStore,
    *,
    project: str | None,
    scope: str = "all",
    kind: str | None = None,
    kinds: tuple[str, ...] | None = None,
    narrow: Filter | None = None,
) -> Filter:
    """Recall's scope: the bound project plus global (none if sealed); None = global only.

    `kind` is a one-item `kinds`; `narrow` carries the attribute filters
    (tags ... until) to add.
    """
    if scope not in SCOPES:
        raise QueryError(f"scope must be one of {', '.join(SCOPES)}, not {scope!r}")
    items = {"all": None, "memories": (MEMORY,), "notes": (NOTE,)}[scope]
    if kind is not None:
        kinds = (kind,)
    if kinds is not None:  # kinds are memories' own: with scope "notes" nothing is admitted
        items = (MEMORY,) if scope != "notes" else (NOTE,)
    base = narrow or Filter()
    if project is None:
        return replace(base, projects=(), include_global=True, items=items, kinds=kinds)
    sealed = store.isolation(project) == ISOLATION_SEALED
    return replace(base, projects=(project,), include_global=not sealed, items=items, kinds=kinds)


def search_filter(
    *,
    projects: tuple[str, ...] | None,
    kinds: tuple[str, ...] | None = None,
    items: tuple[str, ...] | None = None,
    include_inactive: bool = False,
    include_global: bool = True,
) -> Filter:
    """Search's scope: every project (None) or the chosen ones, plus global unless told not."""
    return Filter(
        projects=projects,
        include_global=include_global,
        active_only=not include_inactive,
        items=items,
        kinds=kinds,
    )
