"""Who may see what in the console: the rule, written once (reads only).

- Staff (the `is_staff` or `is_superuser` flag on an active login) see every
  project, open, confidential or sealed, and alone manage the settings and
  the agent tokens.
- Everyone else logged in sees the global items (no project) and the
  projects granted to them (`ProjectMember` rows, from the admin or
  `manage.py project grant`), a sealed project only when granted like any other.
- Global memories and the global digest reach every project's agents, so only
  staff change them (`can_change`): write, edit, supersede, archive, restore,
  delete or star one. Agents may not either (console/access.py).

An item outside a person's projects is answered like an unknown id (404), so
the console never confirms it exists. Isolation (open/confidential/sealed)
governs what agents' recalls mix; it does not widen or narrow a person's view.
Agents are scoped by their tokens instead (console/access.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser

from console import selectors
from console.models import Memory, Note, ProjectMember

Person = AbstractBaseUser | AnonymousUser

_CACHE = "_console_projects"  # per request, like Django's own `_perm_cache`


def is_staff(user: Person) -> bool:
    """Whether the login sees every project and may change settings and tokens."""
    return bool(
        user.is_authenticated
        and user.is_active
        and (getattr(user, "is_staff", False) or getattr(user, "is_superuser", False))
    )


def visible_projects(user: Person) -> tuple[str, ...] | None:
    """The project slugs the person sees, sorted; None means every project (staff).

    Read once per user object (a request's `request.user` is a fresh one),
    so a grant made by another request shows on the person's next page.
    """
    if is_staff(user):
        return None
    if not user.is_authenticated or not user.is_active:
        return ()
    cached: tuple[str, ...] | None = getattr(user, _CACHE, None)
    if cached is None:
        rows = ProjectMember.objects.filter(user_id=user.pk).order_by("project__slug")
        cached = tuple(rows.values_list("project__slug", flat=True))
        setattr(user, _CACHE, cached)
    return cached


def can_see(user: Person, project: str | None) -> bool:
    """Whether the person sees an item of `project` (None: a global item, seen by all)."""
    if not user.is_authenticated:
        return False
    if project is None:
        return True
    visible = visible_projects(user)
    return visible is None or project in visible


def can_change(user: Person, project: str | None) -> bool:
    """Whether the person may change an item of `project` (None: a global memory or
    the global digest, which every project's agents read: staff alone)."""
    return can_see(user, project) and (project is not None or is_staff(user))


GLOBAL_CHANGES = (
    "Global memories and the global digest reach every project's agents, so staff "
    "curate them: ask a staff member, or write it in one of your projects."
)


def project_of(item: Memory | Note) -> str | None:
    """The slug of the item's project (None: a global memory or an inbox note)."""
    return None if item.project is None else item.project.slug


def project_slugs(user: Person) -> list[str]:
    """The projects a person may choose in a form (filters, new memory, inspector)."""
    visible = visible_projects(user)
    return selectors.project_slugs() if visible is None else list(visible)


def search_scope(user: Person, chosen: Sequence[str] | None) -> list[str] | None:
    """The projects a search runs over: the chosen ones the person sees, else all of
    theirs (None: every project, for staff); global items are always included."""
    visible = visible_projects(user)
    if chosen:
        picked = [p for p in chosen if visible is None or p in visible]
        return picked  # none of them visible: global items only
    return None if visible is None else list(visible)
